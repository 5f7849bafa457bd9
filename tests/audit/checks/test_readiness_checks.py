"""Each readiness check on small frames (real Spark), and run_readiness on a clean 3.9-era snapshot.

The whole-run tests share one keyed batch (the clean tree at four targets, two level plants, a planted pair),
judged by one ``audit_readiness`` call; only the together-versus-alone test judges snapshots on their own.

The expected rows come from the reference note (notes/kraft-migration-readiness.md) and the znode
formats Kafka writes (ZkData.scala), not from the code under test.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kafka_zk_audit.audit.checks import readiness as checks
from kafka_zk_audit.audit.checks.readiness import cluster as cluster_checks
from kafka_zk_audit.audit.checks.readiness import configs as config_checks
from kafka_zk_audit.audit.checks.readiness import topics as topic_checks
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.audit.readiness import (
    AUDIT_MIGRATION,
    AUDIT_TABLE,
    READINESS_TABLE,
    SnapshotReadiness,
    audit_readiness,
    write_audit_migration,
    write_by_snapshot,
)
from kafka_zk_audit.contract.readiness import READINESS_CHECK_IDS
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, KEY, READINESS, SNAPSHOT, TABLES, keyed
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse
from tests.audit.checks.test_checks import SNAPSHOT_KEY, small_data_settings

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True, scope="module")
def _small_data(spark: SparkSession):
    """The shared session tuned for tiny frames while the module runs (tests/audit/checks/test_checks.py)."""
    with small_data_settings(spark):
        yield

TOPIC_ID = "sKbFfR5lQ3SSCvzDK7SNfg"


def frame(spark: SparkSession, schema: StructType, rows: list[dict[str, Any]]) -> DataFrame:
    """A keyed frame of ``schema`` from dict rows: snapshot_id SNAPSHOT_KEY unless a row names its own."""
    schema = keyed(schema)
    records = [{column: row.get(column) for column in schema.names} for row in rows]
    for record in records:
        record[KEY] = record[KEY] or SNAPSHOT_KEY
    return spark.createDataFrame(pa.Table.from_pylist(records, schema=to_arrow_schema(schema)))


def table(spark: SparkSession, name: str, rows: list[dict[str, Any]] | None = None) -> DataFrame:
    return frame(spark, TABLES[name], rows or [])


def ids(spark: SparkSession, *snapshot_ids: str) -> DataFrame:
    """The snapshots judged (default: SNAPSHOT_KEY alone)."""
    return cluster_checks.snapshot_keys(spark, snapshot_ids or (SNAPSHOT_KEY,))


def subjects(rows: DataFrame, *columns: str) -> list[tuple]:
    assert [(f.name, f.dataType) for f in rows.schema] == [(f.name, f.dataType) for f in keyed(CHECK_OUTPUT)]
    found = [tuple(row[c] for c in columns) for row in rows.collect()]
    return sorted(found, key=lambda subject: [(value is None, str(value)) for value in subject])


def brk(broker_id: int, version: int = 5, listeners: tuple[str, ...] = ("PLAINTEXT",)) -> dict[str, Any]:
    return {"broker_id": broker_id, "version": version, "path": f"/brokers/ids/{broker_id}", "is_ephemeral": True,
            "endpoints": [{"listener": name, "security_protocol": "PLAINTEXT", "host": "h", "port": 9092 + i}
                          for i, name in enumerate(listeners)]}


def cfg(entity_type: str, entity_name: str, config: dict[str, str] | None) -> dict[str, Any]:
    return {"entity_type": entity_type, "entity_name": entity_name, "version": 1, "config": config,
            "path": f"/config/{entity_type.split('/')[0]}/{entity_name.replace('/', '/clients/', 1)}"
            if entity_type == "users/clients" else f"/config/{entity_type}/{entity_name}"}


# --- R01 ----------------------------------------------------------------------------------------------------


def test_each_readiness_function_takes_tables_and_snapshot_inputs_by_name() -> None:
    """run_readiness calls a condition's function (named like its check id, in one family module) with the inputs
    its parameters name: normalized tables, or the snapshot-wide inputs."""
    assert set(checks.READINESS_FUNCTIONS) == set(READINESS_CHECK_IDS)
    for check_id, function in checks.READINESS_FUNCTIONS.items():
        assert function.__name__ == check_id and function.__doc__, check_id
        assert function.__module__ in {module.__name__ for module in checks.FAMILIES}
        unknown = set(inspect.signature(function).parameters) - set(TABLES) - set(checks.SNAPSHOT_INPUTS)
        assert not unknown, f"{check_id} takes {unknown}"


def test_migration_leftover_only_with_a_zk_mode_controller_and_an_offset(spark: SparkSession) -> None:
    migration = table(spark, "migration", [{"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 5,
                                            "kraft_metadata_offset": 1234, "kraft_metadata_epoch": 5,
                                            "path": "/migration"}])
    zk_controller = table(spark, "controller", [{"broker_id": 1, "version": 2, "kraft_controller_epoch": -1,
                                                 "is_ephemeral": True, "session": 7, "path": "/controller"}])
    kraft_controller = table(spark, "controller", [{"broker_id": 3000, "version": 2, "kraft_controller_epoch": 5,
                                                    "is_ephemeral": False, "session": 0, "path": "/controller"}])
    assert subjects(cluster_checks.kraft_migration_leftover(migration, zk_controller), "path") == [("/migration",)]
    assert subjects(cluster_checks.kraft_migration_leftover(migration, kraft_controller), "path") == []  # dual writes
    waiting = table(spark, "migration", [{"version": 0, "kraft_controller_id": -1, "kraft_controller_epoch": -1,
                                          "kraft_metadata_offset": -1, "kraft_metadata_epoch": -1,
                                          "path": "/migration"}])
    assert subjects(cluster_checks.kraft_migration_leftover(waiting, zk_controller), "path") == []


# --- R02, R03, R04, R05, R06 -------------------------------------------------------------------------------


def test_replicas_on_unregistered_brokers(spark: SparkSession) -> None:
    assignments = table(spark, "assignments", [
        {"topic": "a", "partition": 0, "replicas": [1, 2], "path": "/brokers/topics/a"},
        {"topic": "a", "partition": 1, "replicas": [2, 1001], "path": "/brokers/topics/a"},
        {"topic": "gone", "partition": 0, "replicas": [9], "path": "/brokers/topics/gone"},
    ])
    registered = spark.createDataFrame([(SNAPSHOT_KEY, 1), (SNAPSHOT_KEY, 2)], "snapshot_id string, broker_id int")
    markers = table(spark, "admin_markers", [{"kind": "delete_topic", "topic": "gone",
                                              "path": "/admin/delete_topics/gone"}])
    zk = table(spark, "controller", [{"broker_id": 1, "is_ephemeral": True, "kraft_controller_epoch": -1}])
    rows = topic_checks.kraft_replica_on_unregistered_broker(assignments, registered, markers, zk)
    assert subjects(rows, "topic", "partition", "broker_id") == [("a", 1, 1001)]
    kraft = table(spark, "controller", [{"broker_id": 3000, "is_ephemeral": False, "kraft_controller_epoch": 4}])
    rows = topic_checks.kraft_replica_on_unregistered_broker(assignments, registered, markers, kraft)
    assert subjects(rows, "topic") == []


def test_registered_ids_come_from_the_children_of_brokers_ids(spark: SparkSession) -> None:
    snapshot = frame(spark, SNAPSHOT, [{"path": "/brokers/ids"}, {"path": "/brokers/ids/7"},
                                       {"path": "/brokers/ids/x"}, {"path": "/brokers/seqid"}])
    ids = cluster_checks.registered_broker_ids(snapshot, table(spark, "brokers", [brk(1)]))
    assert sorted(row.broker_id for row in ids.collect()) == [1, 7]


def test_topics_without_id(spark: SparkSession) -> None:
    topics = table(spark, "topics", [
        {"topic": "ok", "version": 3, "topic_id": TOPIC_ID, "path": "/brokers/topics/ok"},
        {"topic": "v3-no-id", "version": 3, "topic_id": None, "path": "/brokers/topics/v3-no-id"},
        {"topic": "old", "version": 1, "path": "/brokers/topics/old"},
        {"topic": "bad-id", "version": 3, "topic_id": "not-an-id", "path": "/brokers/topics/bad-id"},
        {"topic": "deleting", "version": 1, "path": "/brokers/topics/deleting"},
    ])
    malformed = table(spark, "malformed_znodes", [
        {"kind": "topic", "reason": "not valid JSON", "path": "/brokers/topics/broken"},
        {"kind": "broker", "reason": "not valid JSON", "path": "/brokers/ids/1"},
    ])
    markers = table(spark, "admin_markers", [{"kind": "delete_topic", "topic": "deleting",
                                              "path": "/admin/delete_topics/deleting"}])
    rows = topic_checks.kraft_topic_without_id(topics, malformed, markers)
    assert subjects(rows, "topic", "path") == [
        ("bad-id", "/brokers/topics/bad-id"), ("broken", "/brokers/topics/broken"), ("old", "/brokers/topics/old"),
        ("v3-no-id", "/brokers/topics/v3-no-id"),
    ]


def test_partition_state_missing(spark: SparkSession) -> None:
    def part(topic: str, p: int, has_state: bool) -> dict[str, Any]:
        return {"topic": topic, "partition": p, "replicas": [1], "assigned": True, "has_state": has_state,
                "path": f"/brokers/topics/{topic}/partitions/{p}/state" if has_state else f"/brokers/topics/{topic}"}

    partitions = table(spark, "partitions", [part("a", 0, True), part("a", 1, False), part("b", 0, False),
                                             part("c", 0, False), part("d", 0, False)])
    markers = table(spark, "admin_markers", [{"kind": "delete_topic", "topic": "d", "path": "/admin/delete_topics/d"}])
    malformed = table(spark, "malformed_znodes", [{"kind": "partition_state", "reason": "x",
                                                   "path": "/brokers/topics/b/partitions/0/state"}])
    unreadable = table(spark, "unreadable_znodes", [{"reason": "no_read_permission",
                                                     "path": "/brokers/topics/c/partitions"}])
    rows = topic_checks.kraft_partition_state_missing(partitions, markers, malformed, unreadable)
    assert subjects(rows, "topic", "partition") == [("a", 1)]


def test_pending_deletions_of_existing_topics(spark: SparkSession) -> None:
    markers = table(spark, "admin_markers", [
        {"kind": "delete_topic", "topic": "live", "path": "/admin/delete_topics/live"},
        {"kind": "delete_topic", "topic": "gone", "path": "/admin/delete_topics/gone"},
        {"kind": "delete_topic", "topic": "broken", "path": "/admin/delete_topics/broken"},
    ])
    topics = table(spark, "topics", [{"topic": "live", "version": 3, "topic_id": TOPIC_ID}])
    malformed = table(spark, "malformed_znodes", [{"kind": "topic", "path": "/brokers/topics/broken"}])
    rows = topic_checks.kraft_pending_topic_deletion(markers, topics, malformed)
    assert subjects(rows, "topic", "path") == [("broken", "/admin/delete_topics/broken"),
                                               ("live", "/admin/delete_topics/live")]


def test_reassignments_in_flight(spark: SparkSession) -> None:
    assignments = table(spark, "assignments", [
        {"topic": "a", "partition": 0, "replicas": [1, 2, 3], "adding_replicas": [3], "path": "/brokers/topics/a"},
        {"topic": "a", "partition": 1, "replicas": [1, 2], "adding_replicas": [], "removing_replicas": [],
         "path": "/brokers/topics/a"},
        {"topic": "b", "partition": 0, "replicas": [1], "path": "/brokers/topics/b"},
    ])
    markers = table(spark, "admin_markers", [
        {"kind": "reassignment", "topic": "a", "partition": 0, "replicas": [1, 3],
         "path": "/admin/reassign_partitions"},
        {"kind": "reassignment", "topic": "b", "partition": 0, "replicas": [2], "path": "/admin/reassign_partitions"},
        {"kind": "preferred_election", "topic": "a", "partition": 1, "path": "/admin/preferred_replica_election"},
    ])
    rows = topic_checks.kraft_reassignment_in_flight(assignments, markers)
    assert subjects(rows, "topic", "partition") == [("a", 0), ("b", 0)]  # one row per partition


# --- R07 to R12 (configs: secrets fingerprinted, so key names only) -----------------------------------------


FINGERPRINT = "hmac-sha256:0f0f"


def test_scram_users_by_key_name(spark: SparkSession) -> None:
    configs = table(spark, "configs", [
        cfg("users", "alice", {"SCRAM-SHA-512": FINGERPRINT, "producer_byte_rate": "1024"}),
        cfg("users", "bob", {"producer_byte_rate": "1024"}),
        cfg("clients", "c", {"SCRAM-SHA-256": "x"}),
    ])
    assert subjects(config_checks.kraft_scram_credentials(configs), "path") == [("/config/users/alice",)]


def test_acls_one_row_per_resource_znode_and_unknown_types(spark: SparkSession) -> None:
    def acl(path: str, resource_type: str, name: str, principal: str, pattern: str = "literal") -> dict[str, Any]:
        return {"pattern_type": pattern, "resource_type": resource_type, "resource_name": name,
                "principal": principal, "permission_type": "Allow", "operation": "Read", "host": "*", "path": path}

    acls = table(spark, "acls", [
        acl("/kafka-acl/Topic/t", "Topic", "t", "User:a"), acl("/kafka-acl/Topic/t", "Topic", "t", "User:b"),
        acl("/kafka-acl-extended/prefixed/Group/g", "Group", "g", "User:a", "prefixed"),
        acl("/kafka-acl/Widget/w", "Widget", "w", "User:a"),
    ])
    assert subjects(config_checks.kraft_acls_present(acls), "path") == [("/kafka-acl-extended/prefixed/Group/g",),
                                                                 ("/kafka-acl/Topic/t",)]
    assert subjects(config_checks.kraft_acl_unknown_resource_type(acls), "path") == [("/kafka-acl/Widget/w",)]


def test_delegation_tokens(spark: SparkSession) -> None:
    tokens = table(spark, "delegation_tokens", [{"token_id": "tok", "path": "/delegation_token/tokens/tok"}])
    assert subjects(config_checks.kraft_delegation_tokens(tokens), "path") == [("/delegation_token/tokens/tok",)]


def test_encrypted_passwords_by_key_name(spark: SparkSession) -> None:
    configs = table(spark, "configs", [
        cfg("brokers", "1", {"listener.name.external.ssl.keystore.password": FINGERPRINT}),
        cfg("brokers", "<default>", {"ssl.key.password": "[redacted]", "log.cleaner.threads": "2"}),
        cfg("brokers", "2", {"log.cleaner.threads": "2"}),
        cfg("topics", "t", {"ssl.key.password": "x"}),
    ])
    rows = config_checks.kraft_encrypted_passwords(configs)
    assert subjects(rows, "broker_id", "path") == [(1, "/config/brokers/1"), (None, "/config/brokers/<default>")]
    assert all(FINGERPRINT not in row.detail for row in rows.collect())


def test_default_broker_config(spark: SparkSession) -> None:
    configs = table(spark, "configs", [cfg("brokers", "<default>", {"log.cleaner.threads": "2"}),
                                       cfg("brokers", "1", {"log.cleaner.threads": "2"})])
    empty = table(spark, "configs", [cfg("brokers", "<default>", {})])
    assert subjects(config_checks.kraft_default_broker_config(configs), "path") == [("/config/brokers/<default>",)]
    assert subjects(config_checks.kraft_default_broker_config(empty), "path") == []


def test_quota_values_must_be_numbers(spark: SparkSession) -> None:
    configs = table(spark, "configs", [
        cfg("users", "alice", {"producer_byte_rate": "1024", "SCRAM-SHA-256": FINGERPRINT}),
        cfg("users", "bob", {"producer_byte_rate": "lots"}),
        cfg("clients", "c1", {"consumer_byte_rate": "1e6", "request_percentage": " 12.5 "}),
        cfg("clients", "c2", {"consumer_byte_rate": "10MB"}),
        cfg("users/clients", "u/c", {"producer_byte_rate": ""}),
        cfg("ips", "10.0.0.1", {"connection_creation_rate": "5d"}),
        cfg("users", "secret", {"password": FINGERPRINT}),
        cfg("topics", "t", {"retention.ms": "forever"}),
    ])
    rows = config_checks.kraft_quota_invalid(configs)
    assert subjects(rows, "path") == [("/config/clients/c2",), ("/config/users/bob",),
                                      ("/config/users/u/clients/c",)]
    assert any("producer_byte_rate=lots" in row.detail for row in rows.collect())


def test_quota_entities_with_default_or_sanitized_names(spark: SparkSession) -> None:
    configs = table(spark, "configs", [
        cfg("users", "<default>", {"producer_byte_rate": "1024"}),
        cfg("users", "CN%3Dalice", {"producer_byte_rate": "1024"}),
        cfg("users", "scram%40only", {"SCRAM-SHA-256": FINGERPRINT}),
        cfg("users/clients", "bob/<default>", {"producer_byte_rate": "1"}),
        cfg("clients", "plain", {"consumer_byte_rate": "1"}),
        cfg("brokers", "<default>", {"log.cleaner.threads": "2"}),
    ])
    assert subjects(config_checks.kraft_quota_odd_entity_name(configs), "path") == [
        ("/config/users/<default>",), ("/config/users/CN%3Dalice",), ("/config/users/bob/clients/<default>",),
    ]


# --- R13, R15, R16 -------------------------------------------------------------------------------------------


def test_no_common_listener(spark: SparkSession) -> None:
    shared = table(spark, "brokers", [brk(1, listeners=("INTERNAL", "EXTERNAL")), brk(2, listeners=("INTERNAL",))])
    missing = table(spark, "brokers", [brk(1, listeners=("INTERNAL", "EXTERNAL")), brk(2, listeners=("EXTERNAL",)),
                                       brk(3, listeners=("INTERNAL",))])
    assert subjects(cluster_checks.kraft_no_common_listener(shared), "path") == []
    assert subjects(cluster_checks.kraft_no_common_listener(table(spark, "brokers")), "path") == []
    rows = cluster_checks.kraft_no_common_listener(missing)
    assert subjects(rows, "path") == [("/brokers/ids",)]
    assert "3: INTERNAL" in rows.collect()[0].detail


def test_generated_broker_ids(spark: SparkSession) -> None:
    brokers = table(spark, "brokers", [brk(1), brk(1000), brk(1001)])
    used = frame(spark, SNAPSHOT, [{"path": "/brokers/seqid", "version": 2}])
    unused = frame(spark, SNAPSHOT, [{"path": "/brokers/seqid", "version": 0}])
    assert subjects(cluster_checks.kraft_generated_broker_ids(brokers, used), "broker_id", "path") == [
        (1001, "/brokers/ids/1001"), (None, "/brokers/seqid")]
    assert subjects(cluster_checks.kraft_generated_broker_ids(brokers, unused), "broker_id") == [(1001,)]


def test_ibp_lower_bounds(spark: SparkSession) -> None:
    brokers = table(spark, "brokers", [brk(0, version=0), brk(1, version=1), brk(4, version=4), brk(5)])
    none = table(spark, "malformed_znodes")
    unread = table(spark, "unreadable_znodes")
    enabled_v2 = table(spark, "feature", [{"version": 2, "status": 1, "features": "{}", "path": "/feature"}])
    assert subjects(cluster_checks.kraft_ibp_too_low(ids(spark), brokers, enabled_v2, none, unread), "broker_id",
                    "path") == [
        (0, "/brokers/ids/0"), (1, "/brokers/ids/1"), (4, "/brokers/ids/4")]
    v5 = table(spark, "brokers", [brk(5)])
    for feature in ({"version": 1, "status": 1}, {"version": 2, "status": 0}):
        rows = cluster_checks.kraft_ibp_too_low(
            ids(spark), v5, table(spark, "feature", [{**feature, "path": "/feature"}]), none, unread)
        assert subjects(rows, "path") == [("/feature",)]
    absent = cluster_checks.kraft_ibp_too_low(ids(spark), v5, table(spark, "feature"), none, unread)
    assert subjects(absent, "path") == [("/feature",)] and "absent" in absent.collect()[0].detail
    hidden = table(spark, "unreadable_znodes", [{"path": "/feature", "reason": "no_read_permission"}])
    rows = cluster_checks.kraft_ibp_too_low(ids(spark), v5, table(spark, "feature"), none, hidden)
    assert subjects(rows, "path") == []


# --- R17, R18, R19, R20 --------------------------------------------------------------------------------------


def test_cluster_id_and_controller_epoch_missing(spark: SparkSession) -> None:
    none = table(spark, "malformed_znodes")
    unread = table(spark, "unreadable_znodes")
    present = table(spark, "cluster_id", [{"cluster_id": "abc", "version": "1", "path": "/cluster/id"}])
    assert subjects(cluster_checks.kraft_cluster_id_missing(ids(spark), present, none, unread), "path") == []
    rows = cluster_checks.kraft_cluster_id_missing(ids(spark), table(spark, "cluster_id"), none, unread)
    assert subjects(rows, "path") == [("/cluster/id",)]
    broken = table(spark, "malformed_znodes", [{"kind": "controller_epoch", "reason": "not an integer",
                                                "path": "/controller_epoch"}])
    rows = cluster_checks.kraft_controller_epoch_missing(ids(spark), table(spark, "controller_epoch"), broken,
                                                 unread).collect()
    assert [(r.path, r.detail.split(":")[0]) for r in rows] == [
        ("/controller_epoch", "/controller_epoch is unparseable (not an integer)")]
    epoch = table(spark, "controller_epoch", [{"epoch": 3, "data_version": 2, "path": "/controller_epoch"}])
    assert subjects(cluster_checks.kraft_controller_epoch_missing(ids(spark), epoch, none, unread), "path") == []


def test_producer_id_block_unparseable(spark: SparkSession) -> None:
    malformed = table(spark, "malformed_znodes", [
        {"kind": "producer_id_block", "reason": "block_start is not an integer", "path": "/latest_producer_id_block"},
        {"kind": "topic", "reason": "x", "path": "/brokers/topics/t"},
    ])
    rows = cluster_checks.kraft_producer_id_block_invalid(malformed)
    assert subjects(rows, "path") == [("/latest_producer_id_block",)]


def test_secured_znodes_hide_digest_hashes(spark: SparkSession) -> None:
    acls = {
        "/brokers": ["world:anyone:cdrwa"],
        "/config": ["sasl:kafka:cdrwa", "world:anyone:r"],
        "/controller": ["digest:kafka:Zm9vYmFyaGFzaA==:cdrwa"],
        "/admin": ["world:anyone:cdrw"],
    }
    rows = cluster_checks.kraft_secured_znodes(spark, {SNAPSHOT_KEY: acls})
    assert subjects(rows, "path") == [("/config",), ("/controller",)]
    assert all("Zm9vYmFyaGFzaA" not in row.detail for row in rows.collect())
    assert subjects(cluster_checks.kraft_secured_znodes(spark, {SNAPSHOT_KEY: None}), "path") == []


# --- R14 and the whole run ---------------------------------------------------------------------------------


def test_node_ids(spark: SparkSession) -> None:
    tables = {name: table(spark, name) for name in TABLES}
    tables["brokers"] = table(spark, "brokers", [brk(1), brk(2)])
    tables["assignments"] = table(spark, "assignments", [{"topic": "a", "partition": 0, "replicas": [2, 7],
                                                          "adding_replicas": [9], "removing_replicas": [7]}])
    tables["configs"] = table(spark, "configs", [cfg("brokers", "11", {"x": "1"}), cfg("brokers", "<default>", {})])
    assert [row.broker_id for row in cluster_checks.node_ids(tables).collect()] == [1, 2, 7, 9, 11]


def znode(path: str, data: Any = None, version: int = 0, ephemeral_owner: int = 0) -> dict[str, Any]:
    raw = None if data is None else (data if isinstance(data, bytes) else json.dumps(data).encode())
    return {"path": path, "data": raw, "version": version, "ephemeral_owner": ephemeral_owner, "czxid": 1, "mzxid": 1,
            "ctime": 1, "mtime": 1}


def clean_39_snapshot() -> list[dict[str, Any]]:
    """A clean 3.9-era cluster as Kafka 3.9 writes it (ZkData.scala): brokers v5, topics v3 with topic_id,
    /feature v2 enabled, cluster id, controller epoch, producer-id block, no ACLs, SCRAM users or tokens."""
    rows = [znode(p) for p in ("/brokers", "/brokers/ids", "/brokers/topics", "/admin", "/admin/delete_topics",
                               "/config", "/config/topics", "/config/brokers", "/config/users", "/config/changes",
                               "/isr_change_notification", "/log_dir_event_notification", "/consumers")]
    rows.append(znode("/brokers/seqid"))
    for broker_id in (1, 2, 3):
        rows.append(znode(f"/brokers/ids/{broker_id}", {
            "version": 5, "host": f"b{broker_id}", "port": 9092, "jmx_port": -1, "timestamp": "1700000000000",
            "endpoints": [f"INTERNAL://b{broker_id}:9092", f"EXTERNAL://b{broker_id}.example.com:9093"],
            "listener_security_protocol_map": {"INTERNAL": "PLAINTEXT", "EXTERNAL": "SSL"},
            "rack": None, "features": {},
        }, ephemeral_owner=100 + broker_id))
    rows.append(znode("/brokers/topics/orders", {"version": 3, "topic_id": TOPIC_ID, "partitions": {"0": [1, 2, 3],
                      "1": [2, 3, 1]}, "adding_replicas": {}, "removing_replicas": {}}))
    for p in (0, 1):
        rows.append(znode("/brokers/topics/orders/partitions"))
        rows.append(znode(f"/brokers/topics/orders/partitions/{p}"))
        rows.append(znode(f"/brokers/topics/orders/partitions/{p}/state", {
            "controller_epoch": 4, "leader": 1 + p, "version": 1, "leader_epoch": 2, "isr": [1, 2, 3]}))
    rows += [
        znode("/config/topics/orders", {"version": 1, "config": {}}),
        znode("/config/brokers/1", {"version": 1, "config": {"log.cleaner.threads": "2"}}),
        znode("/controller", {"version": 2, "brokerid": 1, "timestamp": "1700000000000", "kraftControllerEpoch": -1},
              ephemeral_owner=101),
        znode("/controller_epoch", b"4", version=3),
        znode("/cluster"), znode("/cluster/id", {"version": "1", "id": "kY7HGzJ9TXaQ2RrGr9DTwg"}),
        znode("/feature", {"features": {}, "version": 2, "status": 1}),
        znode("/latest_producer_id_block", {"version": 1, "broker": 1, "block_start": "0", "block_end": "999"}),
    ]
    return rows


Plants = dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]]
FIRST, SECOND = "20261122T060000Z-a", "20261122T060000Z-b"
# the clean tree as four snapshots, each planned for another target
CLEAN_TARGETS = {f"{SNAPSHOT_KEY}-{target}": target for target in ("3.4", "3.5.0", "3.6.1", "3.9")}
# the clean tree with a pending deletion and a SCRAM user, at two targets
LEVEL_TARGETS = {f"{SNAPSHOT_KEY}-levels-{target}": target for target in ("3.4", "3.9")}
# audit_readiness: a clean snapshot with stale rows of an earlier run, and a snapshot outside the batch
CLEAN, OTHER = f"{SNAPSHOT_KEY}-3.9", "20261122T050000Z-other"


def clean_plants() -> Plants:
    acls = {"/brokers": ["world:anyone:cdrwa"], "/config": ["world:anyone:cdrwa"]}
    return {sid: (clean_39_snapshot(), {"znode_acls": acls}, target) for sid, target in CLEAN_TARGETS.items()}


def level_plants() -> Plants:
    snapshot_rows = clean_39_snapshot()
    snapshot_rows.append(znode("/admin/delete_topics/orders"))
    snapshot_rows.append(znode("/config/users/alice", {"version": 1, "config": {"SCRAM-SHA-512": FINGERPRINT}}))
    return {sid: (snapshot_rows, {}, target) for sid, target in LEVEL_TARGETS.items()}


def planted_pair() -> Plants:
    """Two snapshots (raw rows, manifest, target) with different plants and targets. The first, at 3.4: a pending
    deletion, a SCRAM user, a delegation token, an ACL and a secured znode. The second, at 3.9: no broker, cluster
    id, controller epoch or /feature (empty tables for its key), a replica on broker 1001, a used /brokers/seqid,
    the same token (no problem at 3.9) and ACL (information at 3.9)."""
    token = znode("/delegation_token/tokens/tok", {"version": 1, "owner": "User:alice", "renewers": [],
                                                   "issueTimestamp": 1, "maxTimestamp": 2, "expiryTimestamp": 2,
                                                   "tokenId": "tok"})
    acl = znode("/kafka-acl/Topic/orders", {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]})
    first = clean_39_snapshot() + [
        znode("/admin/delete_topics/orders"),
        znode("/config/users/alice", {"version": 1, "config": {"SCRAM-SHA-512": FINGERPRINT}}),
        znode("/delegation_token"), znode("/delegation_token/tokens"), token,
        znode("/kafka-acl"), znode("/kafka-acl/Topic"), acl,
    ]
    dropped = ("/brokers/ids/", "/cluster/id", "/controller_epoch", "/feature")
    second = [row for row in clean_39_snapshot() if not row["path"].startswith(dropped)]
    second = [row for row in second if row["path"] not in ("/brokers/seqid", "/brokers/topics/orders")] + [
        znode("/brokers/seqid", version=3),
        znode("/brokers/topics/orders", {"version": 3, "topic_id": TOPIC_ID, "partitions": {"0": [1001], "1": [1]},
                                         "adding_replicas": {}, "removing_replicas": {}}),
        znode("/delegation_token"), znode("/delegation_token/tokens"), token,
        znode("/kafka-acl"), znode("/kafka-acl/Topic"), acl,
    ]
    secured = {"/brokers": ["world:anyone:cdrwa"], "/config": ["sasl:kafka:cdrwa"]}
    return {FIRST: (first, {"znode_acls": secured}, "3.4"), SECOND: (second, {}, "3.9")}


def keyed_snapshot(spark: SparkSession, plants: Plants) -> DataFrame:
    return frame(spark, SNAPSHOT, [{**row, KEY: sid} for sid, (rows, _, _) in plants.items() for row in rows])


@contextmanager
def normalized_snapshots(spark: SparkSession, plants: Plants) -> Iterator[tuple[DataFrame, dict[str, DataFrame]]]:
    """The plants' keyed snapshot frame and normalized tables, each cut from its lineage (one partition, checkpointed
    on first use): the readiness plan over them stays small to analyse and plan."""
    snapshot = keyed_snapshot(spark, plants).coalesce(1).localCheckpoint()
    normalized = normalize(snapshot)
    try:
        yield snapshot, {name: frame.coalesce(1).localCheckpoint(eager=False) for name, frame in normalized.items()}
    finally:
        normalized.release()


def readiness_rows(spark: SparkSession, plants: Plants) -> list[tuple]:
    with normalized_snapshots(spark, plants) as (snapshot, tables):
        rows = checks.run_readiness(tables, snapshot, {sid: (manifest, target) for sid, (_, manifest, target)
                                                       in plants.items()})
        assert [(f.name, f.dataType) for f in rows.schema] == [(f.name, f.dataType) for f in keyed(READINESS)]
        return sorted((tuple(row) for row in rows.collect()), key=repr)


@dataclass
class Batch:
    """Every snapshot of the module's whole-run tests as one keyed batch, judged by one ``audit_readiness`` call
    (one readiness plan): the plants, the keyed frames, the warehouse written and the reports, and the node ids
    of each snapshot (one collect of ``node_ids``)."""

    plants: Plants
    snapshot: DataFrame
    tables: dict[str, DataFrame]
    warehouse: Warehouse
    reports: dict[str, dict[str, Any]]
    node_ids: dict[str, list[int]]

    def readiness_rows(self, *snapshot_ids: str) -> list[tuple]:
        """The reports' rows of these snapshots as keyed READINESS tuples (key first), sorted."""
        return sorted(((sid, *[row[name] for name in READINESS.names]) for sid in snapshot_ids
                       for row in self.reports[sid]["rows"]), key=repr)


