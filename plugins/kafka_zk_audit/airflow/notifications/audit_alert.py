"""``AuditAlertNotifier``: the gate's failure callback, sending the alert by e-mail and webhook.

Wire it as ``on_failure_callback`` of the gate task. It reads the gate's XCom ``verdict``, builds the
alert with :func:`kafka_zk_audit.report.alert.build_alert` and delivers it:

* e-mail through the SMTP provider's ``SmtpHook`` (connection ``alerts.smtp_conn_id``) to
  ``alerts.email_to``; no recipients, no e-mail;
* a JSON POST (Slack-compatible) through the HTTP provider's ``HttpHook`` (connection
  ``alerts.webhook_conn_id``); none, no webhook. The connection's host is the full webhook URL
  (``https://hooks.example.com/services/T/B/X``); login and password, when set, are sent as HTTP basic
  auth, and its extra is what the HTTP provider makes of it (headers, ``timeout``, ``verify``, proxies).

Nothing here raises: a failed delivery is logged and the audit result stays what it is. Passwords and
the webhook URL (its path often is the token) never reach a log line or the message: they are registered
with Airflow's secrets masker, and the lines the HTTP hook and urllib3 log during the POST are redacted
here as well, since those name the URL (``Sending 'POST' to url: …``, ``… with url: /services/…``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airflow.sdk import BaseNotifier

from kafka_zk_audit.airflow.xcoms import snapshot_id_list
from kafka_zk_audit.contract.settings import AuditConfig, load_config
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert import Alert, build_alert
from kafka_zk_audit.report.fleet import snapshot_verdict

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_SECONDS = 10
RESPONSE_BODY_CHARS = 200
REDACTED = "***"
# Where the POST's own log lines come from: the hook (given this logger below) and urllib3, which logs
# each request line with its path at DEBUG.
HTTP_LOGGERS = (f"{__name__}.http_hook", "urllib3.connectionpool", "urllib3.util.retry")


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _mask(*secrets: str | None) -> None:
    """Register secrets with Airflow's log masker (also covers task-log lines not written here)."""
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:  # pragma: no cover - the task SDK always has it
        return
    for secret in secrets:
        if secret:
            mask_secret(secret)


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL: what a log may show of it."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def url_secrets(url: str) -> list[str]:
    """What no log may show of a webhook URL: the URL, what follows its origin (the token), any password."""
    parts = urlsplit(url)
    after_origin = urlunsplit(("", "", parts.path, parts.query, parts.fragment))
    return [part for part in (url, after_origin, parts.path, parts.password) if len(part or "") > 1]


