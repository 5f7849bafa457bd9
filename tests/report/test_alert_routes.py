"""Alert routes by severity through the providers' own hooks: Slack (SlackWebhookHook), PagerDuty Events v2
(PagerdutyEventsHook) and Opsgenie (OpsgenieAlertHook), each pointed by its Airflow connection at a real HTTP server on
127.0.0.1 that answers as the service does (kafka_zk_audit_testing.receivers; HTTPS with a self-signed certificate for
PagerDuty, whose client takes only HTTPS). A finding triggers once with its dedup key and resolves with the same key;
secrets reach neither a log line nor the warehouse.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert_state import read_alerts, read_state
from kafka_zk_audit.report.lifecycle import dedup_key
from kafka_zk_audit_testing.receivers import WebhookReceiver, webhook_receiver
from tests.report.test_alert import (
    NO_CONFIG,
    NOT_IN_ISR,
    OFFLINE,
    OWNER,
    S1,
    S2,
    S3,
    UNDER,
    all_logs,
    failed_verdict,
    notify,
    write_snapshot,
)

S4 = "20250101T025900Z"  # topic_config_missing, first seen at S2, still 1 minute short of its 2h
PAGERDUTY_KEY = "R0uting-Key-5ecret-PD-42"
OPSGENIE_KEY = "0psgenie-Api-Key-5ecret-17"
SLACK_TOKEN = "T9SLACK/B9SLACK/slack-5ecret-token"
SECRETS = (PAGERDUTY_KEY, OPSGENIE_KEY, SLACK_TOKEN)


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    """test_alert's three snapshots: S2 with new findings, S3 with the same ones."""
    wh = Warehouse(str(tmp_path / "warehouse"))
    for snapshot_id, baseline in ((S1, None), (S2, S1), (S3, S2)):
        write_snapshot(wh, snapshot_id, baseline)
    return wh


@pytest.fixture
def webhook_server():
    """The receiver over HTTP (a webhook, Slack, Opsgenie)."""
    with webhook_receiver() as receiver:
        yield receiver


@pytest.fixture
def pagerduty_server(tmp_path: Path):
    """The receiver over HTTPS, with its self-signed certificate."""
    with webhook_receiver(tls_dir=tmp_path / "tls") as receiver:
        yield receiver


def route_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: WebhookReceiver,
                     pagerduty: WebhookReceiver, *, base: str = "", severities: list[str] | None = None) -> str:
    """Connections of the three providers' types pointing at the receivers, and one route through them."""
    monkeypatch.setenv("AIRFLOW_CONN_SLACK_TEST", json.dumps(
        {"conn_type": "slackwebhook", "host": receiver.url(f"{base}/slack"), "password": SLACK_TOKEN}))
    monkeypatch.setenv("AIRFLOW_CONN_PAGERDUTY_TEST", json.dumps(
        {"conn_type": "pagerduty_events", "host": pagerduty.url(f"{base}/pagerduty"), "password": PAGERDUTY_KEY,
         "extra": {"ca_bundle": pagerduty.ca_file}}))
    monkeypatch.setenv("AIRFLOW_CONN_OPSGENIE_TEST", json.dumps(
        {"conn_type": "opsgenie", "host": receiver.url(f"{base}/opsgenie"), "password": OPSGENIE_KEY}))
    path = tmp_path / "routes.yaml"
    path.write_text(yaml.safe_dump({"alerts": {
        "for": {"topic_config_missing": "2h"},
        "routes": [{"severities": severities or ["critical", "error", "warning"], "slack_conn_id": "slack_test",
                    "pagerduty_conn_id": "pagerduty_test", "opsgenie_conn_id": "opsgenie_test"}]}}))
    return str(path)


def key_of(finding: dict[str, Any]) -> str:
    return dedup_key("default", {"topic": None, "partition": None, "group_id": None, "broker_id": None, **finding})


