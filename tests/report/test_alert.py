"""The alerts of a run: message content, e-mail through a real SMTP server, webhook to a real HTTP server.

Both servers listen on 127.0.0.1 and free ports. The warehouse is written with pyarrow (no Spark):
three successive snapshots, the second with new findings, the third with only ongoing ones. The alerts follow the
findings' lifecycle (tests/report/test_lifecycle.py): a finding alerts when it starts firing, once.
"""

from __future__ import annotations

import base64
import email
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from aiosmtpd.controller import Controller

from kafka_zk_audit.airflow.notifications.audit_alert import AuditAlertNotifier
from kafka_zk_audit.airflow.notifications.channels import redact, url_origin, url_secrets
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert import build_alert
from kafka_zk_audit.report.alert_state import plan_lifecycle, read_alerts, read_state, record_alerts
from kafka_zk_audit_testing.receivers import (
    CollectingHandler,
    WebhookReceiver,
    accept_only,
    smtp_receiver,
    webhook_receiver,
)
from kafka_zk_audit_testing.zk_server import free_port

S1, S2, S3 = "20250101T000000Z", "20250101T010000Z", "20250101T020000Z"
SMTP_LOGIN = "audit-sender"
SMTP_PASSWORD = "pw-Smtp-5ecret-771"
WEBHOOK_TOKEN = "T0001/B0002/hook-5ecret-token"
RECIPIENT = "oncall@example.com"

FINDINGS_ARROW = pa.schema([
    ("snapshot_id", pa.string()), ("check_id", pa.string()), ("severity", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("group_id", pa.string()), ("broker_id", pa.int32()), ("path", pa.string()),
    ("detail", pa.string()), ("first_seen", pa.string()), ("status", pa.string()),
])

OFFLINE = {"check_id": "offline_partition", "severity": "critical", "topic": "orders", "partition": 0,
           "path": "/brokers/topics/orders/partitions/0/state", "detail": "leader is -1 and no isr member is alive"}
UNDER = {"check_id": "under_replicated", "severity": "warning", "topic": "orders", "partition": 1,
         "path": "/brokers/topics/orders/partitions/1/state", "detail": "isr [1] smaller than replicas [1, 2]"}
NOT_IN_ISR = {"check_id": "leader_not_in_isr", "severity": "error", "topic": "payments", "partition": 3,
              "path": "/brokers/topics/payments/partitions/3/state", "detail": "leader 3 not in isr [1, 2]"}
OWNER = {"check_id": "owner_not_registered", "severity": "error", "topic": "payments", "partition": 0,
         "group_id": "billing", "path": "/consumers/billing/owners/payments/0",
         "detail": "owner billing-c9-0 is not registered under /consumers/billing/ids"}
NO_CONFIG = {"check_id": "topic_config_missing", "severity": "warning", "topic": "payments",
             "path": "/brokers/topics/payments", "detail": "no /config/topics/payments"}

# snapshot -> (finding, first_seen) pairs; status is new when first_seen is the snapshot itself.
HISTORY = {
    S1: [(OFFLINE, S1), (UNDER, S1)],
    S2: [(OFFLINE, S1), (UNDER, S1), (NOT_IN_ISR, S2), (OWNER, S2), (NO_CONFIG, S2)],
    S3: [(OFFLINE, S1), (UNDER, S1), (NOT_IN_ISR, S2), (OWNER, S2), (NO_CONFIG, S2)],
}


def write_snapshot(wh: Warehouse, snapshot_id: str, baseline: str | None,
                   findings: list[tuple[dict[str, Any], str]] | None = None) -> None:
    """Manifest, findings Parquet (Spark-like directory) and audit.json of one audited snapshot."""
    rows = [{"snapshot_id": snapshot_id, "topic": None, "partition": None, "group_id": None, "broker_id": None,
             **finding, "first_seen": first_seen, "status": "new" if first_seen == snapshot_id else "ongoing"}
            for finding, first_seen in (HISTORY[snapshot_id] if findings is None else findings)]
    snapshot_dir = Path(wh.snapshot_dir(snapshot_id))
    snapshot_dir.mkdir(parents=True)
    wh.write_json(wh.manifest_path(snapshot_id), {
        "snapshot_id": snapshot_id, "ensemble": "127.0.0.1:2181", "chroot": "/kafka",
        "started_at": "2025-01-01T00:00:00+00:00", "znodes": 42, "zxid_window": [1, 9],
    })
    findings_dir = Path(wh.findings_dir(snapshot_id))
    findings_dir.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=FINDINGS_ARROW), findings_dir / "part-00000-c000.snappy.parquet")
    (findings_dir / "_SUCCESS").write_text("")
    (findings_dir / ".part-00000-c000.snappy.parquet.crc").write_bytes(b"\x00crc")
    counts = {check_id: sum(row["check_id"] == check_id for row in rows) for check_id in CHECK_IDS}
    wh.write_json(f"{wh.run_dir(snapshot_id)}/audit.json", {
        "snapshot_id": snapshot_id, "baseline_snapshot_id": baseline, "checks": counts,
        "findings": len(rows), "new_findings": sum(row["status"] == "new" for row in rows),
        "resolved_findings": 0, "suppressed_findings": 0,
    })


