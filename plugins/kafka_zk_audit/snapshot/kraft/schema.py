"""The vocabulary of Kafka's message-definition JSON, as small frozen Python values.

A ``Message`` is what one of Kafka's ``*Record.json`` files declares: a name, the versions it may be written at and
its fields. A ``Field`` keeps the JSON's own spelling (``versions`` "1+", ``taggedVersions``, ``tag``, ``default``
as the JSON string), so ``records`` reads like the JSON and a test can compare the two field by field.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

NO_VERSIONS = "none"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString()
PRIMITIVES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint16", "float64", "uuid", "string", "bytes"})
INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint16"})


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message or struct, as declared in Kafka's JSON."""

    name: str
    type: str  # "int32", "[]int32", "string", "[]BrokerEndpoint", "KRaftVersionFeature", ...
    versions: str = "0+"
    nullable: str = NO_VERSIONS  # "nullableVersions"
    tagged: str = NO_VERSIONS  # "taggedVersions"
    tag: int | None = None
    default: str | None = None  # the JSON "default", a string as Kafka writes it
    fields: tuple[Field, ...] = ()  # an inline struct's fields (empty for primitives and commonStructs)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The type of one element for an array, else the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def present_at(self, version: int) -> bool:
        return in_versions(version, self.versions)

    def nullable_at(self, version: int) -> bool:
        return in_versions(version, self.nullable)

    def tagged_at(self, version: int) -> bool:
        return in_versions(version, self.tagged)


@dataclass(frozen=True, slots=True)
class Message:
    """One record schema: a metadata record (``api_key``) or a control record (``control_type``)."""

    name: str
    valid_versions: str
    fields: tuple[Field, ...]
    api_key: int | None = None
    control_type: int | None = None
    common_structs: tuple[Field, ...] = ()  # each a Field whose ``name`` is the struct's type name
    flexible_versions: str = "0+"

    @property
    def versions(self) -> range:
        low, high = version_bounds(self.valid_versions)
        return range(low, high + 1)


def version_bounds(spec: str) -> tuple[int, int]:
    """``"0+"`` → (0, 32767), ``"1-3"`` → (1, 3), ``"2"`` → (2, 2), ``"none"`` → (1, 0), an empty range."""
    if spec == NO_VERSIONS:
        return 1, 0
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def in_versions(version: int, spec: str) -> bool:
    low, high = version_bounds(spec)
    return low <= version <= high


def uuid_to_str(raw: bytes) -> str:
    """A 16-byte uuid as Kafka prints it (``Uuid.toString()``: URL-safe base64 without padding)."""
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


def uuid_from_str(text: str) -> bytes:
    """The 16 bytes of a uuid written as ``Uuid.toString()`` does."""
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka uuid (22 URL-safe base64 characters)")
    return raw


def default_value(field: Field, structs: dict[str, Field]) -> Any:
    """The value a field takes when absent: its JSON default, else Kafka's default for the type."""
    if field.default == "null":
        return None
    if field.is_array:
        return []
    kind = field.type
    if kind in INTEGERS:
        text = field.default or "0"
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    if kind == "bool":
        return (field.default or "false") == "true"
    if kind == "float64":
        return float(field.default or 0)
    if kind == "string":
        return field.default or ""
    if kind == "bytes":
        return b""
    if kind == "uuid":
        return ZERO_UUID
    struct_fields = field.fields or structs[kind].fields
    return {inner.name: default_value(inner, structs) for inner in struct_fields}
