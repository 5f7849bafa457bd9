"""Replay on a real ZooKeeper's files: the digest ZooKeeper logs is met at every txn, earlier moments come
from earlier snapshots, and a corrupt snapshot, an altered digest, a gap or a corrupt log is refused or
skipped, never half used."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafka_zk_audit.snapshot.files.processtxn import OfflineFilesError
from kafka_zk_audit.snapshot.files.replay import rebuild_tree
from kafka_zk_audit.snapshot.files.snapfile import read_snapshot, snapshot_files, snapshot_zxid
from kafka_zk_audit.snapshot.files.txnlog import RECORD_HEAD, log_files

from .test_snapfile import altered_digest

pytestmark = pytest.mark.zk


def _copy_snapshots(zk_files, target: Path, keep=lambda path: True) -> Path:
    (target / "version-2").mkdir(parents=True)
    for path in snapshot_files(zk_files.data_dir):
        if keep(path):
            shutil.copy(path, target / "version-2" / path.name)
    return target


def test_the_newest_tree_meets_every_logged_digest(zk_files):
    messages: list[str] = []
    tree = rebuild_tree(zk_files.data_dir, zk_files.log_dir, progress=messages.append)
    assert tree.zxid == zk_files.final_zxid and tree.digest_verified is True and tree.format == "3.6+"
    assert "/kafka/brokers/ids/99" not in tree.nodes  # its session was closed
    assert "/kafka/nulldata" in tree.nodes and tree.nodes["/kafka/nulldata"].data_null
    assert not tree.nodes["/kafka/brokers/ids"].children  # the simulator's sessions closed at the end
    assert Path(tree.snapshot_file) == snapshot_files(zk_files.data_dir)[-1] and messages


def test_every_zxid_from_the_first_snapshot_is_digest_checked(zk_files, tmp_path):
    """From snapshot.0 alone every txn is replayed, and every one with a TxnDigest is compared."""
    only_first = _copy_snapshots(zk_files, tmp_path / "data", keep=lambda path: snapshot_zxid(path) == 0)
    tree = rebuild_tree(only_first, zk_files.log_dir)
    newest = rebuild_tree(zk_files.data_dir, zk_files.log_dir)
    assert tree.zxid == newest.zxid and tree.digest_verified is True
    assert tree.nodes == newest.nodes


def test_an_earlier_zxid_uses_a_snapshot_that_ends_by_it(zk_files, tmp_path):
    """The newest snapshot serves the zxid its trailer names (or the next one, when ZooKeeper wrote it while a txn
    was being applied); an earlier zxid comes from an earlier snapshot plus the logs. The oracle is the replay of
    every txn from snapshot.0."""
    later = read_snapshot(snapshot_files(zk_files.data_dir)[-1])
    from_first = _copy_snapshots(zk_files, tmp_path / "data", keep=lambda path: snapshot_zxid(path) == 0)
    at_trailer = rebuild_tree(zk_files.data_dir, zk_files.log_dir, at_zxid=later.digest_zxid)
    assert at_trailer.zxid == later.digest_zxid and at_trailer.digest_verified is True
    assert at_trailer.nodes == rebuild_tree(from_first, zk_files.log_dir, at_zxid=later.digest_zxid).nodes
    at_its_end = at_trailer
    if Path(at_trailer.snapshot_file).name != Path(later.path).name:  # a txn was in flight as it was written
        assert snapshot_zxid(at_trailer.snapshot_file) < later.zxid
        at_its_end = rebuild_tree(zk_files.data_dir, zk_files.log_dir, at_zxid=later.digest_zxid + 1)
    assert Path(at_its_end.snapshot_file).name == Path(later.path).name
    before_it = rebuild_tree(zk_files.data_dir, zk_files.log_dir, at_zxid=later.zxid - 1)
    assert snapshot_zxid(before_it.snapshot_file) < later.zxid and before_it.zxid == later.zxid - 1
    assert before_it.digest_verified is True
    assert before_it.nodes == rebuild_tree(from_first, zk_files.log_dir, at_zxid=later.zxid - 1).nodes


def test_a_corrupt_newest_snapshot_falls_back_to_the_previous_one(zk_files, tmp_path):
    data_dir = _copy_snapshots(zk_files, tmp_path / "data")
    newest = sorted((data_dir / "version-2").glob("snapshot.*"), key=snapshot_zxid)[-1]
    newest.write_bytes(newest.read_bytes()[:-100])
    messages: list[str] = []
    tree = rebuild_tree(data_dir, zk_files.log_dir, progress=messages.append)
    assert snapshot_zxid(tree.snapshot_file) < snapshot_zxid(newest)
    assert any(message.startswith(f"warning: skipping snapshot {newest.name}") for message in messages)
    assert tree.skipped_snapshots and tree.digest_verified is True
    assert tree.nodes == rebuild_tree(zk_files.data_dir, zk_files.log_dir).nodes


def test_an_altered_digest_trailer_is_refused(zk_files, tmp_path):
    data_dir = _copy_snapshots(zk_files, tmp_path / "data")
    newest = sorted((data_dir / "version-2").glob("snapshot.*"), key=snapshot_zxid)[-1]
    newest.write_bytes(altered_digest(newest.read_bytes()))
    with pytest.raises(OfflineFilesError, match="tree digest mismatch at zxid"):
        rebuild_tree(data_dir, zk_files.log_dir)


def test_a_missing_log_is_a_gap(zk_files, tmp_path):
    data_dir = _copy_snapshots(zk_files, tmp_path / "data", keep=lambda path: snapshot_zxid(path) == 0)
    logs = log_files(zk_files.log_dir)
    assert len(logs) >= 3
    (tmp_path / "logs" / "version-2").mkdir(parents=True)
    for path in (logs[0], *logs[2:]):
        shutil.copy(path, tmp_path / "logs" / "version-2" / path.name)
    with pytest.raises(OfflineFilesError, match="txns are missing"):
        rebuild_tree(data_dir, tmp_path / "logs")


def test_a_corrupt_log_record_is_refused(zk_files, tmp_path):
    (tmp_path / "logs").mkdir()
    for path in log_files(zk_files.log_dir):
        shutil.copy(path, tmp_path / "logs" / path.name)
    last = log_files(tmp_path / "logs")[-1]
    data = bytearray(last.read_bytes())
    data[16 + RECORD_HEAD.size + 10] ^= 0xFF  # inside the first record's payload
    last.write_bytes(bytes(data))
    with pytest.raises(OfflineFilesError, match="checksum mismatch"):
        rebuild_tree(zk_files.data_dir, tmp_path / "logs")


def test_no_snapshot_or_a_target_before_every_snapshot_is_refused(zk_files, tmp_path):
    with pytest.raises(OfflineFilesError, match="no snapshot"):
        rebuild_tree(tmp_path, zk_files.log_dir)
    with pytest.raises(OfflineFilesError, match="before the requested zxid"):
        rebuild_tree(zk_files.data_dir, zk_files.log_dir, at_zxid=zk_files.final_zxid + 1)


IN_FLIGHT = Path(__file__).resolve().parents[2] / "data" / "zookeeper" / "txn_in_flight"


def test_a_snapshot_written_while_a_txn_was_applied_rebuilds_as_zookeeper_loads_it(tmp_path):
    """Files of a real ZooKeeper 3.8 (tests/data/zookeeper/txn_in_flight, the logs cut after their last record):
    snapshot.17 was written while closeSession 0x18 deleted its session's ephemerals, so one of them is already
    missing although the trailer names 0x17 with the digest the log holds for 0x17. The rebuild replays 0x18 as
    fuzzy and meets the digest logged with it; the oracle is a real ZooKeeper started on a copy of the files."""
    from kazoo.client import KazooClient

    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    snapshot = read_snapshot(IN_FLIGHT / "version-2" / "snapshot.17")
    assert snapshot.digest_zxid == snapshot.zxid == 0x17
    assert "/consumers/bl_mall_etl/owners/topic2/1" not in snapshot.nodes  # deleted by 0x18, in flight
    assert "/consumers/bl_mall_etl/owners/topic2/0" in snapshot.nodes  # not yet deleted when it was written

    rebuilt = rebuild_tree(IN_FLIGHT, None)
    assert rebuilt.digest_verified is True and Path(rebuilt.snapshot_file).name == "snapshot.17"
    # the snapshot holds part of 0x18: it serves 0x18 on, and 0x17 needs an earlier snapshot (there is none here)
    assert Path(rebuild_tree(IN_FLIGHT, None, at_zxid=0x18).snapshot_file).name == "snapshot.17"
    with pytest.raises(OfflineFilesError, match=r"no usable snapshot at or before zxid 0x17 .*snapshot\.17: holds "
                                                r"part of txn 0x18, after the target"):
        rebuild_tree(IN_FLIGHT, None, at_zxid=0x17)

    server = ZooKeeperServer(tmp_path / "zk", port=free_port())
    shutil.copytree(IN_FLIGHT, server.data_dir / "data")
    server.start()
    try:
        client = KazooClient(hosts=server.hosts)
        client.start(timeout=15)
        try:
            live: dict[str, tuple[bytes, int, int, int]] = {}
            pending = ["/"]
            while pending:
                path = pending.pop()
                data, stat = client.get(path)
                live[path] = (data or b"", stat.mzxid, stat.pzxid, stat.ephemeralOwner)
                pending += [f"{path.rstrip('/')}/{child}" for child in client.get_children(path)]
        finally:
            client.stop()
            client.close()
    finally:
        server.stop()
    ours = {path: (node.data, node.mzxid, node.pzxid, node.ephemeral_owner) for path, node in rebuilt.nodes.items()}
    internal = lambda path: path == "/zookeeper" or path.startswith("/zookeeper/")  # noqa: E731
    assert {p: v for p, v in ours.items() if not internal(p)} == {p: v for p, v in live.items() if not internal(p)}
    assert rebuilt.zxid == 0x1D
