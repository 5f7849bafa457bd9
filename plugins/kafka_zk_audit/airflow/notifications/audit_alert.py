"""The alerts of a run: each audited cluster's findings lifecycle, its triggers and resolves, through its routes.

:func:`send_run_alerts` is what the DAG's ``summary`` task calls first, at every run whatever the gate's verdict (so a
fixed finding sends its resolve even when the gate passes); ``AuditAlertNotifier`` is the same as a notifier, for a
callback. Per audited snapshot, under the warehouse's lock of its cluster: the lifecycle
(:mod:`kafka_zk_audit.report.lifecycle`: pending, firing, resolved, from the findings, each check's ``for`` and the
cluster's state), then each route of the cluster's settings (``AuditConfig.alert_routes``) gets what concerns its
severities:

* e-mail, webhook and Slack: one message per run, the alert of :func:`kafka_zk_audit.report.alert.build_alert`
  (started firing, resolved, the findings per check and the top offenders), when something started firing or
  resolved (or, with ``alerts.only_new: false``, while something fires or the gate fails);
* PagerDuty and Opsgenie: one event per finding that started firing (trigger / create) or resolved (resolve /
  close), keyed by the finding's dedup key. After a channel's first failed event, its other events of the
  snapshot are not tried (a service that is down costs one timeout per run, not one per finding).

Then the state and ``runs/<id>/alerts.json`` are written (:mod:`kafka_zk_audit.report.alert_state`). A snapshot
whose alerts were sent already (a retried task) is not sent again. Nothing here raises: a failed delivery is logged,
recorded, and sent again at the next run; the audit's result stays what it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseNotifier

from kafka_zk_audit.airflow.notifications import channels
from kafka_zk_audit.airflow.xcoms import snapshot_id_list
from kafka_zk_audit.contract.lock import warehouse_lock
from kafka_zk_audit.contract.settings import AlertRoute, AuditConfig, load_config
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert import Alert, build_alert, describe_subject
from kafka_zk_audit.report.alert_state import cluster_of, plan_lifecycle, read_alerts, record_alerts
from kafka_zk_audit.report.fleet import snapshot_verdict
from kafka_zk_audit.report.lifecycle import Lifecycle

log = logging.getLogger(__name__)

LOCK_TIMEOUT_SECONDS = 600.0
DETAIL_FIELDS = ("check_id", "severity", "topic", "partition", "group_id", "broker_id", "path", "detail", "first_seen",
                 "since", "key")


def send_run_alerts(warehouse: str, snapshot_ids: Any, audit_config: str | None, verdict: dict[str, Any] | None,
                    *, run_url: str | None = None) -> dict[str, dict[str, Any]]:
    """Send the alerts of every audited snapshot of the run; returns each one's ``alerts.json`` by snapshot id."""
    sent: dict[str, dict[str, Any]] = {}
    ids = snapshot_id_list(snapshot_ids)
    if not ids:
        log.error("no alerts: the run has no snapshot (the snapshot tasks pushed none)")
        return sent
    for snapshot_id in ids:
        try:
            record = send_snapshot_alerts(Warehouse(warehouse), snapshot_id, load_config(audit_config or None),
                                          snapshot_verdict(verdict, snapshot_id), run_url=run_url)
        except Exception as error:  # an alert problem must not change the audit result
            log.error("alerts of snapshot %s not sent: %s: %s", snapshot_id, type(error).__name__, error)
            continue
        if record is not None:
            sent[snapshot_id] = record
    return sent


def send_snapshot_alerts(warehouse: Warehouse, snapshot_id: str, settings: AuditConfig,
                         verdict: dict[str, Any] | None, *, run_url: str | None = None) -> dict[str, Any] | None:
    """The lifecycle of one audited snapshot's cluster, delivered and recorded; None when it was not audited."""
    if not warehouse.exists(f"{warehouse.findings_dir(snapshot_id)}/_SUCCESS"):
        log.info("snapshot %s was not audited: no alerts (the failed task alerted)", snapshot_id)
        return None
    cluster = cluster_of(warehouse.read_json(warehouse.manifest_path(snapshot_id)))
    cfg = settings.for_cluster(cluster)
    with warehouse_lock(warehouse, f"alerts-{cluster}", timeout_s=LOCK_TIMEOUT_SECONDS):
        done = read_alerts(warehouse, snapshot_id)
        if done is not None:
            log.info("snapshot %s: its alerts were sent already (%s); not sending them again", snapshot_id,
                     warehouse.alerts_path(snapshot_id))
            return done
        lifecycle, previous = plan_lifecycle(warehouse, snapshot_id, cluster, cfg)
        counts = lifecycle.as_dict()["counts"]
        log.info("cluster %s, snapshot %s: %d firing (%d started now), %d pending, %d resolved, %d healed while "
                 "pending", cluster, snapshot_id, counts["firing"], counts["triggered"], counts["pending"],
                 counts["resolved"], counts["healed_while_pending"])
        deliveries = deliver(warehouse, snapshot_id, cfg, verdict, lifecycle, run_url=run_url)
        return record_alerts(warehouse, lifecycle, previous, deliveries)


