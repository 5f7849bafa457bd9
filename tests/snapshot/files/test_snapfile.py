"""The snapshot decoder on real ZooKeeper snapshots: it agrees with ZooKeeper's SnapshotFormatter on every
znode, reads the gz and snappy snapshots ZooKeeper writes, and refuses truncated or altered files."""

from __future__ import annotations

import base64
import shutil
import struct
import time
import zlib
from pathlib import Path

import pytest

from kafka_zk_audit.snapshot.files.snapdecode import DIGEST_TRAILER, SEAL_SIZE, SnapshotFileError
from kafka_zk_audit.snapshot.files.snapfile import read_snapshot, snapshot_files
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

from .java_tools import snapshot_formatter

pytestmark = pytest.mark.zk


def _newest(zk_files) -> Path:
    return snapshot_files(zk_files.data_dir)[-1]


def _utc(ms: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(ms / 1000))


def test_every_znode_agrees_with_zookeepers_snapshot_formatter(zk_files):
    path = _newest(zk_files)
    snapshot = read_snapshot(path)
    printed = snapshot_formatter(path)
    assert set(printed) == set(snapshot.nodes) and len(printed) > 100
    for name, node in snapshot.nodes.items():
        fields = printed[name]
        assert int(fields["cZxid"], 16) == node.czxid and int(fields["mZxid"], 16) == node.mzxid, name
        assert int(fields["pZxid"], 16) == node.pzxid, name
        assert int(fields["ephemeralOwner"], 16) == node.ephemeral_owner & 0xFFFFFFFFFFFFFFFF, name
        assert (int(fields["cversion"]), int(fields["dataVersion"]), int(fields["aclVersion"])) == (
            node.cversion, node.version, node.aversion), name
        assert (fields["ctime"], fields["mtime"]) == (_utc(node.ctime), _utc(node.mtime)), name
        assert base64.b64decode(fields["data"]) == node.data, name
    assert snapshot.file_format == "3.6+" and snapshot.digest_zxid >= snapshot.zxid
    # the session list decodes: the simulator's sessions were open at the earlier snapshots (at the newest one they may
    # all have closed, depending on when ZooKeeper took it)
    assert any(read_snapshot(other).sessions for other in snapshot_files(zk_files.data_dir))


@pytest.fixture(scope="module")
def compressed_snapshots(zk_files, tmp_path_factory) -> dict[str, Path]:
    """The newest snapshot, loaded by a real ZooKeeper started with each compression method, which writes it
    again (at startup) as snapshot.<zxid>.gz / .snappy."""
    source = _newest(zk_files)
    written = {"none": source}
    for method in ("gz", "snappy"):
        base = tmp_path_factory.mktemp(f"zk_{method}")
        (base / "data" / "version-2").mkdir(parents=True)
        shutil.copy(source, base / "data" / "version-2" / source.name)
        server = ZooKeeperServer(base, port=free_port(), heap_mb=128,
                                 jvm_flags=(f"-Dzookeeper.snapshot.compression.method={method}",)).start()
        server.stop()
        found = sorted((base / "data" / "version-2").glob(f"snapshot.*.{method}"))
        assert found, f"ZooKeeper wrote no {method} snapshot; see {server.log_file}"
        written[method] = found[-1]
    return written


@pytest.mark.parametrize("method", ["gz", "snappy"])
def test_compressed_snapshots_decode_to_the_same_nodes(compressed_snapshots, method):
    plain = read_snapshot(compressed_snapshots["none"])
    compressed = read_snapshot(compressed_snapshots[method])
    assert compressed.compression == method
    assert compressed.nodes == plain.nodes


def _corrupt_and_read(tmp_path: Path, source: Path, data: bytes) -> None:
    target = tmp_path / "version-2" / source.name
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(data)
    read_snapshot(target)


def test_truncated_or_flipped_snapshots_are_refused(zk_files, tmp_path):
    source = _newest(zk_files)
    data = source.read_bytes()
    with pytest.raises(SnapshotFileError, match="truncated.*older snapshot"):
        _corrupt_and_read(tmp_path, source, data[:len(data) // 2])  # cut mid-node
    with pytest.raises(SnapshotFileError, match="cut inside a trailer"):
        _corrupt_and_read(tmp_path, source, data[:-10])  # cut mid-trailer
    flipped = bytearray(data)
    flipped[data.index(b'"partitions"') + 3] ^= 0x20  # one byte of a znode's data: only the seal can tell
    with pytest.raises(SnapshotFileError, match="seal after the node list does not match"):
        _corrupt_and_read(tmp_path, source, bytes(flipped))


def test_a_cut_compressed_snapshot_is_refused(compressed_snapshots, tmp_path):
    for method in ("gz", "snappy"):
        source = compressed_snapshots[method]
        with pytest.raises(SnapshotFileError, match="truncated|corrupt"):
            _corrupt_and_read(tmp_path, source, source.read_bytes()[:-7])


def altered_digest(data: bytes, delta: int = 1) -> bytes:
    """The snapshot with its digest trailer's digest changed and the trailer's seal recomputed (a plain 3.6+
    snapshot without the 3.9 trailer)."""
    start = len(data) - DIGEST_TRAILER
    zxid, version, digest = struct.unpack_from(">qiq", data, start)
    body = data[:start] + struct.pack(">qiq", zxid, version, (digest + delta) & 0x7FFFFFFFFFFFFFFF)
    return body + struct.pack(">q", zlib.adler32(body)) + data[-(SEAL_SIZE - 8):]


def test_an_altered_digest_trailer_with_a_recomputed_seal_still_parses(zk_files, tmp_path):
    source = _newest(zk_files)
    target = tmp_path / source.name
    target.write_bytes(altered_digest(source.read_bytes()))
    assert read_snapshot(target).digest == read_snapshot(source).digest + 1  # the replay's digest check refuses it
