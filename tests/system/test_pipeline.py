"""Real ZooKeeper → snapshot → normalizer, for every simulated Kafka era and the malformed corpus.

Each era is written by the simulator under its own chroot with digest auth on the connection
(as a secured Kafka would), read back by the snapshot with the same auth, and normalized.
"""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from pyspark.sql import functions as F

from kafka_zk_audit.audit.job import read_snapshots
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.contract.schemas import KEY
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.malformed_corpus import load_malformed_corpus
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

pytestmark = [pytest.mark.zk, pytest.mark.spark]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "malformed"
AUTH = ("digest", "kafka:kafka-secret")
# era → (broker version, topic version, controller version, config change format)
ERA_ENCODINGS = {
    "0.8": (1, 1, 1, "v0_topic_string"),
    "0.9": (2, 1, 1, "v1"),
    "0.10": (3, 1, 1, "v2"),
    "1.x": (4, 1, 1, "v2"),
    "2.x": (4, 2, 1, "v2"),
    "2.8": (5, 3, 1, "v2"),
    "3.x": (5, 3, 2, "v2"),
    "3.x-migration": (5, 3, 2, "v2"),
}
# era → /feature version (None: no /feature before 2.7)
FEATURE_VERSIONS = {"2.8": "1", "3.x": "2", "3.x-migration": "2"}


def take(zk_server, chroot: str, warehouse: Warehouse, snapshot_id: str, copy_secrets: bool = False) -> dict:
    """Snapshot the chroot with the connection's digest auth; returns the manifest."""
    settings = ZkSettings(hosts=zk_server.hosts, chroot=chroot, auth=(AUTH,))
    client = KazooClient(**settings.kazoo_kwargs())
    client.start()
    try:
        return write_snapshot(client, settings, warehouse, snapshot_id, SnapshotOptions(copy_secrets=copy_secrets))
    finally:
        client.stop()
        client.close()


def snapshot_of(zk_server, chroot: str, warehouse: Warehouse, snapshot_id: str, spark, copy_secrets: bool = False):
    manifest = take(zk_server, chroot, warehouse, snapshot_id, copy_secrets)
    return manifest, read_snapshots(spark, warehouse, [snapshot_id])


def test_every_era_normalizes_to_its_encodings(zk_server, zk_chroot, spark, tmp_path):
    """Eight eras, eight snapshots, normalized together in one keyed plan (the snapshot id tells the eras apart)."""
    warehouse = Warehouse(str(tmp_path / "wh"))
    era_of, counts = {}, {}
    sims = []
    try:
        for index, era in enumerate(ERA_ENCODINGS):
            chroot = f"{zk_chroot}/kafka_{index}"
            sim = Simulator(hosts=zk_server.hosts + chroot, auth=AUTH)
            sims.append(sim)
            sim.write(ClusterSpec(era=era, brokers=3, racks=2, topics=3, partitions=2, replication_factor=2,
                                  groups=1, consumers_per_group=2, threads_per_consumer=1, seed=3))
            snapshot_id = f"20260101T00000{index}Z"
            counts[era] = take(zk_server, chroot, warehouse, snapshot_id)["znodes"]
            era_of[snapshot_id] = era
    finally:
        for sim in sims:
            sim.close()
    tables = normalize(read_snapshots(spark, warehouse, list(era_of)))
    versions = [
        tables["brokers"].select(KEY, F.lit("broker").alias("kind"), F.col("version").cast("string")),
        tables["topics"].select(KEY, F.lit("topic").alias("kind"), F.col("version").cast("string")),
        tables["controller"].select(KEY, F.lit("controller").alias("kind"), F.col("version").cast("string")),
        tables["config_changes"].select(KEY, F.lit("config_change").alias("kind"), F.col("format")),
        tables["malformed_znodes"].select(KEY, F.lit("malformed").alias("kind"), F.col("path")),
        tables["consumer_owners"].select(KEY, F.lit("owner").alias("kind"), F.col("owner")),
        tables["feature"].select(KEY, F.lit("feature").alias("kind"), F.col("version").cast("string")),
        tables["migration"].select(KEY, F.lit("migration").alias("kind"), F.col("version").cast("string")),
        tables["controller"].select(KEY, F.lit("controller_ephemeral").alias("kind"),
                                    F.col("is_ephemeral").cast("string")),
        tables["partitions"].where("assigned AND has_state AND topic != '__consumer_offsets'")
        .select(KEY, F.lit("partition").alias("kind"), F.concat_ws("/", "topic", "partition")),
    ]
    rows = reduce(lambda a, b: a.unionAll(b), versions).collect()
    tables.release()
    seen: dict[tuple[str, str], set] = {}
    for row in rows:
        seen.setdefault((era_of[row[KEY]], row["kind"]), set()).add(row[2])
    for era, (broker, topic, controller, change) in ERA_ENCODINGS.items():
        assert seen.get((era, "broker")) == {str(broker)}, era
        assert seen.get((era, "topic")) == {str(topic)}, era
        assert seen.get((era, "controller")) == {str(controller)}, era
        if era != "0.8":  # 0.8 writes changes only for topic overrides; the legacy test plants one
            assert change in seen.get((era, "config_change"), set()), era
        assert (era, "malformed") not in seen, (era, seen.get((era, "malformed")))
        assert len(seen[(era, "partition")]) == 3 * 2, era
        assert len(seen[(era, "owner")]) >= 2, era
        assert seen.get((era, "feature")) == ({FEATURE_VERSIONS[era]} if era in FEATURE_VERSIONS else None), era
        migrating = era == "3.x-migration"
        assert seen.get((era, "migration")) == ({"0"} if migrating else None), era
        assert seen[(era, "controller_ephemeral")] == {"false" if migrating else "true"}, era
        assert counts[era] > 50


