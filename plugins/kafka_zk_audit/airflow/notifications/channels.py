"""The alert channels, each a thin call of an Airflow provider's hook: e-mail (SMTP), webhook (HTTP), Slack,
PagerDuty Events v2 and Opsgenie.

* e-mail: ``SmtpHook`` (the SMTP provider) sends the HTML alert;
* webhook: ``HttpHook`` (the HTTP provider) POSTs the Slack-compatible JSON with the structured facts. The
  connection's host is the full URL; login and password, when set, are HTTP basic auth;
* Slack: ``SlackWebhookHook`` (the Slack provider) posts the text and blocks to an incoming webhook (connection
  type ``slackwebhook``: the password is the webhook token or URL, host the endpoint);
* PagerDuty: ``PagerdutyEventsHook`` (the PagerDuty provider) takes the routing key from the connection (type
  ``pagerduty_events``, its password) and shapes the event (``prepare_event_data``); one event per finding,
  ``trigger`` or ``resolve`` with the finding's key as ``dedup_key``. The connection's host, when set, is the Events
  API's base URL, HTTPS only (default ``https://events.pagerduty.com``; another service region, or a relay in front
  of it), and its extra ``ca_bundle`` a CA file to trust for it (a relay with a private CA);
* Opsgenie: ``OpsgenieAlertHook`` (the Opsgenie provider; connection type ``opsgenie``, the API key its password,
  host the API URL, default ``https://api.opsgenie.com``) creates one alert per finding with the finding's key as
  ``alias`` and closes it by that alias.

Nothing here raises: each sender returns whether the channel took the message, and logs why not. Secrets never
reach a log line or the message: passwords, routing and API keys and webhook URLs (their path often is the token)
are registered with Airflow's secrets masker, and the lines the hooks and their HTTP clients log while sending are
redacted here as well, since those name the URL (``Sending 'POST' to url: …``, ``… with url: /services/…``).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kafka_zk_audit.report.alert import Alert

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10
OPSGENIE_RETRIES = 2
RESPONSE_BODY_CHARS = 200
REDACTED = "***"
PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com"
# Where the requests' own log lines come from: the HTTP hook (given this logger below), urllib3 (each request
# line with its path, at DEBUG), slack_sdk (the URL, at DEBUG and in its errors), the PagerDuty and Opsgenie clients.
HTTP_LOGGERS = (f"{__name__}.http_hook", "urllib3.connectionpool", "urllib3.util.retry", "slack_sdk.webhook.client",
                "pagerduty", "opsgenie_sdk", "httpx2", "httpcore2")
# A finding's severity as PagerDuty's event severity and Opsgenie's priority.
PAGERDUTY_SEVERITY = {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}
OPSGENIE_PRIORITY = {"critical": "P1", "error": "P2", "warning": "P3", "info": "P5"}


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def mask(*secrets: str | None) -> None:
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
def redacted_http_logs(secrets: Iterable[str | None]) -> Iterator[None]:
    """While a request runs, the hooks' and HTTP clients' log lines go out with the secrets redacted."""
    redacting = _RedactSecrets(secrets)
    loggers = [logging.getLogger(name) for name in HTTP_LOGGERS]
    for logger in loggers:
        logger.addFilter(redacting)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(redacting)


def _failed(what: str, where: str, error: Exception, secrets: Iterable[str | None]) -> bool:
    log.error("%s NOT delivered (%s): %s: %s", what, where, type(error).__name__, redact(str(error), secrets))
    return False


def _connection_secrets(hook: Any, conn_id: str) -> list[str | None]:
    """The connection's password and, when its host or password is a URL, that URL's secret parts."""
    connection = hook.get_connection(conn_id)
    secrets: list[str | None] = [connection.password]
    for value in (connection.password, connection.host):
        if value and "://" in value:
            secrets += url_secrets(value)
    mask(*secrets)
    return secrets


def send_email(alert: Alert, recipients: Sequence[str], smtp_conn_id: str) -> bool:
    """Send the HTML alert to ``recipients``; True when delivered. Failures are logged."""
    if not recipients:
        log.info("audit alert e-mail skipped: no recipients")
        return False
    hook = None
    try:
        from airflow.providers.smtp.hooks.smtp import SmtpHook

        hook = SmtpHook(smtp_conn_id=smtp_conn_id)
        with hook:
            hook.send_email_smtp(to=list(recipients), subject=alert.subject, html_content=alert.html)
    except Exception as error:  # delivery problems are reported, never raised
        connection = hook.smtp_connection if hook else None
        return _failed("audit alert e-mail", f"SMTP connection {smtp_conn_id}", error,
                       (connection.password,) if connection else ())
    log.info("audit alert e-mail sent to %s through SMTP connection %s", ", ".join(recipients), smtp_conn_id)
    return True


def send_webhook(alert: Alert, conn_id: str) -> bool:
    """POST the JSON payload through an HTTP connection; True when accepted (status < 400), else logged."""
    origin = None
    secrets: list[str | None] = []
    try:
        from airflow.providers.http.hooks.http import HttpHook  # here: the DAG file is parsed without it

        hook = HttpHook(method="POST", http_conn_id=conn_id)
        hook._log = logging.getLogger(HTTP_LOGGERS[0])  # a stdlib logger, so its lines can be redacted
        url = hook.url_from_endpoint(None)
        secrets = [hook.get_connection(conn_id).password, *url_secrets(url)]
        mask(*secrets)
        origin = url_origin(url)
        with redacted_http_logs(secrets):
            response = hook.run(json=alert.payload, headers={"User-Agent": "kafka-zk-audit"},
                                extra_options={"timeout": TIMEOUT_SECONDS, "check_response": False})
    except Exception as error:  # delivery problems are reported, never raised
        return _failed("audit alert webhook", f"connection {conn_id}" + (f", {origin}" if origin else ""), error,
                       secrets)
    if not response.ok:
        body = response.text[:RESPONSE_BODY_CHARS].strip()
        log.error("audit alert webhook NOT delivered (connection %s, %s): HTTP %s %s%s", conn_id, origin,
                  response.status_code, redact(response.reason or "", secrets),
                  f": {redact(body, secrets)}" if body else "")
        return False
    log.info("audit alert webhook accepted by %s (connection %s): HTTP %s", origin, conn_id, response.status_code)
    return True


def send_slack(alert: Alert, conn_id: str) -> bool:
    """Post the alert's text and blocks to a Slack incoming webhook; True when Slack took it."""
    secrets: list[str | None] = []
    try:
        from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook

        hook = SlackWebhookHook(slack_webhook_conn_id=conn_id, timeout=TIMEOUT_SECONDS)
        secrets = _connection_secrets(hook, conn_id)
        with redacted_http_logs(secrets):
            hook.send(text=alert.text, blocks=alert.payload["blocks"])
    except Exception as error:  # delivery problems are reported, never raised
        return _failed("audit alert Slack message", f"connection {conn_id}", error, secrets)
    log.info("audit alert Slack message accepted (connection %s)", conn_id)
    return True


