"""The package as a user installs it: a wheel, a new venv, ``-c constraints.txt``, one DAG file.

Nothing of the repository is on the installed side: the wheel is installed non-editable into a venv made
from the base interpreter, the DAGs folder holds only a copy of ``dags/kafka_zk_audit.py``, and every
command runs outside the checkout. That venv's Airflow runs the scheduler's run (tests/system/scheduled_run.py):
the Spark app and the GX suites of its hourly run must come from the installed package.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.system.scheduled_run import PLANTED, REPO, Installed, Scheduled, outside_env

pytestmark = [pytest.mark.dag, pytest.mark.zk]


def test_the_wheel_ships_the_runtime_package_with_its_spark_app_and_suites(installed: Installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert "kafka_zk_audit/spark_apps/audit_snapshot.py" in names
    suites = {Path(n).name for n in names if n.startswith("kafka_zk_audit/expectations/") and n.endswith(".json")}
    assert suites == {p.name for p in (REPO / "expectations").glob("*.json")}
    assert "kafka_zk_audit/contract/default_settings.yaml" in names
    assert not [n for n in names if n.startswith("kafka_zk_audit_testing/")]
    source = {str(p.relative_to(REPO / "plugins")) for p in (REPO / "plugins/kafka_zk_audit").rglob("*.py")}
    assert source <= set(names), f"modules missing from the wheel: {sorted(source - set(names))}"


def test_installed_package_runs_the_whole_dag_from_one_copied_dag_file(installed: Installed, scheduled: Scheduled,
                                                                       tmp_path):
    python = installed.venv / "bin" / "python"
    where = subprocess.run([str(python), "-c", "import importlib.util as u, kafka_zk_audit; "
                            "print(kafka_zk_audit.__file__); print(u.find_spec('kafka_zk_audit_testing'))"],
                           cwd=tmp_path, env=outside_env(), capture_output=True, text=True, check=True).stdout.split()
    assert str(installed.venv) in where[0] and where[1] == "None", where

    log = scheduled.scheduled_audit_log
    [hourly] = scheduled.hourly_snapshot_ids  # the live cluster's (the dead one has no snapshot)
    assert hourly.endswith("-live"), hourly
    summary = json.loads((scheduled.warehouse / "runs" / hourly / "summary.json").read_text())
    assert summary["checks"][PLANTED] == 1, summary["checks"]  # the audit found what the test planted
    assert "error" not in summary["gate"], summary["gate"]
    assert summary["gate"]["success"] is False and summary["gate"]["failed_expectations"] >= 1, summary["gate"]
    # the Spark app and the suites came from the installed package, not from the checkout
    submit = next(line for line in log.splitlines() if "Spark-Submit cmd:" in line)
    assert f"{installed.venv}/lib/" in submit and "/kafka_zk_audit/spark_apps/audit_snapshot.py" in submit, submit
    assert str(REPO) not in submit
    suites = next(line for line in scheduled.scheduled_gate_log.splitlines() if "suites from " in line)
    assert f"{installed.venv}/lib/" in suites and str(REPO) not in suites, suites
    # the first app of this Java and Spark wrote the driver's class-data archive as it exited, and it was kept
    cache = scheduled.warehouse.parent / "installed-jvm-cache"
    assert f"-XX:ArchiveClassesAtExit={cache}/spark-driver-" in submit, submit
    [archive] = cache.iterdir()
    assert archive.name.startswith("spark-driver-") and archive.suffix == ".jsa" and archive.stat().st_size > 10**7
    validations = list((scheduled.warehouse / "gx").rglob("validations/**/*.json"))
    assert validations, "the gate stored no validation results"
    assert (scheduled.warehouse / "data_docs" / "index.html").exists()
