"""The offline rebuild against its oracle, the live walk of the same server: identical rows at the same zxid."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.snapshot_table import ARROW_SCHEMA
from kafka_zk_audit.contract.warehouse import Warehouse, read_manifest
from kafka_zk_audit.snapshot.files.processtxn import OfflineFilesError
from kafka_zk_audit.snapshot.files.rebuild import write_new_offline_snapshot, write_offline_snapshot
from kafka_zk_audit.snapshot.secrets import key_path

pytestmark = pytest.mark.zk


def _warehouse_sharing_key(zk_files, folder) -> Warehouse:
    """A new warehouse with the live one's fingerprint key, so secrets fingerprint alike in both."""
    warehouse = Warehouse(str(folder))
    source = Path(key_path(zk_files.warehouse))
    target = Path(key_path(warehouse))
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    return warehouse


def _rows(warehouse: Warehouse, snapshot_id: str) -> list[dict]:
    table = pq.read_table(warehouse.snapshot_dir(snapshot_id), schema=ARROW_SCHEMA)
    return sorted(table.to_pylist(), key=lambda row: row["path"])


@pytest.mark.parametrize("moment", ["early", "late"])
def test_rebuild_at_a_live_snapshots_zxid_gives_its_rows(zk_files, tmp_path, moment):
    live = getattr(zk_files, moment)
    warehouse = _warehouse_sharing_key(zk_files, tmp_path / "wh")
    manifest = write_offline_snapshot(
        str(zk_files.data_dir), warehouse, "20260101T000002Z-files", log_dir=str(zk_files.log_dir),
        at_zxid=live.zxid, settings=zk_files.settings, cluster="offline",
    )
    expected = _rows(zk_files.warehouse, live.snapshot_id)
    rebuilt = _rows(warehouse, "20260101T000002Z-files")
    assert len(expected) > 100
    assert [row["path"] for row in rebuilt] == [row["path"] for row in expected]
    assert rebuilt == expected  # every column of every row

    live_manifest = read_manifest(zk_files.warehouse, live.snapshot_id)
    assert live_manifest["source"] == "live"
    assert set(live_manifest) <= set(manifest)
    assert manifest["source"] == "files"
    assert manifest["zxid"] == live.zxid == manifest["sync_zxid"]["start"] == manifest["sync_zxid"]["end"]
    assert manifest["digest_verified"] is True
    assert manifest["file_format"] == "3.6+"
    assert manifest["ensemble"] == zk_files.settings.hosts and manifest["chroot"] == "/kafka"
    assert manifest["znodes"] == live_manifest["znodes"] and manifest["bytes"] == live_manifest["bytes"]
    assert manifest["zxid_window"] == live_manifest["zxid_window"]
    assert manifest["znode_acls"] == live_manifest["znode_acls"]
    assert manifest["source_files"]["snapshot"].startswith("snapshot.")
    assert all(name.startswith("log.") for name in manifest["source_files"]["logs"])


def test_rebuild_at_time_gives_the_earlier_live_snapshot(zk_files, tmp_path):
    warehouse = _warehouse_sharing_key(zk_files, tmp_path / "wh")
    manifest = write_new_offline_snapshot(
        str(zk_files.data_dir), warehouse, "at-time", log_dir=str(zk_files.log_dir), at_time=zk_files.early.time,
        chroot="/kafka",
    )
    assert manifest["zxid"] >= zk_files.early.zxid
    assert manifest["ensemble"].startswith("files:")
    assert _rows(warehouse, manifest["snapshot_id"]) == _rows(zk_files.warehouse, zk_files.early.snapshot_id)


def test_include_and_exclude_select_the_rows_a_live_walk_would(zk_files, tmp_path):
    warehouse = _warehouse_sharing_key(zk_files, tmp_path / "wh")
    options = SnapshotOptions(include=("/brokers/topics",), exclude=("/brokers/topics/topic-0001",))
    manifest = write_new_offline_snapshot(str(zk_files.data_dir), warehouse, log_dir=str(zk_files.log_dir),
                                          at_zxid=zk_files.late.zxid, chroot="/kafka", options=options)
    paths = [row["path"] for row in _rows(warehouse, manifest["snapshot_id"])]
    expected = [row["path"] for row in _rows(zk_files.warehouse, zk_files.late.snapshot_id)
                if options.wants(row["path"])]
    assert paths == expected and paths


def test_a_missing_chroot_or_a_zxid_past_the_logs_writes_nothing(zk_files, tmp_path):
    warehouse = _warehouse_sharing_key(zk_files, tmp_path / "wh")
    with pytest.raises(OfflineFilesError, match="chroot /nope does not exist"):
        write_offline_snapshot(str(zk_files.data_dir), warehouse, "20260101T000003Z", log_dir=str(zk_files.log_dir),
                               chroot="/nope")
    with pytest.raises(OfflineFilesError, match="before the requested zxid"):
        write_offline_snapshot(str(zk_files.data_dir), warehouse, "20260101T000004Z", log_dir=str(zk_files.log_dir),
                               at_zxid=zk_files.final_zxid + 5)
    assert not (tmp_path / "wh" / "snapshots").exists() or not list((tmp_path / "wh" / "snapshots").iterdir())
