"""The migration diff as the DAG runs it: a real ZooKeeper's clusters snapshotted into a warehouse (secrets
fingerprinted, broker passwords decoded with the brokers' password.encoder.secret when it is given), each laid out
with the KRaft log written from the same tree by the snapshot task, then compared by the audit in one Spark plan for
the whole batch. The oracle is the test encoder (it does not share the diff's code): each plant is named once, with
both sides' evidence, and nothing else; no secret reaches the warehouse."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.audit.paired import paired_verdicts, verification_chapter
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_new_snapshot
from kafka_zk_audit.snapshot.migration.paired import prepare_migration_of, prepare_snapshot, snapshot_tree
from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder
from kafka_zk_audit_testing.migration_log import tree_from_kazoo, write_migration_log
from kafka_zk_audit_testing.password_encoder import encode_password
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

SPEC = ClusterSpec(era="3.x", brokers=3, topics=4, partitions=3, groups=1, seed=5)
TARGET = {"release": "3.9", "max_lag_records": 10_000, "max_lag_ms": 300_000}
SECRET = "brokers-encoder-secret-7f3a"
PASSWORD_KEY = "listener.name.client.ssl.keystore.password"


def _client(zk_server, chroot: str) -> KazooClient:
    client = KazooClient(hosts=zk_server.hosts + chroot)
    client.start(timeout=15)
    return client


def _migrated(zk_server, chroot: str, root: Path, plants: list[str], password: str | None = None):
    """Write the cluster (with an encoded broker password), its KRaft log (with ``plants``; the password decoded by
    the controller's secret) and /migration as the dual writes leave it."""
    zk_server.ensure_chroot(chroot)
    with Simulator(hosts=zk_server.hosts + chroot) as sim:
        sim.write(SPEC)
    client = _client(zk_server, chroot)
    try:
        if password is not None:
            client.create("/config/brokers/1", json.dumps({"version": 1, "config": {
                PASSWORD_KEY: encode_password(password, SECRET)}}).encode(), makepath=True)
        log = write_migration_log(tree_from_kazoo(client), root, "3.9", plants=plants, password_secret=SECRET)
        client.create("/migration", log.migration_znode())
    finally:
        client.stop()
        client.close()
    return log


def _snapshot(zk_server, chroot: str, warehouse: Warehouse, decoder=None) -> dict:
    settings = ZkSettings(hosts=zk_server.hosts, chroot=chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=15)
    try:
        return write_new_snapshot(reader, settings, warehouse, chroot.strip("/"), decoder=decoder)
    finally:
        reader.stop()
        reader.close()


def _found(verdict: dict) -> list[tuple]:
    return sorted((f["check_id"], f["topic"], f["partition"]) for f in verdict["findings"])


def test_the_audit_compares_every_prepared_pair_of_the_batch_in_one_plan(zk_server, spark, tmp_path: Path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    logs, ids = {}, {}
    for plants in ([], ["partition_replicas", "config_missing"], ["topic_left_out", "acl_missing"]):
        chroot = f"/paired_{'_'.join(plants) or 'clean'}"
        logs[chroot] = _migrated(zk_server, chroot, tmp_path / chroot.strip("/"), plants)
        manifest = _snapshot(zk_server, chroot, warehouse)
        assert "/migration" in snapshot_tree(warehouse, manifest["snapshot_id"])  # paths relative to the chroot
        prepared = prepare_snapshot(warehouse, {**manifest, "cluster": chroot}, TARGET, tmp_path / chroot.strip("/"))
        assert prepared["status"] == "prepared" and prepared["entries"]["zk"] > SPEC.topics * SPEC.partitions
        ids[chroot] = manifest["snapshot_id"]

    verdicts = paired_verdicts(spark, warehouse, [*ids.values(), "20260101T000000Z-not-paired"])
    assert set(verdicts) == set(ids.values())
    for chroot, log in logs.items():
        verdict = warehouse.read_migration_diff(ids[chroot])
        assert verdict == json.loads(json.dumps(verdicts[ids[chroot]])) and verdict["cluster"] == chroot
        assert _found(verdict) == sorted((p.check_id, p.topic, p.partition) for p in log.planted)
        assert verdict["verified"] is (not log.planted) and verdict["offset"] == log.migration_offset
        assert verdict["status"] == ("diverged" if log.planted else "verified")
        for finding in verdict["findings"]:
            assert " · zk: " in finding["detail"] and " · kraft: " in finding["detail"]
        missing_topics = sum(p.check_id.endswith("_topic") for p in log.planted)
        assert verdict["equal"]["topic"] == SPEC.topics - missing_topics
        assert verdict["equal"]["partition"] == SPEC.topics * SPEC.partitions - SPEC.partitions * missing_topics - sum(
            p.check_id.endswith("_partition") for p in log.planted)
        assert verification_chapter(verdict)["status"] == verdict["status"]
    assert paired_verdicts(spark, warehouse, list(ids.values())) == verdicts  # compared once: read back as is


def _change_password(zk_server, chroot: str, password: str) -> None:
    client = _client(zk_server, chroot)
    try:
        client.set("/config/brokers/1", json.dumps({"version": 1, "config": {
            PASSWORD_KEY: encode_password(password, SECRET)}}).encode())
    finally:
        client.stop()
        client.close()


def _files_hold(root: Path, texts: list[str]) -> list[str]:
    return [str(path) for path in root.rglob("*") if path.is_file()
            and any(text.encode() in path.read_bytes() for text in texts)]


def test_broker_passwords_are_compared_decoded_with_the_secret_and_never_stored(zk_server, spark, tmp_path: Path):
    chroot = "/paired_passwords"
    _migrated(zk_server, chroot, tmp_path / "kraft", [], password="keystore-pw-in-kraft")
    _change_password(zk_server, chroot, "keystore-pw-changed-in-zk")  # a dual write that never reached KRaft
    runs = {}
    for label, decoder in (("decoded", PasswordDecoder(SECRET)), ("by_key", None)):
        warehouse = Warehouse(str(tmp_path / label))
        manifest = _snapshot(zk_server, chroot, warehouse, decoder)
        prepare_snapshot(warehouse, manifest, TARGET, tmp_path / "kraft", decoder=decoder)
        runs[label] = paired_verdicts(spark, warehouse, [manifest["snapshot_id"]])[manifest["snapshot_id"]]
        assert _files_hold(tmp_path / label, [SECRET, "keystore-pw-in-kraft", "keystore-pw-changed-in-zk"]) == []
    decoded, by_key = runs["decoded"], runs["by_key"]
    assert _found(decoded) == [("migration_diverged_config", None, None)]
    assert decoded["findings"][0]["path"] == "/config/brokers/1" and decoded["findings"][0]["broker_id"] == 1
    assert "decoded with password.encoder.secret" in " ".join(decoded["notes"])
    assert by_key["verified"] and "compared by key only (no password.encoder.secret given)" in " ".join(
        by_key["notes"])

    _change_password(zk_server, chroot, "keystore-pw-in-kraft")  # re-encoded (new salt and IV), same clear text
    warehouse = Warehouse(str(tmp_path / "same"))
    manifest = _snapshot(zk_server, chroot, warehouse, PasswordDecoder(SECRET))
    prepare_snapshot(warehouse, manifest, TARGET, tmp_path / "kraft", decoder=PasswordDecoder(SECRET))
    same = paired_verdicts(spark, warehouse, [manifest["snapshot_id"]])[manifest["snapshot_id"]]
    assert same["verified"] and same["equal"]["config"] >= 1


@contextmanager
def _staged(migration):
    yield SimpleNamespace(origin=migration["metadata_dir"], data_dir=migration["metadata_dir"])


def test_a_kraft_dir_that_cannot_be_read_is_unverified_with_a_finding(tmp_path: Path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    (tmp_path / "corrupt" / "__cluster_metadata-0").mkdir(parents=True)
    (tmp_path / "corrupt" / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"\x00" * 7)
    for name in ("missing", "corrupt"):
        manifest = {"snapshot_id": f"20260101T000000Z-{name}", "cluster": name}
        migration = {**TARGET, "metadata_dir": str(tmp_path / name), "sftp_conn_id": None}
        verdict = prepare_migration_of(warehouse, manifest, migration, _staged)
        assert warehouse.read_migration_diff(manifest["snapshot_id"]) == verdict
        assert verdict["status"] == "unverified" and verdict["error"]
        assert [f["check_id"] for f in verdict["findings"]] == ["migration_unverifiable"]
        assert verdict["findings"][0]["path"] == str(tmp_path / name)
        assert verification_chapter(verdict)["status"] == "unverified"
    assert warehouse.read_migration_diff("20260101T000000Z-other") is None


def test_a_paired_clusters_target_carries_its_kraft_dir_release_limits_and_secret_conn_id_only():
    from kafka_zk_audit.contract.settings import SettingsError, parse_config
    from kafka_zk_audit.snapshot.targets import plan_targets

    cfg = parse_config({"clusters": [
        {"name": "m", "zk_conn_id": "zk_m", "migration": {"kraft": {"metadata_dir": "/k"}, "release": 3.7,
                                                          "max_lag": "90s",
                                                          "password_encoder_secret_conn_id": "encoder_m"}},
        {"name": "plain", "zk_conn_id": "zk_p"}]})
    paired, plain = plan_targets(cfg, None, {})
    assert paired["migration"] == {"metadata_dir": "/k", "sftp_conn_id": None, "release": "3.7",
                                   "max_lag_records": 10_000, "max_lag_ms": 90_000,
                                   "password_encoder_secret_conn_id": "encoder_m"}
    assert json.loads(json.dumps(paired)) == paired and plain["migration"] is None
    with pytest.raises(SettingsError, match="3.4 to 3.9"):
        parse_config({"clusters": [{"name": "m", "zk_conn_id": "z", "migration": {
            "kraft": {"metadata_dir": "/k"}, "release": "4.0"}}]})
    with pytest.raises(SettingsError, match="audited from ZooKeeper"):
        parse_config({"clusters": [{"name": "m", "kraft": {"metadata_dir": "/a"}, "migration": {
            "kraft": {"metadata_dir": "/k"}}}]})
