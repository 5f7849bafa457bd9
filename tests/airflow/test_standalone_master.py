"""The same audit and history on a Spark standalone master as on ``local``: a cluster master is a connection change.

A standalone master with two workers runs on loopback. A DAG run built here (``dag.test()``) runs the DAG's own
operators (``AuditSparkSubmitOperator``, ``ZooKeeperHistoryOperator``) with a Spark connection that names that
master: the audit app on every snapshot of run 1 of the shared system run (tests/system/fleet_run.py), the history
app on the ``files`` cluster's ZooKeeper files, into a copy of the warehouse that holds only the snapshots and its
fingerprint key. Run 1 ran both apps on ``local[*]``: every table must match row for row, and the same audit.json,
readiness.json and history.json.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from airflow.sdk import DAG

from kafka_zk_audit.airflow.dag import spark_app_path
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.airflow.operators.zookeeper_history import ZooKeeperHistoryOperator
from kafka_zk_audit.audit.session import submit_conf
from kafka_zk_audit_testing.spark_cluster import standalone_cluster
from tests.airflow.dag_runs import run_dag
from tests.audit.test_batch import written
from tests.system.fleet_run import AUDITED, FILES_CHROOT, SystemRun

pytestmark = pytest.mark.spark

# the two one-core workers' executors compile with C1 only, as the driver does (audit.session.DRIVER_JAVA_OPTIONS):
# a tuning of this small loopback cluster, given with the app as a cluster's spark-defaults.conf would give it
EXECUTOR_CONF = {"spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
HISTORY_VARIES = {"history_id", "warehouse", "path", "page", "decode_seconds", "seconds", "txns_per_second"}


def history_written(warehouse: Path) -> dict[str, Any]:
    """The one history under ``warehouse``: each table's rows (sorted, without the history's id) and history.json
    without what names its folder or times it."""
    [folder] = [p.parent for p in warehouse.glob("history/*/history.json")]
    out: dict[str, Any] = {}
    for table in sorted(p for p in folder.iterdir() if p.is_dir()):
        rows = pq.read_table(table).to_pylist()
        out[table.name] = sorted(json.dumps({k: v for k, v in r.items() if k != "history_id"}, sort_keys=True,
                                            default=str) for r in rows)
    summary = json.loads((folder / "history.json").read_text())
    out["history.json"] = {k: v for k, v in summary.items() if k not in HISTORY_VARIES}
    return out


def standalone_dag(warehouse: Path, snapshot_ids: list[str], settings: Path, files_dir: Path) -> DAG:
    """The audit task and the files cluster's history task, as the DAG wires them, on the ``spark_cluster``
    connection."""
    with DAG("standalone_master", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC)) as dag:
        audit = AuditSparkSubmitOperator(
            task_id="audit", spark_conn_id="spark_cluster", application=spark_app_path(), name="kafka-zk-audit",
            application_args=["--warehouse", str(warehouse), "--snapshot-ids", ",".join(snapshot_ids),
                              "--config", str(settings)],
            conf={**submit_conf(), **EXECUTOR_CONF},
        )
        history = ZooKeeperHistoryOperator(
            task_id="history", spark_conn_id="spark_cluster", warehouse=str(warehouse), audit_config=str(settings),
            cluster="files", zk_conn_id="zk_files", files={"data_dir": str(files_dir)},
            conf={**submit_conf(), **EXECUTOR_CONF},
        )
        audit >> history
    return dag


def test_on_a_standalone_master_the_audit_and_the_history_write_what_local_apps_write(
        system: SystemRun, airflow_db, tmp_path, monkeypatch):
    first = system.runs[0]
    ids = [first.snapshot_id(name) for name in AUDITED]
    copy = tmp_path / "warehouse"
    copy.mkdir()
    for name in ("snapshots", ".keys"):  # the snapshots and the fingerprint key, none of the apps' output
        shutil.copytree(system.after_first / name, copy / name)
    bin_dir = str(Path(sys.executable).parent)  # spark-submit, as in the Airflow worker's venv
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("AIRFLOW_CONN_ZK_FILES", json.dumps({"conn_type": "zookeeper", "host": "127.0.0.1:1",
                                                            "extra": {"chroot": FILES_CHROOT}}))
    spark_dir = tmp_path / "spark"
    with standalone_cluster(spark_dir, cores=1, memory="1g", workers=2) as master:
        host, port = master.rsplit(":", 1)
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": host,
                                                                     "port": int(port)}))
        outcome = run_dag(standalone_dag(copy, ids, system.settings, system.files_dir))
        worker_logs = [(spark_dir / name).read_text() for name in ("worker.log", "worker2.log")]
    assert outcome.state_of("audit") == "success" and outcome.state_of("history") == "success", outcome.log[-5000:]
    log = outcome.log
    submits = [line for line in log.splitlines() if "Spark-Submit cmd:" in line]
    assert len(submits) == 2 and all(f"spark-submit --master {master} " in line for line in submits)
    # the apps really ran on the cluster's executors, not in a local driver that ignored the master
    assert "Granted executor ID" in log and "Starting executor ID driver" not in log
    assert all("Asked to launch executor" in w for w in worker_logs)  # both workers ran executors
    assert all("spark.driver.host" not in line for line in submits)  # the driver's address is left to Spark

    for name, sid in zip(AUDITED, ids, strict=True):
        on_cluster, local = written(copy, sid), written(system.after_first, sid)
        assert sorted(on_cluster) == sorted(local), name
        for table in on_cluster:
            assert on_cluster[table] == local[table], (name, table)
    # the history read the logs on the executors (Spark's binaryFile source) and found what run 1 found locally
    assert outcome.xcom("history")["cluster"] == "files"
    assert history_written(copy) == history_written(system.after_first)
