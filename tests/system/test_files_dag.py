"""One DAG run from ZooKeeper's own files: snapshot, audit and gate rebuilt offline, and the history of the logs.

``airflow dags test`` on SQLite with the ``from_files`` param pointing at the data dir of a real ZooKeeper that
recorded kafka_zk_audit_testing.history_scenario (the session fixture ``history_files``). The oracle of the
history is the scenario's own record of what it wrote (the zxids ZooKeeper returned for each write, and how long it
held each broken state), not the log decoder.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit_testing.history_scenario import Scenario, run_scenario
from kafka_zk_audit_testing.zk_server import free_port

pytestmark = pytest.mark.dag

CHROOT = "/kafka"  # where tests/conftest.py's history_files wrote the scenario
LABEL = "files"
HOLD_MS = inspect.signature(run_scenario).parameters["hold_s"].default * 1000  # how long a listed state was held


@dataclass
class FilesRun:
    returncode: int
    log: str
    warehouse: Path
    summary: dict[str, Any]
    history: dict[str, Any]
    intervals: list[dict[str, Any]]
    scenario: Scenario


@pytest.fixture(scope="module")
def files_run(history_files, tmp_path_factory) -> FilesRun:
    data_dir, scenario = history_files
    tmp = tmp_path_factory.mktemp("files-dag")
    warehouse = tmp / "wh"
    env = airflow_env(airflow_home=tmp / "airflow",
                      base={k: v for k, v in os.environ.items()
                            if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"})
    # the cluster's connection only names the ensemble and gives the chroot: nothing listens there
    env["AIRFLOW_CONN_ZOOKEEPER_DEFAULT"] = json.dumps(
        {"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}", "extra": {"chroot": CHROOT}})
    ensure_metadata_db(env)
    result = run_dag_once(env, {"warehouse": str(warehouse), "from_files": str(data_dir), "run_label": LABEL},
                          warehouse / f"{LABEL}.log")
    log = result.log_path.read_text()
    summaries = list(warehouse.glob(f"runs/*-{LABEL}/summary.json"))
    assert summaries, f"no summary; log tail:\n{log[-5000:]}"
    histories = list(warehouse.glob("history/*/history.json"))
    assert len(histories) == 1, f"{histories}; log tail:\n{log[-5000:]}"
    history = json.loads(histories[0].read_text())
    intervals = pq.read_table(Path(history["path"]) / "intervals").to_pylist()
    return FilesRun(result.returncode, log, warehouse, json.loads(summaries[0].read_text()), history, intervals,
                    scenario)


def test_the_snapshot_audit_and_gate_ran_on_the_files(files_run):
    summary = files_run.summary
    manifest = json.loads((files_run.warehouse / "snapshots" / f"snapshot_id={summary['snapshot_id']}"
                           / "_MANIFEST.json").read_text())
    assert manifest["source"] == "files" and manifest["chroot"] == CHROOT
    assert manifest["zxid"] >= files_run.scenario.last_zxid
    assert (files_run.warehouse / "runs" / summary["snapshot_id"] / "audit.json").exists()
    assert "error" not in summary["gate"], summary["gate"]
    assert isinstance(summary["gate"]["failed_expectations"], int)


def test_the_history_reads_every_log_of_the_cluster_the_first_time(files_run):
    history, scenario = files_run.history, files_run.scenario
    assert history["cluster"] == "default" and history["chroot"] == CHROOT
    assert history["min_interval_ms"] == 1000  # the packaged setting history.min_interval
    assert history["first_zxid"] < scenario.first_zxid and history["last_zxid"] >= scenario.last_zxid
    assert history["log_errors"] == []
    submit = next(line for line in files_run.log.splitlines() if "Spark-Submit cmd:" in line and "zk_history" in line)
    assert f"--chroot {CHROOT}" in submit and "--cluster default" in submit and "--from-zxid" not in submit


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
    assert (docs / "history" / f"{history['history_id']}.html").read_text() == page.read_text()
    assert f'href="{history["history_id"]}.html"' in (docs / "history" / "index.html").read_text()
    index = (docs / "index.html").read_text()
    assert 'id="kafka-zk-audit-history"' in index and 'href="history/index.html"' in index
    listed = sum(n["listed"] for n in history["checks"].values())
    assert f"history of default: {listed} interval(s) listed" in files_run.log
