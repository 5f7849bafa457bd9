"""The migration diff as the DAG's snapshot task runs it: a real ZooKeeper's cluster snapshotted into a warehouse
(secrets fingerprinted), read back and compared with the KRaft log written from the same tree (the test encoder:
an oracle that does not share the diff's code). The verdict file names each plant once, with both sides' evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_new_snapshot
from kafka_zk_audit.snapshot.migration.paired import snapshot_tree, verify_snapshot, write_unverified
from kafka_zk_audit_testing.migration_log import tree_from_kazoo, write_migration_log
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

SPEC = ClusterSpec(era="3.x", brokers=3, topics=4, partitions=3, groups=1, seed=5)
TARGET = {"release": "3.9", "max_lag_records": 10_000, "max_lag_ms": 300_000}


def _migrated(zk_server, chroot: str, root: Path, plants: list[str]):
    """Write the cluster, its KRaft log (with ``plants``) and /migration as the dual writes leave it."""
    zk_server.ensure_chroot(chroot)
    with Simulator(hosts=zk_server.hosts + chroot) as sim:
        sim.write(SPEC)
    client = KazooClient(hosts=zk_server.hosts + chroot)
    client.start(timeout=15)
    try:
        log = write_migration_log(tree_from_kazoo(client), root, "3.9", plants=plants)
        client.create("/migration", log.migration_znode())
    finally:
        client.stop()
        client.close()
    return log


def _snapshot(zk_server, chroot: str, warehouse: Warehouse) -> dict:
    settings = ZkSettings(hosts=zk_server.hosts, chroot=chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=15)
    try:
        return write_new_snapshot(reader, settings, warehouse, "paired")
    finally:
        reader.stop()
        reader.close()


@pytest.mark.parametrize("plants", [[], ["partition_replicas", "config_missing"]])
def test_the_snapshot_task_verifies_the_pair_and_names_each_plant_once(zk_server, tmp_path: Path, plants):
    chroot = f"/paired_{len(plants)}"
    log = _migrated(zk_server, chroot, tmp_path / "kraft", plants)
    warehouse = Warehouse(str(tmp_path / "wh"))
    manifest = _snapshot(zk_server, chroot, warehouse)
    tree = snapshot_tree(warehouse, manifest["snapshot_id"])
    assert "/migration" in tree and "/brokers/topics" in tree  # paths relative to the chroot

    verdict = verify_snapshot(warehouse, {**manifest, "cluster": "m"}, TARGET, tmp_path / "kraft")
    stored = warehouse.read_migration_diff(manifest["snapshot_id"])
    assert stored == json.loads(json.dumps(verdict)) and stored["cluster"] == "m"
    found = sorted((f["check_id"], f["topic"], f["partition"]) for f in stored["findings"])
    assert found == sorted((p.check_id, p.topic, p.partition) for p in log.planted)
    assert stored["verified"] is (not plants) and stored["offset"] == log.migration_offset
    for finding in stored["findings"]:
        assert " · zk: " in finding["detail"] and " · kraft: " in finding["detail"]
    assert stored["equal"]["topic"] == SPEC.topics - sum(p.check_id.endswith("_topic") for p in log.planted)
    assert stored["equal"]["partition"] >= SPEC.topics * SPEC.partitions - len(plants)


def test_a_kraft_side_that_cannot_be_read_is_recorded_unverified(tmp_path: Path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    verdict = write_unverified(warehouse, {"snapshot_id": "20260101T000000Z-m", "cluster": "m"}, TARGET,
                               "FilesSourceError: /nowhere: no such directory")
    assert warehouse.read_migration_diff("20260101T000000Z-m") == verdict
    assert verdict["verified"] is False and verdict["findings"] == [] and "no such directory" in verdict["summary"]
    assert warehouse.read_migration_diff("20260101T000000Z-other") is None


def test_a_paired_clusters_target_carries_its_kraft_dir_release_and_limits_as_plain_values():
    from kafka_zk_audit.contract.settings import SettingsError, parse_config
    from kafka_zk_audit.snapshot.targets import plan_targets

    cfg = parse_config({"clusters": [
        {"name": "m", "zk_conn_id": "zk_m", "migration": {"kraft": {"metadata_dir": "/k"}, "release": 3.7,
                                                          "max_lag": "90s"}},
        {"name": "plain", "zk_conn_id": "zk_p"}]})
    paired, plain = plan_targets(cfg, None, {})
    assert paired["migration"] == {"metadata_dir": "/k", "sftp_conn_id": None, "release": "3.7",
                                   "max_lag_records": 10_000, "max_lag_ms": 90_000}
    assert json.loads(json.dumps(paired)) == paired and plain["migration"] is None
    with pytest.raises(SettingsError, match="3.4 to 3.9"):
        parse_config({"clusters": [{"name": "m", "zk_conn_id": "z", "migration": {
            "kraft": {"metadata_dir": "/k"}, "release": "4.0"}}]})
    with pytest.raises(SettingsError, match="audited from ZooKeeper"):
        parse_config({"clusters": [{"name": "m", "kraft": {"metadata_dir": "/a"}, "migration": {
            "kraft": {"metadata_dir": "/k"}}}]})
