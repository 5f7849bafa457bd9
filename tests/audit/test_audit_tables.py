"""Audit tables for the gate: one boolean per check, True exactly where the findings say so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from kafka_zk_audit.audit.audit_tables import ENTITY_KEYS, build_audit_tables, entity_checks
from kafka_zk_audit.contract.catalogue import BY_ID, ENTITIES
from kafka_zk_audit.contract.schemas import FINDINGS, KEY
from tests.audit.checks.test_checks import (
    EXPECTED_BROKEN,
    SNAPSHOT_KEY,
    broken_rows,
    healthy_rows,
    make_tables,
    small_data_settings,
)

pytestmark = pytest.mark.spark

SNAPSHOT = SNAPSHOT_KEY
# The offsets of delta went back because delta was recreated: an explained (info) finding.
EXPLAINED = ("offset_regressed", "delta", 0, "g1", None, "/consumers/g1/offsets/delta/0")


def _findings(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    records = [{name: row.get(name) for name in FINDINGS.names} for row in rows]
    return spark.createDataFrame(pa.Table.from_pylist(records, schema=to_arrow_schema(FINDINGS)))


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


@pytest.fixture(scope="module")
def audit(small_data_spark: SparkSession) -> dict[str, Any]:
    spark = small_data_spark
    broken = make_tables(spark, broken_rows())
    # The broken cluster's findings (test_checks.py proves run_checks finds exactly these).
    findings = _findings(spark, [
        {"snapshot_id": SNAPSHOT, "check_id": check_id, "topic": topic, "partition": partition, "group_id": group_id,
         "broker_id": broker_id, "path": path, "detail": "evidence", "first_seen": SNAPSHOT,
         **({"severity": "info", "status": "explained"} if subject == EXPLAINED else
            {"severity": BY_ID[check_id].severity, "status": "new"})}
        for subject in sorted(EXPECTED_BROKEN, key=repr)
        for check_id, topic, partition, group_id, broker_id, path in [subject]
    ])
    healthy = make_tables(spark, healthy_rows())
    nothing = make_tables(spark, {})
    snapshots = spark.createDataFrame([(SNAPSHOT,)], f"{KEY} string")
    worlds = {
        "broken": build_audit_tables(broken, findings, snapshots),
        "healthy": build_audit_tables(healthy, _findings(spark, []), snapshots),
        "no_controller": build_audit_tables(nothing, snapshots=snapshots, findings=_findings(spark, [
            {"snapshot_id": SNAPSHOT, "check_id": "controller_missing", "severity": "critical",
             "path": "/controller", "detail": "no /controller znode", "first_seen": SNAPSHOT, "status": "new"},
        ])),
    }
    # Every table of every world as JSON lines, in one Spark action.
    union = None
    for world, tables in worlds.items():
        for entity, table in tables.items():
            assert table.columns[0] == KEY  # keyed; the rows below are compared without their key
            lines = table.where(F.col(KEY) == SNAPSHOT).select(
                F.lit(world).alias("world"), F.lit(entity).alias("entity"),
                F.to_json(F.struct(*table.columns[1:])).alias("row"))
            union = lines if union is None else union.unionByName(lines)
    assert union is not None
    collected = union.collect() + [(None, "findings", json.dumps(r.asDict())) for r in findings.collect()]
    rows: dict[tuple[str, str], list[dict]] = {}
    for world, entity, line in collected:
        rows.setdefault((world, entity), []).append(json.loads(line))
    schemas = {(world, entity): table.schema for world, tables in worlds.items() for entity, table in tables.items()}
    return {"rows": rows, "schemas": schemas, "findings": rows[(None, "findings")]}


def _subject(row: dict[str, Any], entity: str) -> tuple:
    return tuple(row.get(key) for key in ENTITY_KEYS[entity])


def test_one_table_per_entity_with_a_boolean_per_check(audit: dict[str, Any]) -> None:
    for world in ("broken", "healthy", "no_controller"):
        assert {entity for w, entity in audit["schemas"] if w == world} == set(ENTITIES)
    for (_, entity), schema in audit["schemas"].items():
        for check_id in entity_checks(entity):
            assert schema[check_id].dataType.typeName() == "boolean", (entity, check_id)
        for key in ENTITY_KEYS[entity]:
            assert key in schema.names


def test_flags_match_the_findings_exactly(audit: dict[str, Any]) -> None:
    findings = audit["findings"]
    for entity in ENTITIES:
        table = audit["rows"][("broken", entity)]
        for check_id in entity_checks(entity):
            flagged = {_subject(row, entity) for row in table if row[check_id]}
            expected = {_subject(f, entity) for f in findings
                        if f["check_id"] == check_id and f["status"] != "explained"}
            assert flagged == expected, (entity, check_id)
            assert all(isinstance(row[check_id], bool) for row in table)
    assert all(BY_ID[f["check_id"]].entity in ENTITIES for f in findings)


def test_explained_findings_do_not_flag_their_subject(audit: dict[str, Any]) -> None:
    """An explained finding is reported (info) but its column stays False, so the gate passes on it."""
    offsets = {_subject(r, "offsets"): r for r in audit["rows"][("broken", "offsets")]}
    delta = offsets[("g1", "delta", 0, "/consumers/g1/offsets/delta/0")]
    assert delta["offset_regressed"] is False and delta["offset"] == 5
    assert offsets[("g1", "alpha", 0, "/consumers/g1/offsets/alpha/0")]["offset_regressed"] is True


def test_rows_without_findings_are_all_false(audit: dict[str, Any]) -> None:
    partitions = {(r["topic"], r["partition"]): r for r in audit["rows"][("broken", "partitions")]}
    clean = partitions[("beta", 0)]
    assert not any(clean[c] for c in entity_checks("partitions"))
    assert (clean["leader"], clean["isr"], clean["replicas"]) == (1, [1, 2, 3], [1, 2, 3])
    for world in ("healthy",):
        for entity in ENTITIES:
            for row in audit["rows"][(world, entity)]:
                assert not any(row[c] for c in entity_checks(entity)), (entity, row)


def test_entity_rows(audit: dict[str, Any]) -> None:
    healthy = audit["rows"]
    assert len(healthy[("healthy", "partitions")]) == 7
    assert {r["topic"] for r in healthy[("healthy", "topics")]} == {"orders", "report-log"}
    assert {r["broker_id"] for r in healthy[("healthy", "brokers")]} == {1, 2, 3}
    assert len(healthy[("healthy", "admin")]) == 3
    assert len(healthy[("healthy", "consumer_owners")]) == 4
    assert len(healthy[("healthy", "offsets")]) == 4
    # No malformed znode: a single row whose path is null.
    assert [r.get("path") for r in healthy[("healthy", "znodes")]] == [None]
    assert healthy[("healthy", "controller")] == [{
        "path": "/controller", "broker_id": 1, "is_ephemeral": True, "kraft_controller_epoch": -1,
        "controller_epoch": 5, **{c: False for c in entity_checks("controller")},
    }]


def test_finding_subjects_without_an_entity_row_get_one(audit: dict[str, Any]) -> None:
    broken = audit["rows"]
    # partition 4 of alpha has no owner znode, yet the gate must see the unowned partition.
    owners = {_subject(r, "consumer_owners"): r for r in broken[("broken", "consumer_owners")]}
    assert owners[("g1", "alpha", 4)]["partition_unowned"] is True
    assert owners[("g1", "alpha", 4)]["path"] == "/consumers/g1/owners/alpha/4"
    # Topics that no longer exist appear through their leftovers.
    topics = {r["topic"]: r for r in broken[("broken", "topics")]}
    assert topics["ghost"]["deleted_topic_remnants"] is True
    assert topics["gamma"]["topic_config_missing"] is True and not topics["alpha"]["topic_config_missing"]
    # Notification parents with a backlog become admin rows.
    admin = {(r["path"], r.get("topic"), r.get("partition")): r for r in broken[("broken", "admin")]}
    assert admin[("/config/changes", None, None)]["notification_backlog"] is True
    assert admin[("/admin/reassign_partitions", "alpha", 42)]["reassignment_invalid"] is True
    assert admin[("/admin/reassign_partitions", "beta", 0)]["reassignment_invalid"] is False
    assert sorted(r["path"] for r in broken[("broken", "znodes")]) == ["/brokers/ids/5", "/config/users/bob"]


def test_controller_is_one_row_even_without_the_znode(audit: dict[str, Any]) -> None:
    [missing] = audit["rows"][("no_controller", "controller")]
    assert missing["path"] == "/controller" and missing["controller_missing"] is True
    assert not missing["controller_not_alive"]
    [broken] = audit["rows"][("broken", "controller")]
    assert broken["controller_session_mismatch"] and broken["controller_epoch_regressed"]
    assert not broken["controller_missing"]