def send_pagerduty(conn_id: str, action: str, key: str, *, summary: str = "", severity: str = "error",
                   source: str = "kafka-zk-audit", component: str | None = None, group: str | None = None,
                   details: dict[str, Any] | None = None, links: list[dict[str, str]] | None = None) -> bool:
    """One PagerDuty Events v2 event, ``trigger`` or ``resolve``, for the finding of dedup key ``key``."""
    secrets: list[str | None] = []
    try:
        import pagerduty
        from airflow.providers.pagerduty.hooks.pagerduty_events import PagerdutyEventsHook, prepare_event_data

        hook = PagerdutyEventsHook(pagerduty_events_conn_id=conn_id)
        secrets = [hook.integration_key, *_connection_secrets(hook, conn_id)]
        mask(*secrets)
        connection = hook.get_connection(conn_id)
        host, ca_bundle = connection.host, connection.extra_dejson.get("ca_bundle")
        data = prepare_event_data(summary=summary[:1024] or key, severity=PAGERDUTY_SEVERITY.get(severity, "error"),
                                  source=source, custom_details=details, component=component, group=group,
                                  class_type="kafka-zk-audit", action=action, dedup_key=key, links=links)
        client = pagerduty.EventsApiV2Client(
            hook.integration_key, base_url=host.rstrip("/") if host and "://" in host else None,
            **({"verify": ssl.create_default_context(cafile=ca_bundle)} if ca_bundle else {}))
        client.timeout = TIMEOUT_SECONDS
        with redacted_http_logs(secrets):
            client.send_event(**data)
    except Exception as error:  # delivery problems are reported, never raised
        return _failed(f"PagerDuty {action} of {key}", f"connection {conn_id}", error, secrets)
    log.info("PagerDuty %s of %s accepted (connection %s)", action, key, conn_id)
    return True


def send_opsgenie(conn_id: str, action: str, key: str, *, message: str = "", severity: str = "error",
                  description: str = "", entity: str | None = None, details: dict[str, str] | None = None,
                  tags: Sequence[str] = ()) -> bool:
    """Create (``trigger``) or close (``resolve``) the Opsgenie alert whose alias is the finding's key ``key``."""
    secrets: list[str | None] = []
    try:
        from airflow.providers.opsgenie.hooks.opsgenie import OpsgenieAlertHook

        hook = OpsgenieAlertHook(opsgenie_conn_id=conn_id)
        configuration = hook.get_conn().api_client.configuration  # the client retries 5xx for up to a minute
        configuration.retry_count, configuration.retry_max_delay = OPSGENIE_RETRIES, TIMEOUT_SECONDS
        secrets = _connection_secrets(hook, conn_id)
        with redacted_http_logs(secrets):
            if action == "trigger":
                hook.create_alert({"message": (message or key)[:130], "alias": key, "description": description[:15000],
                                   "priority": OPSGENIE_PRIORITY.get(severity, "P3"), "source": "kafka-zk-audit",
                                   "entity": entity, "details": details or {}, "tags": list(tags)})
            else:
                hook.close_alert(key, identifier_type="alias",
                                 payload={"source": "kafka-zk-audit", "note": (message or "resolved")[:25000]})
    except Exception as error:  # delivery problems are reported, never raised
        return _failed(f"Opsgenie {action} of {key}", f"connection {conn_id}", error, secrets)
    log.info("Opsgenie %s of %s accepted (connection %s)", action, key, conn_id)
    return True