def test_each_finding_triggers_once_and_resolves_with_the_same_key(warehouse, webhook_server, pagerduty_server,
                                                                  tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    config = route_everything(tmp_path, monkeypatch, webhook_server, pagerduty_server)

    notify(warehouse, S2, config, failed_verdict(warehouse))
    posts = webhook_server.posts
    pd_posts = pagerduty_server.posts
    firing = {key_of(f) for f in (OFFLINE, UNDER, NOT_IN_ISR, OWNER)}  # topic_config_missing waits for its 2h
    pagerduty = [p["json"] for p in pd_posts if p["path"] == "/pagerduty/v2/enqueue"]
    assert {(e["event_action"], e["dedup_key"]) for e in pagerduty} == {("trigger", k) for k in firing}
    assert {e["routing_key"] for e in pagerduty} == {PAGERDUTY_KEY}  # the hook took it from the connection
    offline = next(e for e in pagerduty if e["dedup_key"] == key_of(OFFLINE))
    assert offline["payload"]["severity"] == "critical" and offline["payload"]["source"] == "kafka-zk-audit"
    assert offline["payload"]["summary"].startswith("[default] offline_partition topic orders partition 0: leader")
    assert offline["payload"]["custom_details"]["path"] == OFFLINE["path"]
    opsgenie = [p for p in posts if p["path"] == "/opsgenie/v2/alerts"]
    assert {p["json"]["alias"] for p in opsgenie} == firing
    assert {p["headers"]["Authorization"] for p in opsgenie} == {f"GenieKey {OPSGENIE_KEY}"}
    assert {p["json"]["priority"] for p in opsgenie if p["json"]["alias"] == key_of(OFFLINE)} == {"P1"}
    [slack] = [p for p in posts if p["path"] == f"/slack/{SLACK_TOKEN}"]
    assert "Started firing (4):" in slack["json"]["text"] and key_of(OWNER) in slack["json"]["text"]
    assert slack["json"]["blocks"][0]["type"] == "header"
    record = read_alerts(warehouse, S2)
    assert record["lifecycle"]["counts"] == {"firing": 4, "pending": 1, "resolved": 0, "triggered": 4,
                                             "healed_while_pending": 0}
    assert [e["check_id"] for e in record["lifecycle"]["pending"]] == ["topic_config_missing"]
    assert all(d["ok"] for d in record["deliveries"]) and len(record["deliveries"]) == 1 + 4 + 4

    sent, pd_sent = len(posts), len(pd_posts)
    notify(warehouse, S3, config, failed_verdict(warehouse))  # the same findings: nothing new to send
    assert (len(posts), len(pd_posts)) == (sent, pd_sent)

    write_snapshot(warehouse, S4, S3, findings=[(OFFLINE, S1), (UNDER, S1), (OWNER, S2), (NO_CONFIG, S2)])
    notify(warehouse, S4, config, failed_verdict(warehouse))  # leader_not_in_isr fixed
    later = posts[sent:]
    assert [(p["json"]["event_action"], p["json"]["dedup_key"]) for p in pd_posts[pd_sent:]
            if p["path"] == "/pagerduty/v2/enqueue"] == [("resolve", key_of(NOT_IN_ISR))]
    assert [p["path"] for p in later if p["path"].startswith("/opsgenie")] == [
        f"/opsgenie/v2/alerts/{quote(key_of(NOT_IN_ISR), safe='')}/close?identifierType=alias"]
    [slack] = [p for p in later if p["path"].startswith("/slack")]
    assert "Resolved (1):" in slack["json"]["text"] and key_of(NOT_IN_ISR) in slack["json"]["text"]
    assert key_of(NOT_IN_ISR) not in read_state(warehouse, "default")["firing"]

    logs = all_logs(caplog)
    assert f"PagerDuty resolve of {key_of(NOT_IN_ISR)} accepted (connection pagerduty_test)" in logs
    assert f"Opsgenie trigger of {key_of(OFFLINE)} accepted (connection opsgenie_test)" in logs
    assert "audit alert Slack message accepted (connection slack_test)" in logs
    stored = "".join(p.read_text() for p in Path(warehouse.root).rglob("*.json"))
    for secret in SECRETS:
        assert secret not in logs and secret not in stored


def test_routes_take_only_their_severities(warehouse, webhook_server, pagerduty_server, tmp_path, monkeypatch):
    config = route_everything(tmp_path, monkeypatch, webhook_server, pagerduty_server, severities=["critical"])
    notify(warehouse, S2, config, failed_verdict(warehouse))
    events = [p["json"] for p in pagerduty_server.posts if p["path"] == "/pagerduty/v2/enqueue"]
    assert [e["dedup_key"] for e in events] == [key_of(OFFLINE)]
    assert [p["json"]["alias"] for p in webhook_server.posts if p["path"] == "/opsgenie/v2/alerts"] == [key_of(OFFLINE)]
    [slack] = [p for p in webhook_server.posts if p["path"].startswith("/slack")]
    assert "Started firing (1):" in slack["json"]["text"] and "Alerts (critical): 1 started firing" in (
        slack["json"]["text"])


def test_failed_deliveries_are_logged_without_secrets_and_sent_again(warehouse: Warehouse, webhook_server,
                                                                      pagerduty_server, tmp_path, monkeypatch, caplog,
                                                                      capfd):
    caplog.set_level(logging.DEBUG)
    config = route_everything(tmp_path, monkeypatch, webhook_server, pagerduty_server, base="/reject",
                              severities=["critical"])
    notify(warehouse, S2, config, failed_verdict(warehouse))  # every service answers 400: must not raise
    record = read_alerts(warehouse, S2)
    assert [(d["channel"], d["ok"]) for d in record["deliveries"]] == [
        ("slack", False), ("pagerduty", False), ("opsgenie", False)]
    assert record["retry_next_run"]["triggers"] == [key_of(OFFLINE)]
    assert len([p for p in pagerduty_server.posts if p["path"].startswith("/reject")]) == 1
    logs = all_logs(caplog)
    assert "audit alert Slack message NOT delivered (connection slack_test): AirflowException" in logs
    assert f"PagerDuty trigger of {key_of(OFFLINE)} NOT delivered (connection pagerduty_test)" in logs
    assert f"Opsgenie trigger of {key_of(OFFLINE)} NOT delivered (connection opsgenie_test)" in logs
    printed = capfd.readouterr()
    for secret in SECRETS:
        assert secret not in logs and secret not in printed.out + printed.err

    sent = len(pagerduty_server.posts)
    good = route_everything(tmp_path, monkeypatch, webhook_server, pagerduty_server, severities=["critical"])
    notify(warehouse, S3, good, failed_verdict(warehouse))  # the next run sends the trigger again
    events = [p["json"] for p in pagerduty_server.posts[sent:] if p["path"] == "/pagerduty/v2/enqueue"]
    assert [(e["event_action"], e["dedup_key"]) for e in events] == [("trigger", key_of(OFFLINE))]


def test_a_channel_that_fails_is_not_tried_again_for_the_other_findings_of_the_run(warehouse, webhook_server,
                                                                                    pagerduty_server, tmp_path,
                                                                                    monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    config = route_everything(tmp_path, monkeypatch, webhook_server, pagerduty_server, base="/reject")
    notify(warehouse, S2, config, failed_verdict(warehouse))  # four findings start firing; every service says 400
    record = read_alerts(warehouse, S2)
    events = [d for d in record["deliveries"] if d["channel"] in ("pagerduty", "opsgenie")]
    assert len(events) == 8 and not any(d["ok"] for d in events)
    assert len([p for p in pagerduty_server.posts if p["path"] == "/reject/pagerduty/v2/enqueue"]) == 1
    assert len([p for p in webhook_server.posts if p["path"] == "/reject/opsgenie/v2/alerts"]) == 1
    assert "pagerduty (connection pagerduty_test) failed: its other events of snapshot" in all_logs(caplog)
    assert sorted(record["retry_next_run"]["triggers"]) == sorted(key_of(f) for f in (OFFLINE, UNDER, NOT_IN_ISR,
                                                                                      OWNER))