def failed_verdict(wh: Warehouse) -> dict[str, Any]:
    return {
        "success": False, "failed_expectations": 3, "non_gating_failed_expectations": 2,
        "failed": [
            {"suite": "partitions", "check_id": "offline_partition", "severity": "critical", "unexpected_count": 1,
             "gating": True},
            {"suite": "partitions", "check_id": "leader_not_in_isr", "severity": "error", "unexpected_count": 1,
             "gating": True},
            {"suite": "consumer_owners", "check_id": "owner_not_registered", "severity": "error",
             "unexpected_count": 1, "gating": True},
            {"suite": "partitions", "check_id": "under_replicated", "severity": "warning", "unexpected_count": 1,
             "gating": False},
        ],
        "data_docs": wh.data_docs_index,
    }


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    wh = Warehouse(str(tmp_path / "warehouse"))
    write_snapshot(wh, S1, None)
    write_snapshot(wh, S2, S1)
    write_snapshot(wh, S3, S2)
    return wh


@dataclass
class FakeTaskInstance:
    """What the notifier reads of the callback context's ``ti``."""

    verdict: dict[str, Any] | None
    snapshot_id: str = S2
    task_id: str = "gate"
    log_url: str = "http://airflow.example.com/dags/kafka_zk_audit/runs/manual/tasks/gate"
    pulls: list[tuple[str, str]] = field(default_factory=list)

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        self.pulls.append((task_ids, key))
        if task_ids == "gate" and key == "verdict":
            return self.verdict
        if task_ids == "snapshot" and key == "return_value":
            return self.snapshot_id
        return None


@pytest.fixture
def smtp_server() -> Iterator[tuple[int, CollectingHandler]]:
    """A real SMTP server on 127.0.0.1 accepting AUTH with SMTP_LOGIN/SMTP_PASSWORD (no TLS)."""
    with smtp_receiver(SMTP_PASSWORD) as server:
        yield server


@pytest.fixture
def webhook_server() -> Iterator[WebhookReceiver]:
    """A real HTTP server on 127.0.0.1: POSTs under /hook answer 200, under /fail 500."""
    with webhook_receiver() as receiver:
        yield receiver


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, smtp_port: int, webhook: str | None,
              only_new: bool = True, email_to: list[str] | None = None, top_offenders: int = 10) -> str:
    """Connections through env vars, and an audit config selecting them; returns the config path."""
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_TEST", json.dumps({
        "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port, "login": SMTP_LOGIN, "password": SMTP_PASSWORD,
        "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "audit@example.com", "retry_limit": 0,
                  "timeout": 5},
    }))
    if webhook:
        monkeypatch.setenv("AIRFLOW_CONN_WEBHOOK_TEST", json.dumps({"conn_type": "http", "host": webhook}))
    path = tmp_path / f"audit-{only_new}.yaml"
    path.write_text(yaml.safe_dump({"alerts": {
        "only_new": only_new, "email_to": [RECIPIENT] if email_to is None else email_to,
        "smtp_conn_id": "smtp_test", "webhook_conn_id": "webhook_test" if webhook else None,
        "top_offenders": top_offenders,
    }}))
    return str(path)


def seed(wh: Warehouse, snapshot_id: str = S1) -> None:
    """The alerts of ``snapshot_id`` as if they had been sent: the state the next snapshot's alerts start from."""
    lifecycle, previous = plan_lifecycle(wh, snapshot_id, "default", load_config(None))
    record_alerts(wh, lifecycle, previous, [])


def lifecycle_of(wh: Warehouse, snapshot_id: str, cfg: Any):
    return plan_lifecycle(wh, snapshot_id, "default", cfg)[0]


