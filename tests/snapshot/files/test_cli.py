"""``kafka-zk-audit snapshot --from-files`` end to end, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.contract.warehouse import Warehouse

pytestmark = pytest.mark.zk


def _cli(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kafka_zk_audit.cli.main", "snapshot", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def test_snapshot_from_files_prints_the_manifest(zk_files, tmp_path):
    done = _cli("--from-files", str(zk_files.data_dir), "--cluster", "offline", "--log-dir", str(zk_files.log_dir),
                "--at-zxid", hex(zk_files.early.zxid), "--warehouse", str(tmp_path / "wh"))
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)
    assert manifest["source"] == "files" and manifest["cluster"] == "offline"
    assert manifest["zxid"] == zk_files.early.zxid and manifest["digest_verified"] is True
    table = pq.read_table(Warehouse(str(tmp_path / "wh")).snapshot_dir(manifest["snapshot_id"]))
    assert table.num_rows == manifest["znodes"] > 100


def test_bad_files_or_arguments_exit_2_with_what_to_do(zk_files, tmp_path):
    missing = _cli("--from-files", str(tmp_path / "nope"), "--warehouse", str(tmp_path / "wh"))
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    empty = _cli("--from-files", str(tmp_path), "--warehouse", str(tmp_path / "wh"))
    assert empty.returncode == 2 and "no snapshot.<zxid> file" in empty.stderr and "dataDir" in empty.stderr
    both = _cli("--from-files", str(zk_files.data_dir), "--at-zxid", "5", "--at-time", "2026-01-01T00:00:00Z")
    assert both.returncode == 2 and "not both" in both.stderr
    twice = _cli("--from-files", f"shop={zk_files.data_dir}", "--cluster", "offline")
    assert twice.returncode == 2 and "the cluster is named twice: shop= and --cluster offline" in twice.stderr
    loose = _cli("--zk", "127.0.0.1:1", "--at-zxid", "5")
    assert loose.returncode == 2 and "--from-files" in loose.stderr