@pytest.fixture(scope="module")
def batch(spark: SparkSession, _small_data: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Batch]:
    """The clean tree at four targets, the level plants at two, the planted pair: one audit_readiness call over a
    warehouse holding rows of earlier runs (another snapshot's, and stale rows of CLEAN)."""
    warehouse, settings = Warehouse(str(tmp_path_factory.mktemp("readiness-wh"))), load_config(None)
    plants = {**clean_plants(), **level_plants(), **planted_pair()}
    stale = {"condition_id": "R05", "check_id": "kraft_pending_topic_deletion", "level": "warn", "path": "/x"}
    write_by_snapshot(warehouse, READINESS_TABLE, READINESS, {OTHER: [stale], CLEAN: [stale]}, {})
    write_audit_migration(warehouse, {OTHER: "c"})
    with normalized_snapshots(spark, plants) as (snapshot, tables):
        reports = audit_readiness(spark, warehouse, {
            sid: SnapshotReadiness({**manifest, "cluster": "c"}, settings, target) for sid, (_, manifest, target)
            in plants.items()}, tables, snapshot)
        node_ids: dict[str, list[int]] = {sid: [] for sid in plants}
        for row in cluster_checks.node_ids(tables).collect():
            node_ids[row[KEY]].append(row.broker_id)
        yield Batch(plants, snapshot, tables, warehouse, reports, node_ids)


