"""The audit task through a long-lived Spark Connect server (the event-driven DAG's, when the settings name one).

The provider's ``spark_connect`` connection (``SparkConnectHook``: host, port, and optionally a user id, a token and
``use_ssl``) names the server, e.g. one of ``kafka-zk-audit connect-server start``. The task is a Spark Connect
client: it runs the audit app's work (:func:`kafka_zk_audit.audit.job.audit_snapshots`) in a new session of the
server, whose JVM stays warm between audits. When the server does not answer, the task says so in its log and audits
with spark-submit as the default audit task does (its alert is late, never lost).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowException

from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator

FALLBACK_HINT = ("start it (kafka-zk-audit connect-server start) or remove events.spark_connect_conn_id from the "
                 "settings")


class AuditSparkConnectOperator(AuditSparkSubmitOperator):
    """The audit of ``snapshot_ids`` (comma-separated) in ``warehouse`` through the Spark Connect server of
    ``connect_conn_id``; the spark-submit arguments (``AuditSparkSubmitOperator``'s) are its fallback. Fails, as the
    audit app's non-zero exit does, when a snapshot could not be audited or there is none."""

    template_fields: Sequence[str] = (*AuditSparkSubmitOperator.template_fields, "connect_conn_id", "warehouse",
                                      "snapshot_ids", "audit_config", "target_version")

    def __init__(self, *, connect_conn_id: str, warehouse: str, snapshot_ids: str, audit_config: str | None = None,
                 target_version: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.connect_conn_id = connect_conn_id
        self.warehouse = warehouse
        self.snapshot_ids = snapshot_ids
        self.audit_config = audit_config
        self.target_version = target_version
        self._session: Any = None  # the Connect session while the audit runs through the server

    def execute(self, context: Any) -> None:
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        from kafka_zk_audit.audit.connect import address_of, port_answers

        url = SparkConnectHook(self.connect_conn_id).get_connection_url()  # may hold a token: never logged
        host, port = address_of(url)
        if not port_answers(host, port):
            self.log.warning("the Spark Connect server of connection %r (%s:%d) does not answer; auditing with "
                             "spark-submit instead. To audit through it again, %s", self.connect_conn_id, host,
                             port, FALLBACK_HINT)
            return super().execute(context)
        self.log.info("auditing through the Spark Connect server of connection %r (%s:%d)", self.connect_conn_id,
                      host, port)
        self.audit_through(url)
        return None

    def audit_through(self, url: str) -> dict[str, Any]:
        """The audit in a new session of the server at ``url``; the figures by snapshot id."""
        from kafka_zk_audit.audit.job import audit_snapshots
        from kafka_zk_audit.audit.session import connect_session
        from kafka_zk_audit.contract.warehouse import Warehouse

        ids = list(dict.fromkeys(s.strip() for s in (self.snapshot_ids or "").split(",") if s.strip()))
        if not ids:
            raise AirflowException("no snapshot to audit: every snapshot task of the run failed (see their logs)")
        with connect_session(url) as spark:
            self._session = spark
            try:
                results, failed = audit_snapshots(spark, Warehouse(self.warehouse), ids, self.audit_config or None,
                                                  self.target_version or None)
            finally:
                self._session = None
        if failed:
            raise AirflowException(f"the audit of {len(failed)} of {len(ids)} snapshot(s) failed: {', '.join(failed)}")
        return results

    def on_kill(self) -> None:
        """A killed task stops its audit in the server (every operation of its session, and the session: the audit
        does not go on snapshot by snapshot), or its spark-submit."""
        session = self._session
        if session is not None:
            session.interruptAll()
            session.stop()
            return
        super().on_kill()
