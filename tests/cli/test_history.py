"""``kafka-zk-audit history --from-files``: one spark-submit of the packaged app, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

CLI = Path(sys.executable).parent / "kafka-zk-audit"
CHROOT = "/kafka"


def run_history(data_dir: Path, scenario, warehouse: Path, master: str) -> subprocess.CompletedProcess:
    settings = warehouse / "settings.yaml"
    settings.write_text("history: {min_interval: 0.9s}\n")  # the floor --min-interval defaults to
    return subprocess.run(
        [str(CLI), "history", "--from-files", str(data_dir), "--warehouse", str(warehouse), "--config", str(settings),
         "--chroot", CHROOT, "--from-zxid", str(scenario.first_zxid), "--to-zxid", hex(scenario.last_zxid),
         "--spark-master", master, "--json"],
        capture_output=True, text=True, timeout=600,
    )


@pytest.fixture(scope="module")
def history(history_files, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, object, Path]:
    """``history --json`` over the files of the shared history scenario (tests/conftest.py)."""
    data_dir, scenario = history_files
    warehouse = tmp_path_factory.mktemp("warehouse")
    (warehouse / "data_docs").mkdir()  # a Data Docs site, as a gate left it
    (warehouse / "data_docs" / "index.html").write_text("<html><body class=\"gx\"><h1>Data Docs</h1></body></html>")
    proc = run_history(data_dir, scenario, warehouse, "local[2]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), scenario, warehouse


def test_summary_counts_listed_and_short_intervals(history) -> None:
    summary, scenario, _ = history
    assert (summary["first_zxid"], summary["last_zxid"]) == (scenario.first_zxid, scenario.last_zxid)
    assert summary["base"]["zxid"] == scenario.first_zxid - 1
    expected: dict[str, int] = {}
    for interval in scenario.expected:
        expected[interval.check_id] = expected.get(interval.check_id, 0) + 1
    assert {check: n["listed"] for check, n in summary["checks"].items() if n["listed"]} == expected
    assert {check: n["short"] for check, n in summary["checks"].items() if n["short"]} == scenario.short
    assert summary["txns"] > 0 and summary["log_errors"] == []
    assert summary["min_interval_ms"] == 900  # history.min_interval of --config


def test_writes_the_tables_the_page_and_the_summary_last(history) -> None:
    summary, scenario, warehouse = history
    root = Path(summary["path"])
    assert root.parent == warehouse / "history"
    intervals = pq.read_table(root / "intervals").to_pylist()
    assert sorted((r["check_id"], r["start_zxid"], r["end_zxid"]) for r in intervals) == sorted(
        (e.check_id, e.start_zxid, e.end_zxid) for e in scenario.expected)
    changes = pq.read_table(root / "changes").to_pylist()
    assert {r["op"] for r in changes} >= {"base", "setData", "delete", "create"}
    assert pq.read_table(root / "controller_timeline").num_rows >= 2
    assert pq.read_table(root / "leadership").num_rows > 0
    page = (root / "timeline.html").read_text()
    assert "interval_controller_missing" in page and "Controller failovers" in page
    newest = max(p.stat().st_mtime for p in root.rglob("*") if p.is_file())
    assert (root / "history.json").stat().st_mtime == newest


def test_the_page_is_published_in_the_data_docs_with_a_link_on_the_index(history) -> None:
    summary, _, warehouse = history
    docs = warehouse / "data_docs"
    assert (docs / "history" / f"{summary['history_id']}.html").read_text() == Path(summary["page"]).read_text()
    listing = (docs / "history" / "index.html").read_text()
    assert f'href="{summary["history_id"]}.html"' in listing
    index = (docs / "index.html").read_text()
    assert index.startswith('<html><body class="gx"><div id="kafka-zk-audit-history"')
    assert 'href="history/index.html"' in index and index.endswith("<h1>Data Docs</h1></body></html>")