def test_a_clean_39_cluster_is_ready_with_no_row_at_any_target(batch: Batch) -> None:
    """The same clean tree as four snapshots, each planned for another target, judged in one plan: no row."""
    clean = {sid: (manifest, target) for sid, (_, manifest, target) in batch.plants.items() if sid in CLEAN_TARGETS}
    rows = checks.run_readiness(batch.tables, batch.snapshot, clean)
    assert [(f.name, f.dataType) for f in rows.schema] == [(f.name, f.dataType) for f in keyed(READINESS)]
    assert {sid: batch.reports[sid]["rows"] for sid in CLEAN_TARGETS} == {sid: [] for sid in CLEAN_TARGETS}
    node_ids = sorted((sid, broker) for sid in CLEAN_TARGETS for broker in batch.node_ids[sid])
    assert node_ids == sorted((sid, broker) for sid in CLEAN_TARGETS for broker in (1, 2, 3))


def test_run_readiness_levels_and_remedies_follow_the_target(batch: Batch) -> None:
    rows = {sid: batch.reports[sid]["rows"] for sid in LEVEL_TARGETS}  # one plan for both targets
    assert all(row["remedy"] and row["condition_id"] for found in rows.values() for row in found)
    levels = {target: {row["check_id"]: row["level"] for row in rows[sid]} for sid, target in LEVEL_TARGETS.items()}
    assert levels["3.4"] == {"kraft_pending_topic_deletion": "blocker", "kraft_scram_credentials": "blocker"}
    assert levels["3.9"] == {"kraft_pending_topic_deletion": "warn", "kraft_scram_credentials": "info"}


