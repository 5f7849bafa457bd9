"""``kafka-zk-audit history --from-files``: one spark-submit of the packaged app, end to end, over the files of a real
ZooKeeper that recorded the shared history scenario (tests/conftest.py). The oracle of the intervals is the zxids of
the scenario's writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit_testing.browser import text_of

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
    # the same page, its links relative to where each copy is
    assert text_of((docs / "history" / f"{summary['history_id']}.html").read_text()) == text_of(
        Path(summary["page"]).read_text())
    listing = (docs / "history" / "index.html").read_text()
    assert f'href="{summary["history_id"]}.html"' in listing
    index = (docs / "index.html").read_text()
    assert index.startswith('<html><body class="gx"><div id="kafka-zk-audit-history"')
    assert 'href="history/index.html"' in index and index.endswith("<h1>Data Docs</h1></body></html>")


def written(history, table: str) -> list[dict]:
    """The rows of one of the tables the app wrote."""
    summary, _, _ = history
    return pq.read_table(Path(summary["path"]) / table).to_pylist()


def test_each_broken_state_is_one_interval_bounded_by_the_writes(history) -> None:
    _, scenario, _ = history
    got = sorted((r["check_id"], r["start_zxid"], r["end_zxid"], r["topic"], r["partition"], r["group_id"])
                 for r in written(history, "intervals"))
    want = sorted((e.check_id, e.start_zxid, e.end_zxid, e.topic, e.partition, e.group_id)
                  for e in scenario.expected)
    assert got == want


def test_listed_intervals_carry_their_evidence_and_duration(history) -> None:
    listed = written(history, "intervals")
    for row in listed:
        assert row["severity"] in ("critical", "error", "warning")
        assert row["duration_ms"] >= 1_000 and row["end_time"] > row["start_time"]
        assert row["detail"] and row["path"]
    not_in_isr = next(r for r in listed if r["check_id"] == "interval_leader_not_in_isr")
    assert "not in isr" in not_in_isr["detail"] and "leader_epoch 7" in not_in_isr["detail"]


def test_healthy_changes_give_no_interval(history) -> None:
    _, scenario, _ = history
    subjects = {(r["topic"], r["partition"]) for r in written(history, "intervals")}
    assert not subjects & set(scenario.healthy_partitions)
    healthy = [r for r in written(history, "leadership") if (r["topic"], r["partition"]) in scenario.healthy_partitions]
    assert any(r["leader_epoch"] == 5 for r in healthy)  # the healthy leader change is in the history


def test_controller_failover_timeline(history) -> None:
    _, scenario, _ = history
    failovers = sorted(written(history, "controller_timeline"), key=lambda r: r["from_zxid"])
    assert [f["broker_id"] for f in failovers[-2:]] == scenario.controller_ids
    slow = failovers[-2]
    assert slow["gap_ms"] >= 1_000 and slow["gap_from_zxid"] < slow["from_zxid"]
    assert failovers[-1]["epoch"] == failovers[-2]["epoch"] + 1
    assert failovers[-1]["to_zxid"] is None  # still the controller at the end of the window
