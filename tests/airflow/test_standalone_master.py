"""The audit and the history on a Spark standalone master: a cluster master is a connection change.

Run 1 of the shared system run (tests/system/fleet_run.py) is a whole DAG run whose ``spark_default`` connection names
a standalone master with two one-core workers on loopback: the DAG's own operators (``AuditSparkSubmitOperator``,
``ZooKeeperHistoryOperator``) submit the audit app over every live snapshot of the fleet and the history app over the
``files`` cluster's ZooKeeper files to it. What those apps wrote is what every test of run 1 checks against its own
oracle (the planted problems found on their subjects, clean clusters without a finding, readiness, the history's
intervals against the scenario: tests/system); this test checks that they ran on the cluster's executors.
"""

from __future__ import annotations

import pytest

from tests.system.fleet_run import SystemRun

pytestmark = pytest.mark.spark


def test_on_a_standalone_master_the_fleet_runs_its_audit_and_history_on_the_executors(system: SystemRun):
    first = system.runs[0]
    log = first.log
    submits = [line for line in log.splitlines() if "Spark-Submit cmd:" in line]
    assert len(submits) == 2, submits
    assert all(f"spark-submit --master {system.spark_master} " in line for line in submits), submits
    assert [app for app in ("audit_snapshot.py", "zk_history.py") if any(app in line for line in submits)] == [
        "audit_snapshot.py", "zk_history.py"]
    assert all("spark.driver.host" not in line for line in submits)  # the driver's address is left to Spark
    # the apps really ran on the cluster's executors, not in a local driver that ignored the master
    assert "Granted executor ID" in log and "Starting executor ID driver" not in log
    for name in ("worker.log", "worker2.log"):  # each one-core worker launched an executor for each app
        launched = (system.spark_dir / name).read_text().count("Asked to launch executor")
        assert launched >= 2, (name, launched)
    # run 2, the packaged default, ran on local[*]
    assert "spark-submit --master local[*] " in system.runs[1].log