# --- many snapshots in one plan -----------------------------------------------------------------------------


def test_snapshots_computed_together_equal_each_computed_alone(spark: SparkSession, batch: Batch) -> None:
    """The pair's rows from the module's batch (with other snapshots) equal those of each snapshot alone."""
    plants = planted_pair()
    together = batch.readiness_rows(*plants)
    alone = {sid: readiness_rows(spark, {sid: plant}) for sid, plant in plants.items()}
    assert together == sorted(alone[FIRST] + alone[SECOND], key=repr)
    levels = {sid: {(row[2], row[3]) for row in rows} for sid, rows in alone.items()}
    assert levels[FIRST] >= {("kraft_pending_topic_deletion", "blocker"), ("kraft_scram_credentials", "blocker"),
                             ("kraft_delegation_tokens", "blocker"), ("kraft_acls_present", "blocker"),
                             ("kraft_secured_znodes", "high")}
    assert levels[SECOND] == {
        ("kraft_acls_present", "info"), ("kraft_replica_on_unregistered_broker", "blocker"),
        ("kraft_generated_broker_ids", "high"), ("kraft_ibp_too_low", "blocker"),
        ("kraft_cluster_id_missing", "blocker"), ("kraft_controller_epoch_missing", "blocker"),
    }
    # node ids too: each snapshot its own
    assert {sid: batch.node_ids[sid] for sid in plants} == {FIRST: [1, 2, 3], SECOND: [1, 1001]}


