"""A cluster read from ZooKeeper's own files: snapshot, audit and gate rebuilt offline, and the history of the logs.

The ``files`` cluster of the shared system run (tests/system/fleet_run.py) has a ``files:`` setting pointing at the
data dir of a real ZooKeeper that recorded kafka_zk_audit_testing.history_scenario (the session fixture
``history_files``). The oracle of the history is the scenario's own record of what it wrote (the zxids ZooKeeper
returned for each write, and how long it held each broken state), not the log decoder.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit_testing.browser import text_of
from kafka_zk_audit_testing.history_scenario import Scenario, run_scenario
from tests.system.fleet_run import FILES_CHROOT as CHROOT
from tests.system.fleet_run import SystemRun

CLUSTER = "files"
HOLD_MS = inspect.signature(run_scenario).parameters["hold_s"].default * 1000  # how long a listed state was held


@dataclass
class FilesRun:
    returncode: int
    log: str
    warehouse: Path
    after_first: Path  # the warehouse as run 1 left it (retention prunes its raw snapshots in run 2)
    summary: dict[str, Any]
    history: dict[str, Any]
    later_log: str  # run 2's Airflow log
    intervals: list[dict[str, Any]]
    scenario: Scenario


@pytest.fixture
def files_run(system: SystemRun) -> FilesRun:
    first = system.runs[0]
    histories = sorted(system.warehouse.glob("history/*/history.json"), key=lambda p: p.parent.name)
    found = [json.loads(p.read_text()) for p in histories]
    found = [h for h in found if h["cluster"] == CLUSTER]
    assert len(found) == 1, found  # run 2 has nothing new to read (test_the_next_history_...)
    history = found[0]
    intervals = pq.read_table(Path(history["path"]) / "intervals").to_pylist()
    return FilesRun(first.returncode, first.log, system.warehouse, system.after_first,
                    first.summary(CLUSTER), history, system.runs[1].log, intervals, system.files_scenario)


def test_the_snapshot_audit_and_gate_ran_on_the_files(files_run):
    summary = files_run.summary
    manifest = json.loads((files_run.after_first / "snapshots" / f"snapshot_id={summary['snapshot_id']}"
                           / "_MANIFEST.json").read_text())
    assert manifest["source"] == "files" and manifest["chroot"] == CHROOT
    assert manifest["zxid"] >= files_run.scenario.last_zxid
    assert manifest["source_files"]["snapshot"].startswith("snapshot.") and manifest["source_files"]["logs"]
    assert manifest["digest_verified"] is True and manifest["file_format"] == "3.6+"
    assert (files_run.warehouse / "runs" / summary["snapshot_id"] / "audit.json").exists()
    assert "error" not in summary["gate"], summary["gate"]
    assert isinstance(summary["gate"]["failed_expectations"], int)


def test_the_history_reads_every_log_of_the_cluster_the_first_time(files_run):
    history, scenario = files_run.history, files_run.scenario
    assert history["cluster"] == CLUSTER and history["chroot"] == CHROOT
    assert history["min_interval_ms"] == 1000  # the packaged setting history.min_interval
    assert history["first_zxid"] < scenario.first_zxid and history["last_zxid"] >= scenario.last_zxid
    assert history["log_errors"] == []
    submit = next(line for line in files_run.log.splitlines() if "Spark-Submit cmd:" in line and "zk_history" in line)
    # (run 1's apps run on a standalone master's executors: tests/airflow/test_standalone_master.py)
    assert f"--chroot {CHROOT}" in submit and f"--cluster {CLUSTER}" in submit and "--from-zxid" not in submit


def test_the_history_lists_what_the_scenario_did_with_its_zxids_and_durations(files_run):
    scenario = files_run.scenario
    inside = [r for r in files_run.intervals if scenario.first_zxid <= r["start_zxid"] <= scenario.last_zxid]
    assert sorted((r["check_id"], r["start_zxid"], r["end_zxid"]) for r in inside) == sorted(
        (e.check_id, e.start_zxid, e.end_zxid) for e in scenario.expected)
    by_check = {r["check_id"]: r for r in inside}
    for check_id in ("interval_under_replicated", "interval_controller_missing"):
        lasted = by_check[check_id]["duration_ms"]
        assert HOLD_MS - 50 <= lasted <= HOLD_MS + 3000, (check_id, lasted)
    short = {check: n["short"] for check, n in files_run.history["checks"].items() if n["short"]}
    assert short.get("interval_controller_missing", 0) >= scenario.short["interval_controller_missing"]


def test_the_timeline_page_is_in_the_data_docs_and_linked_from_their_index(files_run):
    history, docs = files_run.history, files_run.warehouse / "data_docs"
    page = Path(history["page"])
    assert page.exists() and "interval_under_replicated" in page.read_text()
    # the same page, its links (assets, navbar) relative to where each copy is
    assert text_of((docs / "history" / f"{history['history_id']}.html").read_text()) == text_of(page.read_text())
    assert f'href="{history["history_id"]}.html"' in (docs / "history" / "index.html").read_text()
    index = (docs / "index.html").read_text()
    assert 'id="kafka-zk-audit-history"' in index and 'href="history/index.html"' in index
    listed = sum(n["listed"] for n in history["checks"].values())
    assert f"history of {CLUSTER}: {listed} interval(s) listed" in files_run.log


def test_the_next_history_reads_from_where_the_previous_one_ended(files_run):
    """The logs did not grow between the runs: run 2's window starts after run 1's last zxid, holds no transaction,
    and its history task is skipped without a Spark application."""
    start = files_run.history["last_zxid"] + 1
    assert (f"skipped: no transaction in the logs of cluster {CLUSTER} since zxid {start:#x}: no new history"
            in files_run.later_log), files_run.later_log[-3000:]
    submits = [line for line in files_run.later_log.splitlines() if "Spark-Submit cmd:" in line]
    assert submits and not [line for line in submits if "zk_history" in line], submits