def _route_entries(entries: Sequence[dict[str, Any]], route: AlertRoute, cfg: AuditConfig) -> list[dict[str, Any]]:
    return [entry for entry in entries if route.takes(entry.get("severity"), tuple(cfg.gate.gating_severities))]


def deliver(warehouse: Warehouse, snapshot_id: str, cfg: AuditConfig, verdict: dict[str, Any] | None,
            lifecycle: Lifecycle, *, run_url: str | None = None) -> list[dict[str, Any]]:
    """Send what each route of ``cfg`` has to be told; one record per message or event with its outcome."""
    routes = cfg.alert_routes()
    if not routes:
        log.info("snapshot %s: no alert route (alerts.email_to, alerts.webhook_conn_id and alerts.routes are empty)",
                 snapshot_id)
    deliveries: list[dict[str, Any]] = []
    down: set[tuple[str, str]] = set()
    for index, route in enumerate(routes):
        triggered = _route_entries(lifecycle.triggered, route, cfg)
        resolved = _route_entries(lifecycle.resolved, route, cfg)
        if route.email_to or route.webhook_conn_id or route.slack_conn_id:
            alert = build_alert(warehouse, snapshot_id, cfg, verdict, lifecycle, route=route, run_url=run_url)
            if alert is not None:
                log.info("audit alert for snapshot %s: %s", snapshot_id, alert.subject)
                keys = {"triggers": [e["key"] for e in triggered], "resolves": [e["key"] for e in resolved]}
                for channel, target, send in digest_channels(alert, route, cfg):
                    deliveries.append({"route": index, "channel": channel, "target": target, **keys, "ok": send()})
        for channel, conn_id in (("pagerduty", route.pagerduty_conn_id), ("opsgenie", route.opsgenie_conn_id)):
            if not conn_id:
                continue
            for action, entries in (("trigger", triggered), ("resolve", resolved)):
                for entry in entries:
                    if (channel, conn_id) in down:  # one failure per channel and run: the rest waits for the next
                        ok = False
                    else:
                        ok = _send_event(channel, conn_id, action, entry, lifecycle.cluster, run_url)
                        if not ok:
                            down.add((channel, conn_id))
                            log.error("%s (connection %s) failed: its other events of snapshot %s are not tried now; "
                                      "they are sent at the next run", channel, conn_id, snapshot_id)
                    deliveries.append({"route": index, "channel": channel, "target": conn_id,
                                       "triggers": [entry["key"]] if action == "trigger" else [],
                                       "resolves": [entry["key"]] if action == "resolve" else [], "ok": ok})
    return deliveries


def digest_channels(alert: Alert, route: AlertRoute, cfg: AuditConfig) -> list[tuple[str, str, Any]]:
    """The route's message channels (e-mail, webhook, Slack) for ``alert``: (channel, target, send) each."""
    found: list[tuple[str, str, Any]] = []
    if route.email_to:
        found.append(("email", ", ".join(route.email_to),
                      lambda: channels.send_email(alert, route.email_to, cfg.alerts.smtp_conn_id)))
    if route.webhook_conn_id:
        found.append(("webhook", route.webhook_conn_id, lambda: channels.send_webhook(alert, route.webhook_conn_id)))
    if route.slack_conn_id:
        found.append(("slack", route.slack_conn_id, lambda: channels.send_slack(alert, route.slack_conn_id)))
    return found


