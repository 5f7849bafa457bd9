"""``kafka-zk-audit run --config``: run 2 of the shared system run (tests/system/fleet_run.py), as an operator types it.

The settings list the whole fleet, one of whose clusters is dead and one secured with digest ACLs: the run audits
every live cluster, prints each summary and the fleet's, and exits 3 naming the task that failed, its error and the
log; the secured cluster's password reaches no output (tests/system/test_dag_e2e.py checks every secret).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.system.fleet_run import AUDITED, CLUSTERS, DEAD, SystemRun

PROGRESS = re.compile(r"^\[\d\d:\d\d:\d\d\] (\S+) (started|done in|failed after|skipped after)(?: (\d+\.\d)s)?$")


def test_exit_3_names_the_failed_task_its_error_and_the_log(system: SystemRun):
    second = system.runs[1]
    assert second.returncode == 3, second.stdout + second.stderr[-4000:]
    assert "the audit could not complete: task 'snapshot' failed:" in second.stderr
    assert "cannot reach ZooKeeper at 127.0.0.1:" in second.stderr  # the dead cluster's own reason
    log_line = next(line for line in second.stderr.splitlines() if line.startswith("Airflow log:"))
    log_path = Path(log_line.split(":", 1)[1].strip())
    assert f"the task's log is in {log_path}" in second.stderr and log_path.exists()
    assert f"  {DEAD}: NOT AUDITED" in second.stdout
    assert "[DAG TEST] starting task_id=snapshot" in second.stderr  # -v streams the run's log as it goes


def test_run_prints_every_summary_and_the_fleet(system: SystemRun):
    second = system.runs[1]
    for name in AUDITED:
        assert f"summary: {second.fleet['clusters'][name]['summary']}" in second.stdout, name
    assert "controller_missing: 1" in second.stdout  # the secured cluster, read with its login
    assert "gate: FAILED" in second.stdout and "data docs:" in second.stdout
    assert f"fleet: {len(AUDITED) + 1} cluster(s)" in second.stdout and "fleet summary:" in second.stdout
    assert "KRaft migration readiness report:" in second.stdout
    assert (system.warehouse / "data_docs" / "index.html").exists()


def test_a_secured_cluster_is_read_with_the_connections_login(system: SystemRun):
    for run in system.runs:
        findings = run.findings("secured")
        assert [(f["check_id"], f["path"]) for f in findings if f["check_id"] == "controller_missing"] == [
            ("controller_missing", system.secured_plant.path)]
        assert "secured" in run.fleet["red"]


def test_the_run_says_when_each_task_starts_and_ends_with_its_duration(system: SystemRun):
    """Besides the whole log (``-v``), run 2 printed each task as it started and ended, with its duration; the
    mapped tasks by cluster, the dead cluster's snapshot as failed."""
    events = [match.groups() for line in system.runs[1].stderr.splitlines() if (match := PROGRESS.match(line))]
    tasks = [task for task, what, _ in events if what == "started"]
    ended = {task: (what, seconds) for task, what, seconds in events if what != "started"}
    assert set(tasks) == set(ended), events
    assert {f"snapshot[{name}]" for name in CLUSTERS} <= set(tasks)
    assert ended[f"snapshot[{DEAD}]"][0] == "failed after"
    assert all(ended[f"snapshot[{name}]"][0] == "done in" for name in AUDITED)
    firsts = [tasks.index(task) for task in ("clusters", f"snapshot[{AUDITED[0]}]", "audit", "gate", "summary")]
    assert firsts == sorted(firsts), tasks
    assert all(float(seconds) >= 0 for _, seconds in ended.values())
