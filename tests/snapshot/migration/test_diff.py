"""The migration diff against its oracles: a KRaft log written as Kafka's migration writes it (per release) from a
real ZooKeeper's tree, with divergences planted after the migration bugs. Each planted divergence (and each one the
release itself writes, by the mapping notes) is found exactly once with both sides' evidence, and nothing else is;
every simulator era and the real ZooKeeper trees migrate without a divergence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.snapshot.migration.diff import LagLimits, Unverifiable, verify_migration
from kafka_zk_audit.snapshot.migration.tree import ZkNode, tree_from_files
from kafka_zk_audit.snapshot.secrets import Fingerprinter
from kafka_zk_audit_testing.migration_log import PLANTS, Compaction, tree_from_kazoo, write_migration_log
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.simulator.readiness_writes import encrypted_password
from kafka_zk_audit_testing.simulator.spec import ERAS

REAL_ZK = Path(__file__).resolve().parents[3].parent / "shared" / "real-data" / "zk"
REAL_TREES = [("devcourse-final-prj__kafka_cluster/zookeeper/data", "/de-4-3-kafka-cluster"),
              ("keiskeies__docker-compose-cluster/zookeeper/zoo3/data", "/")]
SPEC = {"brokers": 3, "topics": 4, "partitions": 3, "groups": 1, "seed": 11, "start_ms": 1_790_000_000_000}
FINGERPRINTER = Fingerprinter(b"migration-diff-test-key-32-bytes")


def _scrubbed(raw: dict[str, ZkNode], migration: bytes) -> dict[str, ZkNode]:
    tree = {}
    for path, node in raw.items():
        data, _ = FINGERPRINTER.scrub(path, node.data)
        tree[path] = ZkNode(data, node.version, node.mzxid, node.mtime)
    tree["/migration"] = ZkNode(migration)
    return tree


def _found(verification) -> list[tuple]:
    return sorted((f.check_id, f.topic, f.partition, f.path) for f in verification.findings)


def _expected(log) -> list[tuple]:
    return sorted((p.check_id, p.topic, p.partition, p.path or None) for p in log.planted)


def _write_era(zk_server, era: str, chroot: str) -> dict[str, ZkNode]:
    with Simulator(hosts=zk_server.hosts + chroot) as sim:
        sim.write(ClusterSpec(era=era, **SPEC))
    client = KazooClient(hosts=zk_server.hosts + chroot)
    client.start(timeout=15)
    try:
        if era == "3.x":  # a dynamic broker password, stored encrypted as brokers store it
            password = encrypted_password("keystore-secret")
            client.create("/config/brokers/1", json.dumps({"version": 1, "config": {
                "listener.name.client.ssl.keystore.password": password}}).encode())
        return tree_from_kazoo(client)
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="module")
def trees(zk_server) -> dict[str, dict[str, ZkNode]]:
    """Each era's cluster written by the simulator into the real ZooKeeper and read back raw; the 3.x one with a
    dynamic broker password stored encrypted, as brokers store it."""
    out = {}
    for number, era in enumerate(ERAS):
        chroot = f"/migration_diff_{number}"
        zk_server.ensure_chroot(chroot)
        out[era] = _write_era(zk_server, era, chroot)
    return out


@pytest.mark.parametrize("era", list(ERAS))
def test_a_clean_migration_of_every_era_gives_no_divergence(trees, era: str, tmp_path: Path):
    log = write_migration_log(trees[era], tmp_path, "3.9")
    verification = verify_migration(_scrubbed(trees[era], log.migration_znode()), tmp_path, "3.9",
                                     FINGERPRINTER.fingerprint)
    assert _found(verification) == []
    assert verification.verified and verification.offset == log.migration_offset
    assert verification.equal.get("topic", 0) >= SPEC["topics"]
    assert verification.equal["partition"] >= SPEC["topics"] * SPEC["partitions"]


@pytest.mark.parametrize("plant", PLANTS)
def test_each_planted_divergence_is_found_once_with_both_sides_evidence(trees, plant: str, tmp_path: Path):
    log = write_migration_log(trees["3.x"], tmp_path, "3.9", plants=[plant])
    verification = verify_migration(_scrubbed(trees["3.x"], log.migration_znode()), tmp_path, "3.9",
                                     FINGERPRINTER.fingerprint)
    assert len(log.planted) == 1
    assert _found(verification) == _expected(log)
    detail = verification.findings[0].detail
    assert "zk: " in detail and "kraft: " in detail
    assert "keystore-secret" not in json.dumps(verification.as_dict())


def test_every_plant_at_once_is_found_once_each(trees, tmp_path: Path):
    log = write_migration_log(trees["3.x"], tmp_path, "3.9", plants=PLANTS)
    verification = verify_migration(_scrubbed(trees["3.x"], log.migration_znode()), tmp_path, "3.9",
                                     FINGERPRINTER.fingerprint)
    assert len(log.planted) == len(PLANTS)
    assert _found(verification) == _expected(log)


@pytest.mark.parametrize("release", ["3.4.1", "3.5.1", "3.5.2", "3.6.0", "3.6.1", "3.6.2", "3.7.0", "3.7.1", "3.8.0"])
def test_each_release_gives_exactly_the_divergences_its_own_bugs_write(trees, release: str, tmp_path: Path):
    """KAFKA-15552 (producer ids) before 3.5.2/3.6.1, KAFKA-16222/16411 (quota and SCRAM names) before 3.6.2/3.7.1,
    3.4's entity types: real in effect, so found; everything else the release writes is equal."""
    tree = {path: node for path, node in trees["3.x"].items() if path != "/config/brokers/<default>"
            or release not in ("3.5.0", "3.5.1")}  # KAFKA-15374: 3.5.0/3.5.1 cannot migrate a <default> broker
    if release < "3.5":  # 3.4 aborts on a SCRAM credential (its quota parse): the operator removes them first
        tree = {path: ZkNode(b'{"version":1,"config":{}}') if b"SCRAM-" in (node.data or b"") else node
                for path, node in tree.items()}
    log = write_migration_log(tree, tmp_path, release)
    verification = verify_migration(_scrubbed(tree, log.migration_znode()), tmp_path, release,
                                    FINGERPRINTER.fingerprint)
    assert _found(verification) == _expected(log)
    if release >= "3.7.1":
        assert verification.verified


