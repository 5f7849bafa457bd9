"""``TaskFailureNotifier``: every task's failure callback, so a run that could not audit is as loud as a failed gate.

It tells which cluster (for a per-cluster mapped task), which task, why (the exception) and where the log is, to
every route of that cluster's settings (``AuditConfig.alert_routes``), whatever severities the route takes: nothing
else watches a cluster whose audit could not run. E-mail, webhook and Slack get the message; PagerDuty and Opsgenie
a trigger keyed by ``report.failure.failure_key`` (cluster and task), so a task that keeps failing is one incident,
resolved by hand once the runs succeed again. A failed gate is the gate alert's job (``AuditAlertNotifier``):
failures that only report the gate's verdict are skipped here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseNotifier

from kafka_zk_audit.airflow.notifications.audit_alert import digest_channels, send_paging_event
from kafka_zk_audit.contract.settings import AuditConfig, load_config
from kafka_zk_audit.report.alert import Alert
from kafka_zk_audit.report.failure import FLEET, TaskFailure, build_failure_alert, failure_key, failure_severity

log = logging.getLogger(__name__)


class GateVerdictFailure(Exception):
    """Mixin of the exceptions that carry the gate's verdict (alerted by the gate alert, not by this notifier)."""


class TaskFailureNotifier(BaseNotifier):
    """Alert that a task of the audit failed for good (after its retries); never raises.

    :param audit_config: path of the audit settings file (alert routes); empty or None: the packaged defaults
        (templated).
    """

    template_fields: Sequence[str] = ("audit_config",)

    def __init__(self, audit_config: str | None = None) -> None:
        super().__init__()
        self.audit_config = audit_config

    def notify(self, context: Any) -> None:
        error = context.get("exception")
        if isinstance(error, GateVerdictFailure):
            return
        try:
            failure = self.describe(context)
            cfg = load_config(self.audit_config or None)
            if failure.cluster and failure.cluster in cfg.cluster_names():
                cfg = cfg.for_cluster(failure.cluster)
            alert = build_failure_alert(failure)
        except Exception as problem:  # an alert problem must not hide the task's own failure
            log.error("failure alert not sent: it could not be built: %s: %s", type(problem).__name__, problem)
            return
        log.error("%s", alert.subject)
        deliver_failure(alert, failure, cfg)

    @staticmethod
    def describe(context: Any) -> TaskFailure:
        """The failed task, its cluster (a mapped task's ``cluster`` attribute) and its error, from the context."""
        ti = context.get("ti")
        task = context.get("task")
        error = context.get("exception")
        dag_run = context.get("dag_run")
        cluster = getattr(task, "cluster", None)
        try:
            log_url = ti.log_url if ti is not None else None
        except Exception:  # a link is optional
            log_url = None
        return TaskFailure(
            dag_id=getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", "?"),
            run_id=getattr(ti, "run_id", None) or getattr(dag_run, "run_id", "?"),
            task_id=getattr(ti, "task_id", None) or getattr(task, "task_id", "?"),
            error=f"{type(error).__name__}: {error}" if error is not None else "the task failed (no exception)",
            cluster=cluster if isinstance(cluster, str) and cluster else None,
            map_index=getattr(ti, "map_index", -1) if isinstance(getattr(ti, "map_index", -1), int) else -1,
            try_number=getattr(ti, "try_number", None),
            log_url=log_url if isinstance(log_url, str) else None,
        )


def deliver_failure(alert: Alert, failure: TaskFailure, cfg: AuditConfig) -> list[dict[str, Any]]:
    """Send the failure's alert to every route of ``cfg``; one record per message or event with its outcome (never
    raises: a failed delivery is logged by its channel)."""
    routes = cfg.alert_routes()
    if not routes:
        log.info("failure alert not sent: no alert route (alerts.email_to, alerts.webhook_conn_id and alerts.routes "
                 "are empty)")
    key, severity, cluster = failure_key(failure), failure_severity(failure), failure.cluster or FLEET
    details = {name: str(value) for name, value in alert.facts.items() if value is not None}
    deliveries: list[dict[str, Any]] = []
    for index, route in enumerate(routes):
        for channel, target, send in digest_channels(alert, route, cfg):
            deliveries.append({"route": index, "channel": channel, "target": target, "ok": send()})
        for channel, conn_id in (("pagerduty", route.pagerduty_conn_id), ("opsgenie", route.opsgenie_conn_id)):
            if conn_id:
                ok = send_paging_event(channel, conn_id, "trigger", key, title=alert.subject, summary=alert.subject,
                                       description=alert.text, severity=severity, cluster=cluster,
                                       component=failure.task_id, details=details,
                                       tags=("kafka-zk-audit", cluster, "task_failed"),
                                       link=(failure.log_url, "task log"))
                deliveries.append({"route": index, "channel": channel, "target": conn_id, "ok": ok})
    return deliveries