def notify(wh: Warehouse, snapshot_id: str, config: str | None, verdict: dict[str, Any] | None) -> None:
    notifier = AuditAlertNotifier(warehouse=wh.root, snapshot_id=snapshot_id, audit_config=config)
    notifier.notify({"ti": FakeTaskInstance(verdict, snapshot_id)})


def html_body(message: email.message.EmailMessage) -> str:
    return message.get_body(("html",)).get_content()


def all_logs(caplog: pytest.LogCaptureFixture) -> str:
    """Everything logged by the code under test (the test SMTP server's own log left out)."""
    return "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("mail.log"))


def test_failed_gate_alerts_by_email_and_webhook(warehouse, smtp_server, webhook_server, tmp_path, monkeypatch,
                                                 caplog):
    caplog.set_level(logging.DEBUG)
    # urllib3's own level too: a swagger client (Opsgenie's SDK) sets it to WARNING for its whole process
    caplog.set_level(logging.DEBUG, logger="urllib3")
    smtp_port, inbox = smtp_server
    config = configure(tmp_path, monkeypatch, smtp_port=smtp_port, webhook=webhook_server.url(f"/hook/{WEBHOOK_TOKEN}"))
    seed(warehouse)  # S1's offline partition fires already

    notify(warehouse, S2, config, failed_verdict(warehouse))

    [message] = inbox.messages()
    assert message["To"] == RECIPIENT and message["From"] == "audit@example.com"
    assert S2 in message["Subject"] and "gate FAILED" in message["Subject"]
    assert "2 critical/error finding(s) started firing" in message["Subject"]
    assert "leader_not_in_isr" in message["Subject"] and "owner_not_registered" in message["Subject"]
    body = html_body(message)
    for fragment in (
        # counts per check: severity, check, total, new
        ">offline_partition</td>",
        "under_replicated", "topic_config_missing",
        # new since the previous run, with subject, path and detail
        "/consumers/billing/owners/payments/0", "owner billing-c9-0 is not registered under /consumers/billing/ids",
        "/brokers/topics/payments/partitions/3/state", "leader 3 not in isr [1, 2]",
        # top offenders: the worst, ongoing, shows too
        "topic orders", "group billing", "leader is -1 and no isr member is alive",
        # baseline, gate, cluster and links
        f"since {S1}", "3 gating expectation(s) failed", "127.0.0.1:2181/kafka",
        warehouse.data_docs_index, Path(warehouse.data_docs_index).as_uri(),
    ):
        assert fragment in body, fragment

    [post] = webhook_server.posts
    assert post["path"] == f"/hook/{WEBHOOK_TOKEN}"
    assert post["headers"]["Content-Type"].startswith("application/json")
    payload = post["json"]
    text = payload["text"]
    assert text.startswith(f"Kafka ZooKeeper audit: gate FAILED for snapshot {S2}")
    for fragment in ("Started firing (2):", "Alerts (critical/error): 2 started firing, 0 resolved, 3 firing",
                     "[error] owner_not_registered group billing topic payments partition 0 at /consumers/billing/"
                     "owners/payments/0 (key kafka-zk-audit:default:owner_not_registered:",
                     "Findings per check (total / new):", "critical offline_partition", "1 / 0",
                     "New since the previous run (3):",
                     "[error, new] owner_not_registered group billing topic payments partition 0 at "
                     "/consumers/billing/owners/payments/0: owner billing-c9-0 is not registered",
                     "Top offenders (critical/error):", "1. topic orders", "2. group billing",
                     f"Data Docs: {warehouse.data_docs_index}"):
        assert fragment in text, fragment
    assert payload["blocks"][0]["type"] == "header" and S2 in payload["blocks"][0]["text"]["text"]
    facts = payload["kafka_zk_audit"]
    assert facts["snapshot_id"] == S2 and facts["baseline_snapshot_id"] == S1
    assert facts["gate"]["success"] is False and facts["gate"]["failed_expectations"] == 3
    assert {c["check_id"]: (c["count"], c["new"]) for c in facts["checks"]} == {
        "offline_partition": (1, 0), "leader_not_in_isr": (1, 1), "owner_not_registered": (1, 1),
        "under_replicated": (1, 0), "topic_config_missing": (1, 1),
    }
    assert [f["check_id"] for f in facts["new_findings"]] == [
        "leader_not_in_isr", "owner_not_registered", "topic_config_missing"]
    assert [(o["kind"], o["name"]) for o in facts["top_offenders"]] == [
        ("topic", "orders"), ("group", "billing"), ("topic", "payments")]
    assert facts["top_offenders"][0]["worst"]["detail"] == OFFLINE["detail"]
    assert facts["data_docs"] == warehouse.data_docs_index
    assert facts["run_url"].startswith("http://airflow.example.com/")
    assert [e["check_id"] for e in facts["started_firing"]] == ["leader_not_in_isr", "owner_not_registered"]
    record = read_alerts(warehouse, S2)
    assert [(d["channel"], d["ok"]) for d in record["deliveries"]] == [("email", True), ("webhook", True)]
    assert sorted(record["deliveries"][0]["triggers"]) == sorted(e["key"] for e in facts["started_firing"])
    assert read_state(warehouse, "default")["snapshot_id"] == S2

    logs = all_logs(caplog)
    assert "e-mail sent to oncall@example.com" in logs and "webhook accepted by http://127.0.0.1:" in logs
    # The HTTP hook names the URL it POSTs to (DEBUG), and urllib3 the request line: both redacted.
    assert "Sending 'POST' to url: ***" in logs and '"POST *** HTTP/1.1" 200' in logs
    assert post["headers"]["User-Agent"] == "kafka-zk-audit" and "Authorization" not in post["headers"]
    raw_mail = inbox.envelopes[0].content.decode("utf-8", "replace")
    for secret in (SMTP_PASSWORD, WEBHOOK_TOKEN):
        assert secret not in logs
        assert secret not in raw_mail and secret not in json.dumps(payload)


