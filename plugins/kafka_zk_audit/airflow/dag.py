"""The DAG ``kafka_zk_audit``: snapshot → Spark audit → GX gate → summary.

    snapshot (kazoo) ──▶ audit (spark-submit) ──▶ gate (Great Expectations) ──▶ summary
                                                    └─ on failure: e-mail + webhook alert

``dags/kafka_zk_audit.py`` builds it with :func:`build_dag`. Params (all optional) follow the
contract: ``zk_conn_id``, ``spark_conn_id``, ``warehouse``, ``audit_config``; ``run_label`` is
appended to the snapshot id (``kafka-zk-audit run`` uses it to find its own summary).
"""

from __future__ import annotations

import os
from importlib import resources

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from kafka_zk_audit.airflow.notifications.audit_alert import AuditAlertNotifier
from kafka_zk_audit.airflow.operators.audit_gate import AuditGateOperator
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.airflow.operators.zookeeper_snapshot import ZooKeeperSnapshotOperator
from kafka_zk_audit.contract.warehouse import default_warehouse

DAG_ID = "kafka_zk_audit"
SNAPSHOT_ID = "{{ ti.xcom_pull(task_ids='snapshot') }}"
WAREHOUSE = "{{ resolve_warehouse(params.warehouse) }}"


def spark_app_path() -> str:
    """The spark-submit entry shipped in the package (``spark_apps/audit_snapshot.py`` in the repo)."""
    return str(resources.files("kafka_zk_audit.spark_apps").joinpath("audit_snapshot.py"))


def resolve_warehouse(value: str | None) -> str:
    """The ``warehouse`` param, else ``$KAFKA_ZK_AUDIT_WAREHOUSE``, else ``./warehouse``; local paths absolute."""
    value = value or default_warehouse()
    return value if "://" in value else os.path.abspath(value)


def build_dag() -> DAG:
    with DAG(
        dag_id=DAG_ID,
        description="Audit the metadata Kafka keeps in ZooKeeper",
        doc_md=__doc__,
        schedule=None,
        catchup=False,
        max_active_runs=1,
        tags=["kafka", "zookeeper", "audit"],
        user_defined_macros={"resolve_warehouse": resolve_warehouse},
        params={
            "zk_conn_id": Param("zookeeper_default", type="string", description="ZooKeeper connection"),
            "spark_conn_id": Param("spark_default", type="string", description="Spark connection"),
            "warehouse": Param(None, type=["null", "string"], description="warehouse path or URL"),
            "audit_config": Param(None, type=["null", "string"], description="audit settings file"),
            "suites_dir": Param(None, type=["null", "string"],
                                description="folder of GX suites to validate (default: the packaged expectations/)"),
            "run_label": Param(None, type=["null", "string"], pattern="^[A-Za-z0-9_.-]*$",
                               description="suffix of the snapshot id"),
        },
        default_args={"retries": 0},
    ) as dag:
        snapshot = ZooKeeperSnapshotOperator(
            task_id="snapshot",
            zk_conn_id="{{ params.zk_conn_id }}",
            warehouse=WAREHOUSE,
            snapshot_suffix="{{ params.run_label or '' }}",
        )
        audit = AuditSparkSubmitOperator(
            task_id="audit",
            spark_conn_id="{{ params.spark_conn_id }}",
            application=spark_app_path(),
            name="kafka-zk-audit",
            application_args=[
                "--warehouse", WAREHOUSE,
                "--snapshot-id", SNAPSHOT_ID,
                "--config", "{{ params.audit_config or '' }}",
            ],
            # Spark settings come from the Spark connection (master, deploy mode, queue) and the
            # app itself (kafka_zk_audit.audit.session: loopback driver for local masters only).
            conf={"spark.ui.enabled": "false"},
        )
        gate = AuditGateOperator(
            task_id="gate",
            warehouse=WAREHOUSE,
            snapshot_id=SNAPSHOT_ID,
            audit_config="{{ params.audit_config or '' }}",
            suites_dir="{{ params.suites_dir or '' }}",
            on_failure_callback=AuditAlertNotifier(
                warehouse=WAREHOUSE, snapshot_id=SNAPSHOT_ID, audit_config="{{ params.audit_config or '' }}"
            ),
        )

        @task(task_id="summary", trigger_rule="all_done")
        def publish_summary(warehouse: str, snapshot_id: str | None, **context) -> dict:
            """Write summary.json; fail the run when the audit did not complete or the gate failed."""
            from kafka_zk_audit.contract.warehouse import Warehouse
            from kafka_zk_audit.report.summary import AuditIncomplete, format_summary, summarize_run

            try:
                summary, path = summarize_run(Warehouse(warehouse), snapshot_id,
                                              context["ti"].xcom_pull(task_ids="gate", key="verdict"))
            except AuditIncomplete as error:
                raise AirflowFailException(str(error)) from error
            print(format_summary(summary))
            print(f"summary: {path}")
            if not summary["gate"]["success"]:
                raise AirflowFailException(f"audit gate failed for snapshot {snapshot_id}; summary at {path}")
            return summary

        snapshot >> audit >> gate
        gate >> publish_summary(WAREHOUSE, SNAPSHOT_ID)
    return dag
