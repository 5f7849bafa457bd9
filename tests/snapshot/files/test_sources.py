"""Where ZooKeeper's files come from: a local folder in place, an fsspec URL (a real HTTP server on 127.0.0.1,
``file://``) fetched into a temporary folder with only what a rebuild needs, logs without their zero tail."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_zk_audit.snapshot.files.sources import (
    FilesSourceError,
    RemoteFile,
    copy_log,
    plan_fetch,
    safe_location,
    zookeeper_files,
)
from kafka_zk_audit.snapshot.files.txnlog import iter_txns
from kafka_zk_audit_testing.zk_server import free_port


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _zxid(name: str) -> int:
    return int(name.split(".")[1], 16)


def _expected_plan(version_dir: Path, at_zxid: int | None = None) -> list[str]:
    """What a rebuild needs, computed from the file names: the newest two snapshots at or before the target,
    the last log starting at or before the older of them and every later one (up to the target). When no log
    starts that early (the older snapshot is ``snapshot.0``, the first log ``log.1``), every log is needed, as in
    ZooKeeper's ``FileTxnLog.getLogFiles``."""
    snapshots = sorted((n for n in _names(version_dir) if n.startswith("snapshot.")), key=_zxid)
    logs = sorted((n for n in _names(version_dir) if n.startswith("log.")), key=_zxid)
    if at_zxid is not None:
        snapshots = [n for n in snapshots if _zxid(n) <= at_zxid]
        logs = [n for n in logs if _zxid(n) <= at_zxid]
    kept = snapshots[-2:]
    earlier = [i for i, n in enumerate(logs) if _zxid(n) <= _zxid(kept[0])]
    return sorted(kept + logs[earlier[-1] if earlier else 0:])


def _assert_same_content(staged: Path, original: Path) -> None:
    """Snapshots byte for byte; logs with the very same transactions (and the copy a prefix of the original)."""
    for path in staged.iterdir():
        source = original / path.name
        if path.name.startswith("snapshot."):
            assert path.read_bytes() == source.read_bytes(), path.name
        else:
            copied, whole = path.read_bytes(), source.read_bytes()
            assert whole.startswith(copied) and not whole[len(copied):].strip(b"\0"), path.name
            assert list(iter_txns(path)) == list(iter_txns(source)), path.name


def test_the_plan_takes_the_newest_snapshot_at_the_target_one_older_and_the_logs_from_before_them():
    entries = [RemoteFile(n) for n in ("snapshot.0", "snapshot.c8", "snapshot.190", "snapshot.258.snappy",
                                       "log.1", "log.c9", "log.191", "log.259", "zoo.cfg", "acceptedEpoch")]
    newest = plan_fetch(entries)
    assert [s.name for s in newest.snapshots] == ["snapshot.258.snappy", "snapshot.190"]
    assert [lg.name for lg in newest.logs] == ["log.c9", "log.191", "log.259"]  # log.c9 holds 0x190's zxid
    at = plan_fetch(entries, at_zxid=0x1a0, fallbacks=2)
    assert [s.name for s in at.snapshots] == ["snapshot.190", "snapshot.c8", "snapshot.0"]
    assert [lg.name for lg in at.logs] == ["log.1", "log.c9", "log.191"]
    at_time = plan_fetch([RemoteFile("snapshot.5", mtime=datetime(2026, 1, 2, tzinfo=UTC)),
                          RemoteFile("snapshot.9", mtime=datetime(2026, 1, 4, tzinfo=UTC)), RemoteFile("log.1")],
                         at_time=datetime(2026, 1, 3, tzinfo=UTC), fallbacks=0)
    assert [s.name for s in at_time.snapshots] == ["snapshot.5"]
    with pytest.raises(FilesSourceError, match="no snapshot"):
        plan_fetch(entries, at_zxid=-1)


def test_a_log_is_copied_up_to_its_last_record_without_the_preallocated_zeros(zookeeper_data):
    logs = sorted((zookeeper_data / "version-2").glob("log.*"))
    for path in logs:
        copy = io.BytesIO()
        with open(path, "rb") as source:
            written = copy_log(source, copy)
        whole = path.read_bytes()
        assert written == len(copy.getvalue()) < len(whole)  # ZooKeeper preallocates 64 MiB blocks
        assert whole.startswith(copy.getvalue()) and not whole[written:].strip(b"\0")
        assert list(iter_txns(copy.getvalue())) == list(iter_txns(path))
    assert sum(1 for path in logs for _ in iter_txns(path)) > 20


def test_a_local_folder_is_read_in_place(zookeeper_data):
    with zookeeper_files(str(zookeeper_data)) as staged:
        assert staged.data_dir == str(zookeeper_data) and staged.fetched == [] and staged.log_dir is None
    with pytest.raises(FilesSourceError, match="no such directory"):
        with zookeeper_files(str(zookeeper_data / "missing")):
            pass


