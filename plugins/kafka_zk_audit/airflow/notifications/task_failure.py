"""``TaskFailureNotifier``: every task's failure callback, so a run that could not audit is as loud as a failed gate.

It tells which cluster (for a per-cluster mapped task), which task, why (the exception) and where the log is,
through the same e-mail and webhook connections as the gate's alert. A failed gate is the gate alert's job
(``AuditAlertNotifier``): failures that only report the gate's verdict are skipped here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseNotifier

from kafka_zk_audit.airflow.notifications.audit_alert import AuditAlertNotifier
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.report.failure import TaskFailure, build_failure_alert

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
            alert = build_failure_alert(failure)
        except Exception as problem:  # an alert problem must not hide the task's own failure
            log.error("failure alert not sent: it could not be built: %s: %s", type(problem).__name__, problem)
            return
        log.error("%s", alert.subject)
        AuditAlertNotifier.send_email(alert, cfg)
        AuditAlertNotifier.send_webhook(alert, cfg)

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