def test_legacy_forms_through_zookeeper(zk_server, zk_chroot, zk_client, spark, tmp_path):
    """The bare-int /controller of early readers and the 0.8.1 config change (a JSON string literal)."""
    zk_client.create("/controller", b"3", ephemeral=True)
    zk_client.create("/controller_epoch", b"7")
    zk_client.create("/config/changes/config_change_", b'"my-topic"', sequence=True, makepath=True)
    _, snapshot = snapshot_of(zk_server, zk_chroot, Warehouse(str(tmp_path / "wh")), "20260101T000000Z", spark)
    tables = normalize(snapshot)
    controller = tables["controller"].collect()
    assert [(r["broker_id"], r["version"], r["is_ephemeral"]) for r in controller] == [(3, None, True)]
    assert controller[0]["session"] == zk_client.client_id[0]
    assert [r["epoch"] for r in tables["controller_epoch"].collect()] == [7]
    changes = tables["config_changes"].collect()
    assert [(r["format"], r["entity_type"], r["entity_name"], r["seq"]) for r in changes] == [
        ("v0_topic_string", "topics", "my-topic", 0)
    ]
    assert tables["malformed_znodes"].count() == 0
    tables.release()


def test_malformed_corpus_through_zookeeper(zk_server, zk_chroot, zk_client, spark, tmp_path):
    cases = load_malformed_corpus(CORPUS)
    assert len(cases) >= 15
    for case in cases:
        zk_client.create(case.path, case.data, makepath=True, ephemeral=bool(case.ephemeral_owner))
    # raw copies: the corpus's secret-path cases (a garbage delegation token) are about parsing; with the
    # default fingerprinting their data is replaced before the normalizer sees it (tests/snapshot covers that)
    manifest, snapshot = snapshot_of(zk_server, zk_chroot, Warehouse(str(tmp_path / "wh")), "20260101T000000Z",
                                     spark, copy_secrets=True)
    tables = normalize(snapshot)
    malformed = {r["path"]: r for r in tables["malformed_znodes"].collect()}
    for case in cases:
        assert case.path in malformed, f"{case.name}: no malformed_znodes row"
        row = malformed[case.path]
        assert row["kind"] == case.kind, case.name
        assert case.reason_contains in row["reason"], (case.name, row["reason"])
    case_paths = {case.path for case in cases}
    for path in set(malformed) - case_paths:  # only parents that makepath created empty
        assert any(p.startswith(path + "/") for p in case_paths), path
    assert manifest["znodes"] >= len(cases)
