"""Record values ↔ fields: the compiled codec of every known record version, and the metadata frame around them.

A data record's value is ``frameVersion 1, apiKey, version`` (unsigned varints) + the body; a control record's
value is the bare body at version 0 (``ControlRecordUtils``). Every (apiKey, version) of ``records`` is compiled once,
at import (some 40 ms).
"""

from __future__ import annotations

import struct
from typing import Any

from kafka_zk_audit.snapshot.kraft.codegen import UNKNOWN_TAGS, MessageCodec, compile_message
from kafka_zk_audit.snapshot.kraft.records import CONTROL_RECORDS, CONTROL_TYPE_IDS, METADATA_RECORDS
from kafka_zk_audit.snapshot.kraft.wire import DecodeError, read_uvarint, write_uvarint

__all__ = ["CONTROL_CODECS", "CONTROL_TYPE_IDS", "DECODE_FAILURES", "FAST_DECODERS", "METADATA_CODECS", "UNKNOWN_TAGS",
           "DecodeError", "decode_control_value", "decode_metadata_value", "encode_control_value",
           "encode_metadata_value", "record_name"]

FRAME_VERSION = 1
CONTROL_VALUE_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION
DECODE_FAILURES = (DecodeError, IndexError, struct.error, UnicodeDecodeError, ValueError)

METADATA_CODECS: dict[tuple[int, int], MessageCodec] = {
    (api_key, version): compile_message(message, version)
    for api_key, message in METADATA_RECORDS.items() for version in message.versions
}
CONTROL_CODECS: dict[int, MessageCodec] = {
    type_id: compile_message(message, CONTROL_VALUE_VERSION) for type_id, message in CONTROL_RECORDS.items()
}
_METADATA_DECODERS = {key: codec.decode for key, codec in METADATA_CODECS.items()}
_METADATA_NAMES = {api_key: message.name for api_key, message in METADATA_RECORDS.items()}
# The hot path's table: (apiKey << 7 | version) for the one-byte apiKeys and versions → (decode, record name).
FAST_DECODERS = {api_key << 7 | version: (codec.decode, codec.message.name)
                 for (api_key, version), codec in METADATA_CODECS.items() if api_key < 0x80 and version < 0x80}


def record_name(api_key: int | None, control: bool = False) -> str:
    """``"PartitionChangeRecord"``, ``"LeaderChangeMessage"``; ``"apiKey 29"`` / ``"control type 9"`` if unknown."""
    if control:
        known = CONTROL_RECORDS.get(api_key) if api_key is not None else None
        return known.name if known else f"control type {api_key}"
    return _METADATA_NAMES.get(api_key, f"apiKey {api_key}") if api_key is not None else "unknown record"


def decode_metadata_value(value: bytes) -> tuple[int | None, int | None, dict[str, Any] | str]:
    """``(apiKey, version, fields)``, or ``(apiKey, version, reason)`` when the value cannot be decoded.

    Never raises: an unknown apiKey or version, a bad frame, or a body that does not match its schema (including
    bytes left over, as Kafka's "Found N byte(s) of garbage") all come back as a reason.
    """
    api_key = version = None
    try:
        frame, pos = read_uvarint(value, 0)
        if frame != FRAME_VERSION:
            return None, None, f"frame version {frame}, expected {FRAME_VERSION}"
        api_key, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except DECODE_FAILURES:
        return api_key, version, f"the value ({len(value)} bytes) ends inside its frame"
    decode = _METADATA_DECODERS.get((api_key, version))
    if decode is None:
        message = METADATA_RECORDS.get(api_key)
        if message is None:
            return api_key, version, f"apiKey {api_key} is not a metadata record of a released Kafka (3.0–4.2)"
        return api_key, version, (f"{message.name} version {version} is unknown (a released Kafka knows versions "
                                  f"{message.valid_versions})")
    try:
        fields, end = decode(value, pos)
    except DECODE_FAILURES as exc:
        return api_key, version, _reason(api_key, version, exc)
    if end != len(value):
        return api_key, version, _leftover(api_key, version, value, end)
    return api_key, version, fields


def decode_control_value(control_type: int, value: bytes) -> dict[str, Any] | str:
    """The fields of a control record's value, or why they cannot be read."""
    codec = CONTROL_CODECS.get(control_type)
    if codec is None:
        return f"control record type {control_type} is unknown (Kafka knows 0–6)"
    try:
        fields, end = codec.decode(value, 0)
    except DECODE_FAILURES as exc:
        return f"{codec.message.name} v0: {_what(exc)}"
    if end != len(value):
        return f"{codec.message.name} v0: {len(value) - end} byte(s) left over after the body" if end < len(value) \
            else f"{codec.message.name} v0: the body runs {end - len(value)} byte(s) past the value"
    return fields


def encode_metadata_value(api_key: int, version: int, fields: dict[str, Any]) -> bytes:
    """The value of a data record: frame + body. Fields left out take their default."""
    codec = METADATA_CODECS.get((api_key, version))
    if codec is None:
        raise ValueError(f"no codec for apiKey {api_key} version {version}")
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, api_key)
    write_uvarint(out, version)
    codec.encode(fields, out)
    return bytes(out)


def encode_control_value(control_type: int, fields: dict[str, Any]) -> bytes:
    out = bytearray()
    CONTROL_CODECS[control_type].encode(fields, out)
    return bytes(out)


def _what(exc: Exception) -> str:
    if isinstance(exc, (IndexError, struct.error)):
        return "the body ends inside a field"
    if isinstance(exc, UnicodeDecodeError):
        return "a string is not valid UTF-8"
    return str(exc)


# versions whose number a pre-release build used for another layout (SOURCES.md, "Caveats for a decoder")
PRE_RELEASE_LAYOUTS = {
    (3, 1): "trunk builds of Oct/Nov 2023 wrote a pre-release PartitionRecord v1, with ELR in tags 1-2 and no "
            "Directories, that no released Kafka writes",
}


def _reason(api_key: int, version: int, exc: Exception) -> str:
    note = PRE_RELEASE_LAYOUTS.get((api_key, version))
    return f"{record_name(api_key)} v{version}: {_what(exc)}" + (f"; {note}" if note else "")


def _leftover(api_key: int, version: int, value: bytes, end: int) -> str:
    note = PRE_RELEASE_LAYOUTS.get((api_key, version))
    suffix = f"; {note}" if note else ""
    if end > len(value):
        return f"{record_name(api_key)} v{version}: the body runs {end - len(value)} byte(s) past the value{suffix}"
    return (f"{record_name(api_key)} v{version}: {len(value) - end} byte(s) left over after the body "
            f"(Kafka: \"Found N byte(s) of garbage\"){suffix}")