class _RedactSecrets(logging.Filter):
    """Rewrites a record's message with the secrets replaced by ``***``."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message, self.secrets)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


@contextmanager
def _redacted_http_logs(secrets: Iterable[str | None]) -> Iterator[None]:
    """While the POST runs, the hook's and urllib3's log lines go out with the secrets redacted."""
    redacting = _RedactSecrets(secrets)
    loggers = [logging.getLogger(name) for name in HTTP_LOGGERS]
    for logger in loggers:
        logger.addFilter(redacting)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(redacting)


class AuditAlertNotifier(BaseNotifier):
    """Alert on a failed gate: e-mail and webhook, only for new gating findings by default.

    :param warehouse: the warehouse root (templated).
    :param snapshot_id: the run's snapshots: a list, e.g. the snapshot task's output, or one id (templated).
    :param audit_config: path of the audit settings file; empty or None: the packaged defaults (templated).
    :param verdict_task_id: the task whose XCom ``verdict`` to read; None: the task this callback runs for.
    """

    template_fields: Sequence[str] = ("warehouse", "snapshot_id", "audit_config")

    def __init__(self, warehouse: str, snapshot_id: Sequence[str] | str | None, audit_config: str | None = None, *,
                 verdict_task_id: str | None = None) -> None:
        super().__init__()
        self.warehouse = warehouse
        self.snapshot_id = snapshot_id
        self.audit_config = audit_config
        self.verdict_task_id = verdict_task_id

    def notify(self, context: Any) -> None:
        """Build each red cluster's alert and deliver it through that cluster's routes; never raises."""
        snapshot_ids = snapshot_id_list(self.snapshot_id)
        if not snapshot_ids:
            log.error("audit alert not sent: no snapshot id (the snapshot task pushed none)")
            return
        verdict = self._verdict(context)
        for snapshot_id in snapshot_ids:
            part = snapshot_verdict(verdict, snapshot_id)
            if part is not None and part.get("success"):
                log.info("snapshot %s: the gate passed; no alert", snapshot_id)
                continue
            try:
                cfg = load_config(self.audit_config or None)
                cluster = Warehouse(self.warehouse).read_json(Warehouse(self.warehouse).manifest_path(snapshot_id)
                                                              ).get("cluster")
                cfg = cfg.for_cluster(cluster) if cluster else cfg
                alert = build_alert(self.warehouse, snapshot_id, cfg, part, run_url=self._run_url(context))
            except Exception as error:  # an alert problem must not change the audit result
                log.error("audit alert for snapshot %s not sent: it could not be built: %s: %s",
                          snapshot_id, type(error).__name__, error)
                continue
            if alert is None:
                continue
            log.info("audit alert for snapshot %s: %s", snapshot_id, alert.subject)
            self.send_email(alert, cfg)
            self.send_webhook(alert, cfg)

    def _verdict(self, context: Any) -> dict[str, Any] | None:
        ti = context.get("ti") if hasattr(context, "get") else None
        if ti is None:
            log.warning("no task instance in the callback context; alerting without the gate verdict")
            return None
        task_id = self.verdict_task_id or ti.task_id
        try:
            verdict = ti.xcom_pull(task_ids=task_id, key="verdict")
        except Exception as error:
            log.warning("could not read the verdict of task %s: %s", task_id, error)
            return None
        return verdict if isinstance(verdict, dict) else None

    @staticmethod
    def _run_url(context: Any) -> str | None:
        ti = context.get("ti") if hasattr(context, "get") else None
        try:
            url = getattr(ti, "log_url", None)
        except Exception:  # a link is optional
            return None
        return url if isinstance(url, str) else None

    @staticmethod
    def send_email(alert: Alert, cfg: AuditConfig) -> bool:
        """Send the HTML e-mail to ``alerts.email_to``; True when delivered. Failures are logged."""
        recipients = list(cfg.alerts.email_to)
        conn_id = cfg.alerts.smtp_conn_id
        if not recipients:
            log.info("audit alert e-mail skipped: alerts.email_to is empty")
            return False
        hook = None
        try:
            from airflow.providers.smtp.hooks.smtp import SmtpHook

            hook = SmtpHook(smtp_conn_id=conn_id)
            with hook:
                hook.send_email_smtp(to=recipients, subject=alert.subject, html_content=alert.html)
        except Exception as error:  # delivery problems are reported, never raised
            connection = hook.smtp_connection if hook else None
            secrets = (connection.password,) if connection else ()
            log.error("audit alert e-mail NOT delivered (SMTP connection %s): %s: %s", conn_id,
                      type(error).__name__, redact(str(error), secrets))
            return False
        log.info("audit alert e-mail sent to %s through SMTP connection %s", ", ".join(recipients), conn_id)
        return True

    @staticmethod
    def send_webhook(alert: Alert, cfg: AuditConfig) -> bool:
        """POST the JSON payload through ``alerts.webhook_conn_id``; True when accepted (status < 400), else logged."""
        conn_id = cfg.alerts.webhook_conn_id
        if not conn_id:
            log.info("audit alert webhook skipped: alerts.webhook_conn_id is not set")
            return False
        origin = None
        secrets: list[str | None] = []
        try:
            from airflow.providers.http.hooks.http import HttpHook  # here: the DAG file is parsed without it

            hook = HttpHook(method="POST", http_conn_id=conn_id)
            hook._log = logging.getLogger(HTTP_LOGGERS[0])  # a stdlib logger, so its lines can be redacted
            url = hook.url_from_endpoint(None)
            secrets = [hook.get_connection(conn_id).password, *url_secrets(url)]
            _mask(*secrets)
            origin = url_origin(url)
            with _redacted_http_logs(secrets):
                response = hook.run(json=alert.payload, headers={"User-Agent": "kafka-zk-audit"},
                                    extra_options={"timeout": WEBHOOK_TIMEOUT_SECONDS, "check_response": False})
        except Exception as error:  # delivery problems are reported, never raised
            log.error("audit alert webhook NOT delivered (connection %s%s): %s: %s", conn_id,
                      f", {origin}" if origin else "", type(error).__name__, redact(str(error), secrets))
            return False
        if not response.ok:
            body = response.text[:RESPONSE_BODY_CHARS].strip()
            log.error("audit alert webhook NOT delivered (connection %s, %s): HTTP %s %s%s", conn_id, origin,
                      response.status_code, redact(response.reason or "", secrets),
                      f": {redact(body, secrets)}" if body else "")
            return False
        log.info("audit alert webhook accepted by %s (connection %s): HTTP %s", origin, conn_id,
                 response.status_code)
        return True