def test_a_partition_changed_after_the_offset_zookeeper_reflects_is_a_lag_not_a_divergence(trees, tmp_path: Path):
    log = write_migration_log(trees["3.x"], tmp_path, "3.9", plants=["dual_write_stopped"])
    tree = _scrubbed(trees["3.x"], log.migration_znode())
    lax = verify_migration(tree, tmp_path, "3.9", FINGERPRINTER.fingerprint, LagLimits(records=1000, ms=3_600_000))
    assert lax.verified and lax.lag_records and lax.lag_ms and lax.lag_ms >= 600_000
    strict = verify_migration(tree, tmp_path, "3.9", FINGERPRINTER.fingerprint)
    assert [f.check_id for f in strict.findings] == ["migration_dual_write_lagging"]


def test_an_offset_past_the_log_is_a_state_divergence(trees, tmp_path: Path):
    log = write_migration_log(trees["3.x"], tmp_path, "3.9")
    log.migration_offset += 1000
    verification = verify_migration(_scrubbed(trees["3.x"], log.migration_znode()), tmp_path, "3.9",
                                    FINGERPRINTER.fingerprint)
    assert [f.check_id for f in verification.findings] == ["migration_diverged_state"]


def test_a_batch_epoch_that_is_not_zookeepers_is_a_divergence(trees, tmp_path: Path):
    log = write_migration_log(trees["3.x"], tmp_path, "3.9", epoch=7)
    same = verify_migration(_scrubbed(trees["3.x"], log.migration_znode()), tmp_path, "3.9",
                            FINGERPRINTER.fingerprint)
    assert same.verified
    other = verify_migration(_scrubbed(trees["3.x"], log.migration_znode(metadata_epoch=6)), tmp_path, "3.9",
                             FINGERPRINTER.fingerprint)
    assert [(f.check_id, f.path) for f in other.findings] == [("migration_diverged_offset_epoch", "/migration")]
    assert "kraft_metadata_epoch 6" in other.findings[0].detail and "leader epoch 7" in other.findings[0].detail


def test_a_log_truncated_past_the_offset_is_compared_with_the_newest_checkpoint_before_it(trees, tmp_path: Path):
    """The dual writes stopped at O: the controller then took a snapshot past O and deleted the log before it; an
    older snapshot (two NoOps before O) is the state to compare with, and the verdict says so."""
    plain = write_migration_log(trees["3.x"], tmp_path / "plain", "3.9", plants=["dual_write_stopped"])
    at = plain.migration_offset
    log = write_migration_log(trees["3.x"], tmp_path / "kept", "3.9", plants=["dual_write_stopped"],
                              compacted=Compaction(checkpoints=(at - 1, at + 3), log_start=at + 3))
    assert log.migration_offset == at
    tree = _scrubbed(trees["3.x"], log.migration_znode())
    verification = verify_migration(tree, tmp_path / "kept", "3.9", FINGERPRINTER.fingerprint,
                                    LagLimits(records=1000, ms=3_600_000))
    assert verification.verified and verification.offset == at
    assert any(f"newest checkpoint at or before it, at offset {at - 2}" in note for note in verification.notes)
    assert verification.equal == verify_migration(tree, tmp_path / "plain", "3.9", FINGERPRINTER.fingerprint,
                                                  LagLimits(records=1000, ms=3_600_000)).equal

    gone = write_migration_log(trees["3.x"], tmp_path / "gone", "3.9", plants=["dual_write_stopped"],
                               compacted=Compaction(checkpoints=(at + 3,), log_start=at + 3))
    with pytest.raises(Unverifiable, match=f"truncated past /migration's kraft_metadata_offset {at}"):
        verify_migration(_scrubbed(trees["3.x"], gone.migration_znode()), tmp_path / "gone", "3.9",
                         FINGERPRINTER.fingerprint)


@pytest.mark.parametrize(("folder", "chroot"), REAL_TREES, ids=[folder.split("/")[0] for folder, _ in REAL_TREES])
def test_a_real_tree_migrated_cleanly_gives_no_divergence(folder: str, chroot: str, tmp_path: Path):
    if not (REAL_ZK / folder).is_dir():
        pytest.skip(f"{REAL_ZK / folder} is absent")
    raw = tree_from_files(REAL_ZK / folder, chroot)
    assert any(path.startswith("/brokers/") for path in raw)
    log = write_migration_log(raw, tmp_path / "kraft", "3.9")
    verification = verify_migration(_scrubbed(raw, log.migration_znode()), tmp_path / "kraft", "3.9",
                                    FINGERPRINTER.fingerprint)
    assert _found(verification) == []
