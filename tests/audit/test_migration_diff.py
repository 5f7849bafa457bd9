"""The migration diff in Spark agrees with the single-pair reference (snapshot.migration.compare) on every planted
divergence, keyed by pair: several pairs in one plan, each judged alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_zk_audit.audit.migration_diff import ENTRY_COLUMNS, compare_rows
from kafka_zk_audit.snapshot.kraft.replay import replay_directory
from kafka_zk_audit.snapshot.migration.diff import migration_offset, unique_entries, verify_migration
from kafka_zk_audit.snapshot.migration.mapping import kraft_entries, zk_entries
from kafka_zk_audit.snapshot.migration.tree import ZkNode
from kafka_zk_audit.snapshot.secrets import Fingerprinter
from kafka_zk_audit_testing.migration_log import PLANTS, write_migration_log
from kafka_zk_audit_testing.simulator.encodings import scram_credential
from kafka_zk_audit_testing.simulator.readiness_writes import encrypted_password

FINGERPRINTER = Fingerprinter(b"spark-migration-diff-test-key-32")
SCHEMA = ("pair string, kind string, key string, value string, extra string, evidence string, topic string, "
          "partition int, broker_id int, path string, flag string")


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _tree() -> dict[str, ZkNode]:
    """A small cluster written by hand as Kafka 3.x brokers write it (every kind the migration copies)."""
    topic = {"version": 3, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": {"0": [1, 2], "1": [2, 1]},
             "adding_replicas": {}, "removing_replicas": {}}
    acl = {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
                                   "host": "*"}]}
    return {
        "/brokers/ids/1": ZkNode(b"{}"), "/brokers/ids/2": ZkNode(b"{}"),
        "/brokers/topics/orders": ZkNode(_json(topic)),
        "/brokers/topics/orders/partitions/0/state": ZkNode(_json({"leader": 1, "leader_epoch": 4, "isr": [1, 2],
                                                                   "controller_epoch": 3, "version": 1}), 7),
        "/brokers/topics/orders/partitions/1/state": ZkNode(_json({"leader": 2, "leader_epoch": 2, "isr": [2, 1],
                                                                   "controller_epoch": 3, "version": 1}), 3),
        "/config/topics/orders": ZkNode(_json({"version": 1, "config": {"retention.ms": "1000"}})),
        "/config/brokers/<default>": ZkNode(_json({"version": 1, "config": {"log.cleaner.threads": "2"}})),
        "/config/brokers/1": ZkNode(_json({"version": 1, "config": {
            "listener.name.client.ssl.keystore.password": encrypted_password("secret")}})),
        "/config/users/alice": ZkNode(_json({"version": 1, "config": {
            "SCRAM-SHA-256": scram_credential("pw", b"salt")}})),
        "/config/users/CN%3Dapp": ZkNode(_json({"version": 1, "config": {"request_percentage": "50"}})),
        "/latest_producer_id_block": ZkNode(_json({"version": 1, "broker": 1, "block_start": "1000",
                                                   "block_end": "1999"})),
        "/kafka-acl/Topic/orders": ZkNode(_json(acl)),
    }


def _rows(pair: str, entries) -> list[tuple]:
    return [(pair, *[getattr(e, c) for c in ENTRY_COLUMNS[1:]]) for e in entries]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict[str, tuple[dict[str, ZkNode], Path]]:
    """One pair per plant (and a clean one), each a scrubbed tree with its /migration and its KRaft dir."""
    out = {}
    for plant in ("clean", *PLANTS):
        folder = tmp_path_factory.mktemp(plant)
        raw = _tree()
        log = write_migration_log(raw, folder, "3.9", plants=[] if plant == "clean" else [plant])
        tree = {path: ZkNode(FINGERPRINTER.scrub(path, node.data)[0], node.version) for path, node in raw.items()}
        tree["/migration"] = ZkNode(log.migration_znode())
        out[plant] = (tree, folder)
    return out


def test_spark_finds_what_the_reference_finds_for_every_pair_in_one_plan(spark, pairs):
    zk_rows, kraft_rows, expected = [], [], []
    for pair, (tree, folder) in pairs.items():
        offset, _ = migration_offset(tree)
        image = replay_directory(folder, at_offset=offset).builder.image
        zk_rows += _rows(pair, zk_entries(tree, (3, 9, 0)))
        kraft_rows += _rows(pair, unique_entries(kraft_entries(image, (3, 9, 0), FINGERPRINTER.fingerprint)))
        reference = verify_migration(tree, folder, "3.9", FINGERPRINTER.fingerprint)
        expected += [(pair, f.check_id, f.path, f.detail) for f in reference.findings
                     if f.check_id.startswith("migration_diverged_")]
    found = compare_rows(spark.createDataFrame(zk_rows, SCHEMA), spark.createDataFrame(kraft_rows, SCHEMA))
    rows = [(r["pair"], r["check_id"], r["path"], r["detail"]) for r in found]
    assert sorted(rows) == sorted(expected)
    assert {pair for pair, *_ in rows} == {p for p in PLANTS if p != "dual_write_stopped"}
