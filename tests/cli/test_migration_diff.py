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