def _send_event(channel: str, conn_id: str, action: str, entry: Mapping[str, Any], cluster: str,
                run_url: str | None) -> bool:
    """One finding's trigger or resolve to PagerDuty or Opsgenie."""
    subject = describe_subject(dict(entry))
    title = f"[{cluster}] {entry.get('check_id')}{' ' + subject if subject else ''}"
    if action == "resolve":
        title = f"{title}: resolved"
    details = {name: entry.get(name) for name in DETAIL_FIELDS if entry.get(name) is not None}
    details["cluster"] = cluster
    return send_paging_event(channel, conn_id, action, str(entry["key"]), title=title,
                             summary=f"{title}: {entry.get('detail')}",
                             description=f"{entry.get('detail')} (at {entry.get('path')})",
                             severity=str(entry.get("severity")), cluster=cluster,
                             component=str(entry.get("check_id")), details=details, link=(run_url, "Airflow"),
                             tags=("kafka-zk-audit", cluster, str(entry.get("check_id"))))


def send_paging_event(channel: str, conn_id: str, action: str, key: str, *, title: str, summary: str,
                      description: str, severity: str, cluster: str, component: str, details: Mapping[str, Any],
                      tags: Sequence[str], link: tuple[str | None, str] = (None, "")) -> bool:
    """One event keyed ``key`` to PagerDuty (``summary``, ``component``, ``group`` the cluster, ``link`` when it is a
    web URL) or Opsgenie (``title`` as message, ``description``, entity the cluster, ``tags``)."""
    if channel == "pagerduty":
        url, text = link
        links = [{"href": url, "text": text}] if url and url.startswith(("http://", "https://")) else None
        return channels.send_pagerduty(conn_id, action, key, summary=summary, severity=severity, component=component,
                                       group=cluster, details=dict(details), links=links)
    return channels.send_opsgenie(conn_id, action, key, message=title, severity=severity, description=description,
                                  entity=cluster, details={k: str(v) for k, v in details.items()},
                                  tags=tuple(tags))


class AuditAlertNotifier(BaseNotifier):
    """The alerts of a run as a notifier: :func:`send_run_alerts` with the gate's verdict from its XCom.

    :param warehouse: the warehouse root (templated).
    :param snapshot_id: the run's snapshots: a list, e.g. the snapshot task's output, or one id (templated).
    :param audit_config: path of the audit settings file; empty or None: the packaged defaults (templated).
    :param verdict_task_id: the task whose XCom ``verdict`` to read (default ``gate``).
    """

    template_fields: Sequence[str] = ("warehouse", "snapshot_id", "audit_config")

    def __init__(self, warehouse: str, snapshot_id: Sequence[str] | str | None, audit_config: str | None = None, *,
                 verdict_task_id: str = "gate") -> None:
        super().__init__()
        self.warehouse = warehouse
        self.snapshot_id = snapshot_id
        self.audit_config = audit_config
        self.verdict_task_id = verdict_task_id

    def notify(self, context: Any) -> None:
        """Send the run's alerts; never raises."""
        ti = context.get("ti") if hasattr(context, "get") else None
        verdict = None
        try:
            verdict = ti.xcom_pull(task_ids=self.verdict_task_id, key="verdict") if ti is not None else None
        except Exception as error:
            log.warning("could not read the verdict of task %s: %s", self.verdict_task_id, error)
        try:
            url = getattr(ti, "log_url", None)
        except Exception:  # a link is optional
            url = None
        send_run_alerts(self.warehouse, self.snapshot_id, self.audit_config,
                        verdict if isinstance(verdict, dict) else None, run_url=url if isinstance(url, str) else None)

    @staticmethod
    def send_email(alert: Alert, cfg: AuditConfig) -> bool:
        """Send the alert to ``alerts.email_to`` through ``alerts.smtp_conn_id``; True when delivered."""
        if not cfg.alerts.email_to:
            log.info("audit alert e-mail skipped: alerts.email_to is empty")
            return False
        return channels.send_email(alert, cfg.alerts.email_to, cfg.alerts.smtp_conn_id)

    @staticmethod
    def send_webhook(alert: Alert, cfg: AuditConfig) -> bool:
        """POST the alert through ``alerts.webhook_conn_id``; True when accepted."""
        if not cfg.alerts.webhook_conn_id:
            log.info("audit alert webhook skipped: alerts.webhook_conn_id is not set")
            return False
        return channels.send_webhook(alert, cfg.alerts.webhook_conn_id)