@pytest.fixture(scope="module")
def http_root(zookeeper_data, tmp_path_factory) -> str:
    """``python -m http.server`` on 127.0.0.1 serving a copy of the dataDir under /zk/data/."""
    root = tmp_path_factory.mktemp("http-root")
    shutil.copytree(zookeeper_data, root / "zk" / "data")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/zk/"
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_an_http_url_fetches_what_the_rebuild_needs_into_a_folder_removed_afterwards(http_root, zookeeper_data):
    version_dir = zookeeper_data / "version-2"
    with zookeeper_files(http_root + "data/") as staged:  # the dataDir: its version-2/ is found
        staged_dir = Path(staged.data_dir) / "version-2"
        assert _names(staged_dir) == sorted(staged.fetched) == _expected_plan(version_dir)
        assert staged.origin == http_root + "data/"
        _assert_same_content(staged_dir, version_dir)
        assert staged.bytes == sum(p.stat().st_size for p in staged_dir.iterdir())
        assert staged.bytes < sum(p.stat().st_size for p in version_dir.iterdir())
    assert not Path(staged.data_dir).exists()


def test_an_http_url_at_a_zxid_fetches_the_snapshots_before_it(http_root, zookeeper_data):
    version_dir = zookeeper_data / "version-2"
    snapshots = sorted(_zxid(n) for n in _names(version_dir) if n.startswith("snapshot."))
    target = snapshots[-2] + 1  # after the second newest snapshot, before the newest
    with zookeeper_files(http_root + "data/version-2/", at_zxid=target) as staged:
        staged_dir = Path(staged.data_dir) / "version-2"
        assert _names(staged_dir) == _expected_plan(version_dir, at_zxid=target)
        assert max(_zxid(n) for n in _names(staged_dir) if n.startswith("snapshot.")) == snapshots[-2]


def test_a_file_url_and_a_log_dir_apart(zookeeper_data, tmp_path):
    version_dir = zookeeper_data / "version-2"
    data, logs = tmp_path / "data" / "version-2", tmp_path / "logs" / "version-2"
    data.mkdir(parents=True)
    logs.mkdir(parents=True)
    for path in version_dir.iterdir():
        shutil.copy(path, (logs if path.name.startswith("log.") else data) / path.name)
    with zookeeper_files((tmp_path / "data").as_uri(), log_location=(tmp_path / "logs").as_uri()) as staged:
        staged_dir = Path(staged.data_dir) / "version-2"
        assert _names(staged_dir) == _expected_plan(version_dir)
        _assert_same_content(staged_dir, version_dir)


def test_a_rebuild_from_fetched_files_equals_one_from_the_original(http_root, zookeeper_data):
    from kafka_zk_audit.snapshot.files.replay import rebuild_tree

    with zookeeper_files(http_root + "data/") as staged:
        fetched = rebuild_tree(staged.data_dir)
    original = rebuild_tree(zookeeper_data)
    assert fetched.zxid == original.zxid and fetched.nodes == original.nodes
    assert "/brokers/ids" in original.nodes and len(original.nodes) > 100


def test_a_snapshot_from_fetched_files_is_named_by_their_origin_not_the_staging_folder(http_root, tmp_path):
    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit.snapshot.files.rebuild import write_new_offline_snapshot

    warehouse = Warehouse(str(tmp_path / "wh"))
    with zookeeper_files(http_root + "data/") as staged:
        manifest = write_new_offline_snapshot(staged.data_dir, warehouse, "fetched", log_dir=staged.log_dir,
                                              origin=staged.origin)
    written = warehouse.read_json(warehouse.manifest_path(manifest["snapshot_id"]))
    assert written == manifest and written["source"] == "files"
    assert written["source_files"]["dir"] == http_root + "data/"
    assert written["ensemble"] == written["identity"] == f"files:{http_root}data/"


def test_unusable_locations_say_what_to_do(tmp_path):
    with pytest.raises(FilesSourceError, match="s3fs"):  # the protocol's package is not installed here
        with zookeeper_files("s3://backups/zookeeper/"):
            pass
    with pytest.raises(FilesSourceError, match="carries a password") as refused:
        with zookeeper_files("https://auditor:hunter2@127.0.0.1:1/zk/"):
            pass
    assert "hunter2" not in str(refused.value)
    assert safe_location("https://auditor:hunter2@files.example:8443/zk/?sig=abc") == \
        "https://auditor@files.example:8443/zk/"
    with pytest.raises(FilesSourceError, match="no such directory"):
        with zookeeper_files((tmp_path / "nothing").as_uri()):
            pass
    (tmp_path / "empty").mkdir()
    with pytest.raises(FilesSourceError, match="no snapshot"):
        with zookeeper_files((tmp_path / "empty").as_uri()):
            pass
