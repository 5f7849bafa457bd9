"""``kafka-zk-audit migration-diff``: exit 0 when ZooKeeper and the KRaft log match, 1 with each divergence and its
evidence when not; live (a real ZooKeeper written by the simulator) and from ZooKeeper's real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.cli.main import main
from kafka_zk_audit.snapshot.migration.tree import tree_from_files
from kafka_zk_audit_testing.migration_log import tree_from_kazoo, write_migration_log
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

REAL_FILES = (Path(__file__).resolve().parents[2].parent / "shared" / "real-data" / "zk"
              / "devcourse-final-prj__kafka_cluster" / "zookeeper" / "data")
CHROOT = "/de-4-3-kafka-cluster"


@pytest.fixture
def migrated(zk_server, zk_chroot) -> str:
    """A 3.x cluster in a real ZooKeeper; the caller writes the KRaft log and /migration."""
    with Simulator(hosts=zk_server.hosts + zk_chroot) as sim:
        sim.write(ClusterSpec(era="3.x", brokers=3, topics=3, partitions=2, groups=0, seed=3))
    return zk_server.hosts + zk_chroot


def _migrate(hosts: str, kraft: Path, plants: list[str]) -> None:
    client = KazooClient(hosts=hosts)
    client.start(timeout=15)
    try:
        log = write_migration_log(tree_from_kazoo(client), kraft, "3.9", plants=plants)
        client.create("/migration", log.migration_znode())
    finally:
        client.stop()
        client.close()


def test_a_live_ensemble_that_matches_exits_0(migrated: str, tmp_path: Path, capsys):
    _migrate(migrated, tmp_path, [])
    assert main(["migration-diff", "--zk", migrated, "--from-kraft", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("migration verified at offset ") and "3 topics, 6 partitions" in out


def test_a_live_ensemble_that_diverges_exits_1_with_both_sides(migrated: str, tmp_path: Path, capsys):
    _migrate(migrated, tmp_path, ["producer_ids_behind", "acl_missing"])
    assert main(["migration-diff", "--zk", migrated, "--from-kraft", str(tmp_path), "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert sorted(f["check_id"] for f in verdict["findings"]) == ["migration_diverged_acl",
                                                                   "migration_diverged_producer_ids"]
    assert all("zk: znode " in f["detail"] and "kraft: " in f["detail"] for f in verdict["findings"])
    assert "SCRAM-SHA-256=salt" not in json.dumps(verdict) and "salt=" not in json.dumps(verdict)


@pytest.mark.skipif(not REAL_FILES.is_dir(), reason=f"{REAL_FILES} is absent")
def test_real_zookeeper_files_against_their_migration(tmp_path: Path, capsys):
    raw = tree_from_files(REAL_FILES, CHROOT)
    write_migration_log(raw, tmp_path / "clean", "3.9")
    args = ["migration-diff", "--from-files", str(REAL_FILES), "--chroot", CHROOT, "--from-kraft"]
    assert main([*args, str(tmp_path / "clean")]) == 0
    write_migration_log(raw, tmp_path / "left-out", "3.9", plants=["topic_left_out"])
    capsys.readouterr()
    assert main([*args, str(tmp_path / "left-out")]) == 1
    out = capsys.readouterr().out
    assert out.count("migration_diverged_") == 1 and "remedy: " in out


def test_a_release_that_never_migrated_is_a_usage_error(tmp_path: Path):
    assert main(["migration-diff", "--from-files", str(tmp_path), "--from-kraft", str(tmp_path),
                 "--release", "2.8"]) == 2


SECRET = "cli-encoder-secret"
PASSWORD_KEY = "listener.name.client.ssl.truststore.password"


def _with_password(hosts: str, kraft: Path, in_kraft: str, in_zk: str) -> None:
    """A broker password encoded with the brokers' secret; the migration decoded ``in_kraft``, ZooKeeper now holds
    ``in_zk`` (a dual write that never reached KRaft when they differ)."""
    from kafka_zk_audit_testing.password_encoder import encode_password

    client = KazooClient(hosts=hosts)
    client.start(timeout=15)
    try:
        config = {"version": 1, "config": {PASSWORD_KEY: encode_password(in_kraft, SECRET)}}
        client.create("/config/brokers/2", json.dumps(config).encode(), makepath=True)
        log = write_migration_log(tree_from_kazoo(client), kraft, "3.9", password_secret=SECRET)
        client.create("/migration", log.migration_znode())
        config["config"][PASSWORD_KEY] = encode_password(in_zk, SECRET)
        client.set("/config/brokers/2", json.dumps(config).encode())
    finally:
        client.stop()
        client.close()


def test_passwords_compare_decoded_with_the_secret_from_the_environment(migrated: str, tmp_path: Path, capsys,
                                                                        monkeypatch):
    _with_password(migrated, tmp_path, "pw-kraft", "pw-zk")
    args = ["migration-diff", "--zk", migrated, "--from-kraft", str(tmp_path), "--json"]
    assert main(args) == 0  # no secret: compared by key
    assert "compared by key only" in " ".join(json.loads(capsys.readouterr().out)["notes"])
    monkeypatch.setenv("KAFKA_ZK_AUDIT_PASSWORD_ENCODER_SECRET", SECRET)
    assert main(args) == 1
    out = capsys.readouterr().out
    verdict = json.loads(out)
    assert [(f["check_id"], f["path"]) for f in verdict["findings"]] == [("migration_diverged_config",
                                                                          "/config/brokers/2")]
    assert SECRET not in out and "pw-kraft" not in out and "pw-zk" not in out


def test_the_snapshot_stage_of_a_paired_cluster_lays_out_the_diff(migrated: str, tmp_path: Path, capsys,
                                                                   monkeypatch):
    from kafka_zk_audit.contract.warehouse import Warehouse

    _with_password(migrated, tmp_path / "kraft", "pw-same", "pw-same")
    monkeypatch.setenv("AIRFLOW_CONN_ENCODER_M", json.dumps({"conn_type": "generic", "password": SECRET}))
    config = tmp_path / "settings.yaml"
    config.write_text(json.dumps({"clusters": [{"name": "m", "zk_conn_id": "zk_m", "migration": {
        "kraft": {"metadata_dir": str(tmp_path / "kraft")}, "release": "3.9",
        "password_encoder_secret_conn_id": "encoder_m"}}]}))
    warehouse = Warehouse(str(tmp_path / "wh"))
    assert main(["snapshot", "--zk", f"m={migrated}", "--config", str(config), "--warehouse", warehouse.root]) == 0
    captured = capsys.readouterr()
    manifest = json.loads(captured.out)
    verdict = warehouse.read_migration_diff(manifest["snapshot_id"])
    assert verdict["status"] == "prepared" and verdict["cluster"] == "m" and verdict["findings"] == []
    assert "decoded with password.encoder.secret" in " ".join(verdict["notes"])
    assert "m: migration diff prepared" in captured.err
    assert warehouse.fs.exists(warehouse.fs_path(warehouse.migration_entries_dir(manifest["snapshot_id"])))
    stored = [p for p in (tmp_path / "wh").rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert stored == []

    monkeypatch.delenv("AIRFLOW_CONN_ENCODER_M")
    monkeypatch.setattr("kafka_zk_audit.cli.stages.airflow_connection", lambda conn_id: None)
    assert main(["snapshot", "--zk", f"m={migrated}", "--config", str(config), "--warehouse", warehouse.root]) == 3
    assert "encoder_m" in capsys.readouterr().err


def test_a_log_truncated_past_the_offset_with_no_checkpoint_before_it_cannot_be_compared(migrated: str,
                                                                                          tmp_path: Path, capsys):
    from kafka_zk_audit_testing.migration_log import Compaction

    client = KazooClient(hosts=migrated)
    client.start(timeout=15)
    try:
        tree = tree_from_kazoo(client)
        at = write_migration_log(tree, tmp_path / "plain", "3.9", plants=["dual_write_stopped"]).migration_offset
        log = write_migration_log(tree, tmp_path / "gone", "3.9", plants=["dual_write_stopped"],
                                  compacted=Compaction(checkpoints=(at + 3,), log_start=at + 3))
        client.create("/migration", log.migration_znode())
    finally:
        client.stop()
        client.close()
    assert main(["migration-diff", "--zk", migrated, "--from-kraft", str(tmp_path / "gone")]) == 3
    assert "no checkpoint at or before it" in capsys.readouterr().err
