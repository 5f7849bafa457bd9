"""Run a DAG built in the test, in this process, as ``airflow dags test`` does: ``dag.test()`` on the metadata DB of
tests/airflow/conftest.py; then what its task instances ended as and what they pushed to XCom."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from airflow.sdk import DAG

from kafka_zk_audit_testing.receivers import WebhookReceiver

ALERT_ROUTES = {"email_to": ["oncall@example.com"], "smtp_conn_id": "smtp_alerts", "webhook_conn_id": "webhook_alerts"}


def route_alerts(patch: pytest.MonkeyPatch, smtp_port: int, smtp_password: str, webhook: WebhookReceiver) -> None:
    """The connections of :data:`ALERT_ROUTES` (``alerts`` settings), pointed at the loopback receivers."""
    patch.setenv("AIRFLOW_CONN_SMTP_ALERTS", json.dumps({
        "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port, "login": "audit", "password": smtp_password,
        "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "audit@example.com", "retry_limit": 0}}))
    patch.setenv("AIRFLOW_CONN_WEBHOOK_ALERTS", json.dumps({"conn_type": "http", "host": webhook.url("/hook/alerts")}))


@dataclass
class DagRunOutcome:
    """The run's state, each task instance's state and every XCom, by ``(task_id, map_index)``, and the tasks' log
    (what they logged through their own logger and printed)."""

    state: str
    states: dict[tuple[str, int], str]
    xcoms: dict[tuple[str, int, str], Any]
    log: str

    def state_of(self, task_id: str, map_index: int = -1) -> str:
        return self.states[(task_id, map_index)]

    def xcom(self, task_id: str, key: str = "return_value", map_index: int = -1) -> Any:
        return self.xcoms.get((task_id, map_index, key))


def register(dag: DAG) -> None:
    """Store the DAG in the metadata DB, as the DAG processor would after parsing its file."""
    from airflow import settings
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(dag_folder=settings.DAGS_FOLDER)  # the tests' empty DAGs folder: the DAG comes from the test
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)


def run_dag(dag: DAG, conf: dict[str, Any] | None = None) -> DagRunOutcome:
    """``dag.test()``: every task runs in this process with a real context (task instance, params, XCom through the
    execution API); the DAG needs the ``airflow_db`` fixture."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    register(dag)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):  # where the task runner writes the tasks' log lines in this process
        run = dag.test(run_conf=conf)
    sys.stdout.write(output.getvalue())
    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag.dag_id,
                                                          TaskInstance.run_id == run.run_id)).all()
        states = {(ti.task_id, ti.map_index): str(ti.state) for ti in tis}
        rows = session.scalars(select(XComModel).where(XComModel.dag_id == dag.dag_id,
                                                       XComModel.run_id == run.run_id)).all()
        xcoms = {(row.task_id, row.map_index, row.key): XComModel.deserialize_value(row) for row in rows}
    return DagRunOutcome(str(run.state), states, xcoms, output.getvalue())
