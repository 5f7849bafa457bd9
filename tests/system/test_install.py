"""The package as a user installs it: a wheel, a new venv, ``-c constraints.txt``, one DAG file, one DAG run.

Nothing of the repository is on the installed side: the wheel is installed non-editable into a venv made
from the base interpreter, the DAGs folder holds only a copy of ``dags/kafka_zk_audit.py``, and every
command runs outside the checkout. The Spark app and the GX suites must come from the installed package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

pytestmark = [pytest.mark.dag, pytest.mark.zk]

REPO = Path(__file__).resolve().parents[2]


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A new venv with the wheel built from this checkout, installed as the README says."""
    root = tmp_path_factory.mktemp("install")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "dist"), str(REPO)])
    wheel = next((root / "dist").glob("kafka_zk_audit-*.whl"))
    venv = root / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(REPO / "constraints.txt")]
    _run([*pip, str(wheel)], cwd=root)
    _run([*pip, "--force-reinstall", "--no-deps", "pyspark"], cwd=root)  # README: pyspark-client shares pyspark/
    return venv


def test_the_wheel_ships_the_runtime_package_with_its_spark_app_and_suites(tmp_path):
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)])
    names = zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist()
    assert "kafka_zk_audit/spark_apps/audit_snapshot.py" in names
    suites = {Path(n).name for n in names if n.startswith("kafka_zk_audit/expectations/") and n.endswith(".json")}
    assert suites == {p.name for p in (REPO / "expectations").glob("*.json")}
    assert "kafka_zk_audit/contract/default_settings.yaml" in names
    assert not [n for n in names if n.startswith("kafka_zk_audit_testing/")]
    source = {str(p.relative_to(REPO / "plugins")) for p in (REPO / "plugins/kafka_zk_audit").rglob("*.py")}
    assert source <= set(names), f"modules missing from the wheel: {sorted(source - set(names))}"


def test_installed_package_runs_the_whole_dag_from_one_copied_dag_file(installed, zk_server, zk_chroot, tmp_path):
    python = installed / "bin" / "python"
    where = _run([str(python), "-c", "import importlib.util as u, kafka_zk_audit; print(kafka_zk_audit.__file__); "
                  "print(u.find_spec('kafka_zk_audit_testing'))"], cwd=tmp_path).stdout.split()
    assert str(installed) in where[0] and where[1] == "None", where

    home, dags = tmp_path / "airflow", tmp_path / "dags"
    dags.mkdir()
    shutil.copy(REPO / "dags" / "kafka_zk_audit.py", dags / "kafka_zk_audit.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON", "KAFKA_ZK_AUDIT"))}
    env.update({
        "PATH": f"{installed / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "VIRTUAL_ENV": str(installed),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "GX_ANALYTICS_ENABLED": "false",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_DRIVER_PYTHON": str(python),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "AIRFLOW_CONN_ZOOKEEPER_DEFAULT": json.dumps(
            {"conn_type": "zookeeper", "host": zk_server.hosts, "extra": {"chroot": zk_chroot}}
        ),
    })
    airflow = str(installed / "bin" / "airflow")
    _run([airflow, "db", "migrate"], env=env, cwd=tmp_path)

    sim = Simulator(hosts=zk_server.hosts + zk_chroot)
    try:
        sim.write(ClusterSpec(era="3.x", brokers=3, topics=2, partitions=2, replication_factor=3, groups=1))
        warehouse = tmp_path / "warehouse"
        conf = {"warehouse": str(warehouse), "run_label": "installed"}
        proc = subprocess.run([airflow, "dags", "test", "kafka_zk_audit", "-c", json.dumps(conf)], env=env,
                              cwd=tmp_path, capture_output=True, text=True)
    finally:
        sim.close()
    log = proc.stdout + proc.stderr
    summaries = list(warehouse.glob("runs/*-installed/summary.json"))
    assert summaries, f"no summary; log tail:\n{log[-5000:]}"
    summary = json.loads(summaries[0].read_text())
    assert summary["gate"]["success"] is True and "error" not in summary["gate"], summary["gate"]
    assert proc.returncode == 0, log[-3000:]
    # the Spark app and the suites came from the installed package, not from the checkout
    submit = next(line for line in log.splitlines() if "Spark-Submit cmd:" in line)
    assert f"{installed}/lib/" in submit and "/kafka_zk_audit/spark_apps/audit_snapshot.py" in submit, submit
    assert str(REPO) not in submit
    validations = list((warehouse / "gx").rglob("validations/**/*.json"))
    assert validations, "the gate stored no validation results"
    assert (warehouse / "data_docs" / "index.html").exists()