def test_a_firing_finding_alerts_once_unless_only_new_is_off(warehouse, smtp_server, webhook_server, tmp_path,
                                                             monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    smtp_port, inbox = smtp_server
    hook = webhook_server.url("/hook/x")
    only_new = configure(tmp_path, monkeypatch, smtp_port=smtp_port, webhook=hook, only_new=True)
    seed(warehouse)
    notify(warehouse, S2, only_new, failed_verdict(warehouse))
    assert len(inbox.envelopes) == 1 and len(webhook_server.posts) == 1
    after_s2 = read_state(warehouse, "default")

    notify(warehouse, S3, only_new, failed_verdict(warehouse))  # the gate still fails, on the same findings
    assert len(inbox.envelopes) == 1 and len(webhook_server.posts) == 1
    assert (f"snapshot {S3}: the gate failed, but no critical/error finding started firing or resolved since the "
            "previous run (3 firing, 0 pending); no alert sent (alerts.only_new is true)") in all_logs(caplog)
    notify(warehouse, S3, only_new, failed_verdict(warehouse))  # a retried task: sent already, not again
    assert f"snapshot {S3}: its alerts were sent already" in all_logs(caplog)

    every_failure = configure(tmp_path, monkeypatch, smtp_port=smtp_port, webhook=hook, only_new=False)
    Path(warehouse.alerts_path(S3)).unlink()  # S3's alerts again, with other settings
    warehouse.write_json(warehouse.alert_state_path("default"), after_s2)
    notify(warehouse, S3, every_failure, failed_verdict(warehouse))
    message = inbox.messages()[-1]
    assert "3 critical/error finding(s) firing, none started now" in message["Subject"] and S3 in message["Subject"]
    post = webhook_server.posts[-1]
    assert "New since the previous run (0):\n  none" in post["json"]["text"]
    assert "still firing (alerts.only_new is off)" in post["json"]["text"]


def test_first_snapshot_alerts_without_baseline(warehouse, tmp_path, monkeypatch):
    config = load_config(configure(tmp_path, monkeypatch, smtp_port=1, webhook=None, top_offenders=1))
    alert = build_alert(warehouse.root, S1, config, failed_verdict(warehouse), lifecycle_of(warehouse, S1, config))
    assert alert is not None
    assert alert.subject == (f"[kafka-zk-audit] gate FAILED for snapshot {S1}: "
                             "1 critical/error finding(s) started firing: offline_partition")
    assert "(first audited snapshot, no baseline)" in alert.text
    assert len(alert.facts["new_findings"]) == 1 and alert.facts["new_findings_not_listed"] == 1
    assert "… and 1 more" in alert.text and len(alert.facts["top_offenders"]) == 1


def test_no_route_sends_nothing_and_a_passed_gate_still_resolves(warehouse, smtp_server, tmp_path, monkeypatch,
                                                                  caplog):
    caplog.set_level(logging.INFO)
    smtp_port, inbox = smtp_server
    silent = configure(tmp_path, monkeypatch, smtp_port=smtp_port, webhook=None, email_to=[])
    notify(warehouse, S1, silent, {"success": True, "failed_expectations": 0})
    assert f"snapshot {S1}: no alert route (alerts.email_to, alerts.webhook_conn_id and alerts.routes are empty)" in (
        all_logs(caplog))
    assert inbox.envelopes == [] and list(read_state(warehouse, "default")["firing"])  # offline_partition fires

    # the offline partition is fixed and the gate passes: its resolve is still sent
    write_snapshot(warehouse, "20250101T040000Z", S3, findings=[(UNDER, S1)])
    mail = configure(tmp_path, monkeypatch, smtp_port=smtp_port, webhook=None)
    notify(warehouse, "20250101T040000Z", mail, {"success": True, "failed_expectations": 0})
    [message] = inbox.messages()
    assert message["Subject"] == ("[kafka-zk-audit] gate passed for snapshot 20250101T040000Z: 1 critical/error "
                                  "finding(s) resolved: offline_partition")
    assert "Resolved (1)" in html_body(message) and "after 4h00m" in html_body(message)
    assert [e["check_id"] for e in read_state(warehouse, "default")["firing"].values()] == ["under_replicated"]


@pytest.mark.parametrize("webhook_kind", ["http_500", "unreachable", "not_http"])
def test_delivery_failures_are_logged_and_never_raise(warehouse, webhook_server, tmp_path, monkeypatch, caplog, capfd,
                                                      webhook_kind):
    caplog.set_level(logging.DEBUG)
    hook = {
        "http_500": webhook_server.url(f"/fail/{WEBHOOK_TOKEN}"),
        "unreachable": f"http://127.0.0.1:{free_port()}/hook/{WEBHOOK_TOKEN}",
        "not_http": f"ftp://127.0.0.1:{webhook_server.port}/hook/{WEBHOOK_TOKEN}",
    }[webhook_kind]
    config = configure(tmp_path, monkeypatch, smtp_port=free_port(), webhook=hook)  # nothing listens on SMTP
    seed(warehouse)

    notify(warehouse, S2, config, failed_verdict(warehouse))  # must not raise

    record = read_alerts(warehouse, S2)
    assert [d["ok"] for d in record["deliveries"]] == [False, False]
    assert len(record["retry_next_run"]["triggers"]) == 2  # not delivered: sent again at the next run
    # the two that no channel took are not firing yet; the others (S1's, and a warning no route takes) are
    assert {e["check_id"] for e in read_state(warehouse, "default")["firing"].values()} == {
        "offline_partition", "under_replicated", "topic_config_missing"}
    logs = all_logs(caplog)
    assert "audit alert e-mail NOT delivered (SMTP connection smtp_test): ConnectionRefusedError" in logs
    if webhook_kind == "http_500":
        assert "webhook NOT delivered (connection webhook_test, http://127.0.0.1:" in logs
        assert "HTTP 500 Internal Server Error: receiver broke" in logs
        assert len(webhook_server.posts) == 1
    elif webhook_kind == "unreachable":
        assert "webhook NOT delivered (connection webhook_test, http://127.0.0.1:" in logs
        assert "ConnectionError: HTTPConnectionPool(host='127.0.0.1'" in logs and "Connection refused" in logs
        # the HTTP hook's own warning names the path (the token) it could not reach: redacted
        assert "with url: *** (Caused by NewConnectionError" in logs
    else:
        assert "webhook NOT delivered (connection webhook_test, ftp://127.0.0.1:" in logs
        assert "InvalidSchema: No connection adapters were found for '***'" in logs
        assert webhook_server.posts == []
    printed = capfd.readouterr()
    assert WEBHOOK_TOKEN not in logs and SMTP_PASSWORD not in logs
    assert WEBHOOK_TOKEN not in printed.out + printed.err


def test_smtp_rejecting_the_login_is_logged_without_the_password(warehouse, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    handler = CollectingHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, authenticator=accept_only("another-one"),
                            auth_require_tls=False)
    controller.start()
    try:
        config = configure(tmp_path, monkeypatch, smtp_port=port, webhook=None)
        notify(warehouse, S2, config, failed_verdict(warehouse))
    finally:
        controller.stop()
    logs = all_logs(caplog)
    assert "e-mail NOT delivered (SMTP connection smtp_test): SMTPAuthenticationError" in logs
    assert SMTP_PASSWORD not in logs and handler.envelopes == []


def test_templated_fields_render_from_the_callback_context(warehouse, smtp_server, tmp_path, monkeypatch):
    smtp_port, inbox = smtp_server
    config = configure(tmp_path, monkeypatch, smtp_port=smtp_port, webhook=None)
    notifier = AuditAlertNotifier(
        warehouse="{{ params.warehouse }}",
        snapshot_id="{{ ti.xcom_pull(task_ids='snapshot') }}",
        audit_config="{{ params.audit_config or '' }}",
    )
    ti = FakeTaskInstance(failed_verdict(warehouse), snapshot_id=S2)
    notifier({"ti": ti, "params": {"warehouse": warehouse.root, "audit_config": config}})  # BaseNotifier.__call__
    assert (notifier.warehouse, notifier.snapshot_id, notifier.audit_config) == (warehouse.root, S2, config)
    assert ("gate", "verdict") in ti.pulls
    [message] = inbox.messages()
    assert S2 in message["Subject"]


def test_missing_findings_or_snapshot_id_are_logged(warehouse, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    config = configure(tmp_path, monkeypatch, smtp_port=free_port(), webhook=None)
    notify(warehouse, "20250101T030000Z", config, failed_verdict(warehouse))
    notify(warehouse, "None", config, None)
    logs = all_logs(caplog)
    assert "snapshot 20250101T030000Z was not audited: no alerts" in logs
    assert "no alerts: the run has no snapshot" in logs


def test_webhook_basic_auth_from_the_connection(warehouse, webhook_server, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    url = webhook_server.url(f"/hook/{WEBHOOK_TOKEN}")
    cfg = load_config(configure(tmp_path, monkeypatch, smtp_port=free_port(), webhook=url, email_to=[]))
    monkeypatch.setenv("AIRFLOW_CONN_WEBHOOK_TEST", json.dumps({
        "conn_type": "http", "host": url, "login": "audit", "password": SMTP_PASSWORD,
        "extra": {"X-Audit-Source": "kafka-zk-audit"},
    }))
    alert = build_alert(warehouse.root, S2, cfg, failed_verdict(warehouse), lifecycle_of(warehouse, S2, cfg))
    assert alert is not None

    assert AuditAlertNotifier.send_webhook(alert, cfg) is True

    [post] = webhook_server.posts
    expected = "Basic " + base64.b64encode(f"audit:{SMTP_PASSWORD}".encode()).decode()
    assert post["headers"]["Authorization"] == expected
    assert post["headers"]["X-Audit-Source"] == "kafka-zk-audit"  # connection extra: headers, as the provider does
    assert post["json"]["kafka_zk_audit"]["snapshot_id"] == S2
    logs = all_logs(caplog)
    assert "webhook accepted by http://127.0.0.1:" in logs
    assert SMTP_PASSWORD not in logs and WEBHOOK_TOKEN not in logs


def test_url_secrets_origin_and_redaction():
    url = f"https://hooks.example.com/services/{WEBHOOK_TOKEN}?x=1"
    assert url_origin(url) == "https://hooks.example.com"
    assert url_origin("http://127.0.0.1:8080/hook") == "http://127.0.0.1:8080"
    assert url_secrets(url) == [url, f"/services/{WEBHOOK_TOKEN}?x=1", f"/services/{WEBHOOK_TOKEN}"]
    assert url_secrets("https://user:pa55@hooks.example.com/") == ["https://user:pa55@hooks.example.com/", "pa55"]
    assert url_secrets("https://hooks.example.com") == ["https://hooks.example.com"]
    assert redact("token T0001/B0002 in text", ["T0001/B0002", None, ""]) == "token *** in text"
    assert redact(f"POST /services/{WEBHOOK_TOKEN}?x=1 failed", url_secrets(url)) == "POST *** failed"


def test_an_earlier_snapshot_alerting_after_a_later_one_sends_nothing(warehouse, tmp_path, monkeypatch, caplog):
    """Two runs sharing a warehouse may alert out of order: the later snapshot's alerts moved the state on, so the
    earlier one's are stale and nothing is sent for it."""
    caplog.set_level(logging.INFO)
    config = load_config(configure(tmp_path, monkeypatch, smtp_port=1, webhook=None))
    seed(warehouse, S3)
    lifecycle = lifecycle_of(warehouse, S2, config)
    assert lifecycle.stale
    assert build_alert(warehouse.root, S2, config, failed_verdict(warehouse), lifecycle) is None
    assert f"snapshot {S2}: a later snapshot's alerts were sent already; no alert" in all_logs(caplog)
