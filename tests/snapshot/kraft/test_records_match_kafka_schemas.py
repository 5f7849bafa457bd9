"""``records`` is Kafka's message JSON transcribed: every file of ``../shared/kafka-metadata/schemas`` is parsed here
and compared with the declarations, field by field and version by version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_zk_audit.snapshot.kraft.records import CONTROL_RECORDS, CONTROL_TYPE_IDS, METADATA_RECORDS
from kafka_zk_audit.snapshot.kraft.schema import Field, Message

from .real_kraft import SCHEMAS

pytestmark = pytest.mark.skipif(not SCHEMAS.is_dir(), reason=f"{SCHEMAS} is absent (it sits beside the repo clone)")

# FORMAT.md §6 / ControlRecordType.java: the control record type ids
CONTROL_IDS = {"LeaderChangeMessage": 2, "SnapshotHeaderRecord": 3, "SnapshotFooterRecord": 4,
               "KRaftVersionRecord": 5, "VotersRecord": 6}


def without_comments(text: str) -> str:
    """Kafka's JSON with its ``//`` comments removed (a ``//`` inside a string is kept)."""
    out, index, in_string = [], 0, False
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\":
                out.append(text[index + 1])
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", index):
            while index < len(text) and text[index] != "\n":
                index += 1
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out)


def load(path: Path) -> dict[str, Any]:
    return json.loads(without_comments(path.read_text()))


def schema_files(folder: str) -> list[Path]:
    return sorted((SCHEMAS / folder).glob("*.json")) if SCHEMAS.is_dir() else []


def versions_of(spec: str) -> set[int]:
    """The JSON's version spec, read here on its own: "0+", "1-3", "2", "none"."""
    if spec == "none":
        return set()
    if spec.endswith("+"):
        return set(range(int(spec[:-1]), 64))
    low, _, high = spec.partition("-")
    return set(range(int(low), int(high or low) + 1))


def as_declared(field: dict[str, Any]) -> dict[str, Any]:
    """A JSON field in the shape to compare: what has a wire effect, spelled as the JSON spells it."""
    default = field.get("default")
    return {
        "name": field["name"], "type": field["type"], "versions": field.get("versions", "none"),
        "nullable": field.get("nullableVersions", "none"), "tagged": field.get("taggedVersions", "none"),
        "tag": int(field["tag"]) if "tag" in field else None,
        "default": str(default).lower() if isinstance(default, bool) else default,
        "fields": [as_declared(inner) for inner in field.get("fields", [])],
    }


def ours(field: Field) -> dict[str, Any]:
    return {"name": field.name, "type": field.type, "versions": field.versions, "nullable": field.nullable,
            "tagged": field.tagged, "tag": field.tag, "default": field.default,
            "fields": [ours(inner) for inner in field.fields]}


def layout(fields: list[dict[str, Any]], version: int, structs: dict[str, list[dict[str, Any]]]) -> list:
    """What is on the wire at ``version``, from the JSON: fixed fields in order, then tagged ones by tag."""
    fixed, tagged = [], []
    for field in fields:
        if version not in versions_of(field.get("versions", "none")):
            continue
        element = field["type"].removeprefix("[]")
        inner = field.get("fields") or structs.get(element)
        entry = (field["name"], field["type"], version in versions_of(field.get("nullableVersions", "none")),
                 layout(inner, version, structs) if inner else None)
        if version in versions_of(field.get("taggedVersions", "none")):
            tagged.append((int(field["tag"]), *entry))
        else:
            fixed.append(entry)
    return [fixed, sorted(tagged)]


def our_layout(fields: tuple[Field, ...], version: int, structs: dict[str, Field]) -> list:
    fixed, tagged = [], []
    for field in fields:
        if not field.present_at(version):
            continue
        inner = field.fields or (structs[field.element_type].fields if field.element_type in structs else ())
        entry = (field.name, field.type, field.nullable_at(version), our_layout(inner, version, structs) if inner
                 else None)
        if field.tagged_at(version):
            tagged.append((field.tag, *entry))
        else:
            fixed.append(entry)
    return [fixed, sorted(tagged)]


def compare(message: Message, schema: dict[str, Any]) -> None:
    assert message.name == schema["name"]
    assert message.valid_versions == schema["validVersions"]
    assert message.flexible_versions == schema["flexibleVersions"]
    assert [ours(field) for field in message.fields] == [as_declared(field) for field in schema["fields"]]
    common = [as_declared({**struct, "type": struct["name"]}) for struct in schema.get("commonStructs", [])]
    assert [ours(struct) for struct in message.common_structs] == common
    json_structs = {struct["name"]: struct["fields"] for struct in schema.get("commonStructs", [])}
    our_structs = {struct.name: struct for struct in message.common_structs}
    assert list(message.versions) == sorted(versions_of(schema["validVersions"]))
    for version in message.versions:
        assert our_layout(message.fields, version, our_structs) == layout(schema["fields"], version, json_structs), (
            f"{message.name} v{version}")


@pytest.mark.parametrize("path", schema_files("metadata") + schema_files("removed"), ids=lambda path: path.name)
def test_each_metadata_record_matches_its_kafka_schema(path: Path):
    schema = load(path)
    assert schema["type"] == "metadata"
    compare(METADATA_RECORDS[schema["apiKey"]], schema)


@pytest.mark.parametrize("path", schema_files("control"), ids=lambda path: path.name)
def test_each_control_record_matches_its_kafka_schema(path: Path):
    schema = load(path)
    type_id = CONTROL_IDS[schema["name"]]
    assert CONTROL_TYPE_IDS[schema["name"]] == type_id
    compare(CONTROL_RECORDS[type_id], schema)


def test_every_released_schema_is_declared_and_nothing_else():
    released = {load(path)["apiKey"] for path in schema_files("metadata") + schema_files("removed")}
    assert released == set(range(29)) - {13}  # SOURCES.md: 13 was never used
    assert set(METADATA_RECORDS) == released
    assert set(CONTROL_RECORDS) == set(CONTROL_IDS.values())


@pytest.mark.parametrize("path", schema_files("unreleased"), ids=lambda path: path.name)
def test_the_unreleased_api_keys_are_left_out(path: Path):
    schema = load(path)
    assert schema["apiKey"] not in METADATA_RECORDS  # 29 is claimed by two drafts (SOURCES.md)


def test_a_difference_is_caught():
    """The comparison can fail: a field with another tag or default, or one version off, is told apart."""
    schema = load(SCHEMAS / "metadata" / "PartitionChangeRecord.json")
    message = METADATA_RECORDS[5]
    moved = {**schema, "fields": [{**field, "tag": 9} if field["name"] == "Leader" else field
                                  for field in schema["fields"]]}
    with pytest.raises(AssertionError):
        compare(message, moved)
    renumbered = {**schema, "fields": [{**field, "versions": "2+"} if field["name"] == "Directories" else field
                                       for field in schema["fields"]]}
    with pytest.raises(AssertionError):
        compare(message, renumbered)