def test_audit_readiness_writes_every_snapshot_once(batch: Batch) -> None:
    """One call for every snapshot of the batch (FIRST with rows, CLEAN without) writes each one's folder of both
    tables and its JSON; the folder of a snapshot outside the call stays, and a snapshot's stale rows go."""
    warehouse, reports = batch.warehouse, batch.reports

    def files(table: str, sid: str) -> list[str]:
        folder = Path(warehouse.root) / "tables" / table / f"snapshot_id={sid}"
        return sorted(p.name for p in folder.iterdir() if p.name.endswith(".parquet"))

    def read(table: str, sid: str) -> list[dict[str, Any]]:
        found = pq.read_table(warehouse.table_dir(table, sid))
        return found.to_pylist()

    first = reports[FIRST]
    assert first["verdict"] == "blocked" and first["target_version"] == "3.4" and first["cluster"] == "c"
    assert first["phase"]["phase"] == "not_started" and first["node_ids"] == [1, 2, 3]
    assert [row["check_id"] for row in read(READINESS_TABLE, FIRST)] == [row["check_id"] for row in first["rows"]]
    assert len(read(AUDIT_TABLE, FIRST)) == len(first["rows"]) == sum(first["counts"].values())
    assert reports[CLEAN]["verdict"] == "ready" and reports[CLEAN]["rows"] == []
    empty = pq.read_table(warehouse.table_dir(READINESS_TABLE, CLEAN))
    assert empty.num_rows == 0 and empty.schema.names == [*READINESS.names, "cluster"]
    assert read(AUDIT_TABLE, CLEAN) == [{**{name: None for name in AUDIT_MIGRATION.names},
                                         **{name: False for name in AUDIT_MIGRATION.names[8:]}, "cluster": "c"}]
    assert len(read(AUDIT_TABLE, OTHER)) == len(read(READINESS_TABLE, OTHER)) == 1  # untouched
    for sid in (FIRST, CLEAN):
        assert all(len(files(table, sid)) == 1 for table in (READINESS_TABLE, AUDIT_TABLE)), sid
        assert warehouse.read_json(f"{warehouse.run_dir(sid)}/readiness.json")["verdict"] == reports[sid]["verdict"]
    assert pq.read_table(warehouse.table_dir(AUDIT_TABLE, FIRST)).schema.names == [*AUDIT_MIGRATION.names, "cluster"]
