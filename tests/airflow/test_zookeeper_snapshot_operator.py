"""The snapshot operator: its options, the hook's report of what the auditor's identity may read, and ``execute`` in a
DAG run (a live cluster, one from its files, one that fails and alerts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from airflow.sdk import DAG, task
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook
from kafka_zk_audit.airflow.notifications.task_failure import TaskFailureNotifier
from kafka_zk_audit.airflow.operators.zookeeper_snapshot import ZooKeeperSnapshotOperator
from kafka_zk_audit.airflow.xcoms import snapshot_id_list
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.receivers import smtp_receiver, webhook_receiver
from tests.airflow.dag_runs import ALERT_ROUTES, route_alerts, run_dag

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_operator_keyword_arguments_override_single_options():
    default = ZooKeeperSnapshotOperator(task_id="default")
    assert default.options == SnapshotOptions()
    gentle = ZooKeeperSnapshotOperator(
        task_id="gentle", options=SnapshotOptions(exclude=("/zookeeper", "/consumers")), reads_per_second=5000,
        max_reads_in_flight=2000, max_bytes_in_flight=8 * 1024 * 1024, reconnect_timeout_s=120,
    )
    assert gentle.options == SnapshotOptions(
        exclude=("/zookeeper", "/consumers"), reads_per_second=5000, max_reads_in_flight=2000,
        max_bytes_in_flight=8 * 1024 * 1024, reconnect_timeout_s=120,
    )
    with pytest.raises(ValueError, match="max_reads_in_flight must be at least 1"):
        ZooKeeperSnapshotOperator(task_id="bad", max_reads_in_flight=0)


@pytest.mark.zk
def test_hook_says_whether_its_identity_may_read_the_chroot(zk_server, zk_chroot, zk_client, monkeypatch):
    zk_client.add_auth("digest", "kafka:kafka-secret")
    zk_client.create("/creator-only", b"", acl=[make_digest_acl("kafka", "kafka-secret", all=True)])
    conn = {"conn_type": "zookeeper", "host": zk_server.hosts, "login": "auditor", "password": "auditor-pw",
            "extra": {"chroot": f"{zk_chroot}/creator-only"}}
    monkeypatch.setenv("AIRFLOW_CONN_ZK_AUDITOR", json.dumps(conn))
    ok, message = ZooKeeperHook(zk_conn_id="zk_auditor").test_connection()
    assert ok and "as digest:auditor, which may NOT read" in message and "auditor-pw" not in message
    conn["extra"]["chroot"] = zk_chroot
    monkeypatch.setenv("AIRFLOW_CONN_ZK_AUDITOR", json.dumps(conn))
    ok, message = ZooKeeperHook(zk_conn_id="zk_auditor").test_connection()
    assert ok and message.endswith("which may read the chroot's root")


# --- execute in a DAG run -------------------------------------------------------------------------------------------

SMTP_PASSWORD = "smtp-secret"
RECIPIENT = ALERT_ROUTES["email_to"][0]
SLACK_TOKEN = "T0SNAP/B0SNAP/snapshot-slack-5ecret"
PAGERDUTY_KEY = "snapshot-Routing-Key-5ecret"
OPSGENIE_KEY = "snapshot-0psgenie-Key-5ecret"
# a route of its own for the paging channels, taking only critical findings: a failed task goes to every route
PAGING_ROUTE = {"severities": ["critical"], "slack_conn_id": "slack_failures", "pagerduty_conn_id": "pd_failures",
                "opsgenie_conn_id": "og_failures"}


@pytest.fixture(scope="module")
def snapshot_run(airflow_db, zk_server, zookeeper_data, tmp_path_factory) -> Iterator[dict[str, Any]]:
    """One DAG run: the snapshot task mapped over a live cluster (the session's ZooKeeper), a cluster read from
    ZooKeeper's files and a cluster whose files are gone; a task after it gets the snapshot ids as a list. Failures
    alert through the TaskFailureNotifier to loopback SMTP and webhook receivers."""
    base = tmp_path_factory.mktemp("snapshot_run")
    chroot = "/airflow_snapshot_run"
    zk_server.ensure_chroot(chroot)
    client = KazooClient(hosts=zk_server.hosts + chroot)
    client.start(timeout=15)
    try:
        client.create("/brokers/ids/1", b'{"host": "b1", "port": 9092}', makepath=True)
        client.create("/brokers/topics/orders", b'{"partitions": {"0": [1]}}', makepath=True)
    finally:
        client.stop()
        client.close()
    settings = base / "settings.yaml"
    with smtp_receiver(SMTP_PASSWORD) as (smtp_port, inbox), webhook_receiver() as webhook, \
            webhook_receiver(tls_dir=base / "tls") as pagerduty, pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW_CONN_ZK_LIVE", json.dumps({"conn_type": "zookeeper", "host": zk_server.hosts,
                                                         "extra": {"chroot": chroot}}))
        route_alerts(patch, smtp_port, SMTP_PASSWORD, webhook)
        patch.setenv("AIRFLOW_CONN_SLACK_FAILURES", json.dumps(
            {"conn_type": "slackwebhook", "host": webhook.url("/slack"), "password": SLACK_TOKEN}))
        patch.setenv("AIRFLOW_CONN_OG_FAILURES", json.dumps(
            {"conn_type": "opsgenie", "host": webhook.url("/opsgenie"), "password": OPSGENIE_KEY}))
        patch.setenv("AIRFLOW_CONN_PD_FAILURES", json.dumps(
            {"conn_type": "pagerduty_events", "host": pagerduty.url("/pagerduty"), "password": PAGERDUTY_KEY,
             "extra": {"ca_bundle": pagerduty.ca_file}}))
        settings.write_text(yaml.safe_dump({"alerts": {**ALERT_ROUTES, "routes": [PAGING_ROUTE]}}))
        with DAG("snapshot_operator", schedule=None, start_date=START, params={"label": "t1"},
                 default_args={"on_failure_callback": TaskFailureNotifier(audit_config=str(settings))}) as dag:
            snapshot = ZooKeeperSnapshotOperator.partial(
                task_id="snapshot", warehouse=str(base / "warehouse"), snapshot_suffix="{{ params.label }}",
                map_index_template="{{ task.cluster }}",
            ).expand_kwargs([
                {"cluster": "live", "zk_conn_id": "zk_live", "files": None},
                {"cluster": "files", "zk_conn_id": None, "files": {"data_dir": f"file://{zookeeper_data}",
                                                                   "log_dir": None, "sftp_conn_id": None}},
                {"cluster": "gone", "zk_conn_id": None, "files": {"data_dir": str(base / "no-such-dir"),
                                                                  "log_dir": None, "sftp_conn_id": None}},
            ])

            @task(trigger_rule="all_done")
            def snapshot_ids(ids: Any) -> list[str]:
                return snapshot_id_list(ids)

            snapshot_ids(snapshot.output)
        outcome = run_dag(dag)
        yield {"outcome": outcome, "warehouse": Warehouse(str(base / "warehouse")), "inbox": inbox.messages(),
               "webhook": list(webhook.posts), "pagerduty": list(pagerduty.posts)}


def test_each_cluster_pushes_its_snapshot_id_and_the_tasks_after_get_a_list(snapshot_run):
    outcome, warehouse = snapshot_run["outcome"], snapshot_run["warehouse"]
    assert [outcome.state_of("snapshot", i) for i in range(3)] == ["success", "success", "failed"]
    live, files = outcome.xcom("snapshot", map_index=0), outcome.xcom("snapshot", map_index=1)
    assert live.endswith("-live-t1") and files.endswith("-files-t1")
    assert outcome.xcom("snapshot", map_index=2) is None  # a failed cluster pushes nothing
    assert outcome.xcom("snapshot_ids") == [live, files]  # a list, in the clusters' order
    for map_index, snapshot_id in ((0, live), (1, files)):
        manifest = outcome.xcom("snapshot", "manifest", map_index)
        assert manifest["snapshot_id"] == snapshot_id and manifest == warehouse.read_json(
            warehouse.manifest_path(snapshot_id))
    assert outcome.xcom("snapshot", "manifest", 0)["cluster"] == "live"
    assert outcome.xcom("snapshot", "manifest", 0)["znodes"] >= 4  # the chroot, /brokers, its ids and topics
    assert outcome.xcom("snapshot", "manifest", 1)["cluster"] == "files"


def test_a_failed_snapshot_alerts_with_its_cluster_task_and_error(snapshot_run):
    """The TaskFailureNotifier, as the DAG's failure callback of every task: one e-mail and one webhook POST for the
    cluster whose files are gone, none for the two that succeeded."""
    [message] = snapshot_run["inbox"]
    assert message["To"] == RECIPIENT
    assert "gone" in message["Subject"] and "snapshot" in message["Subject"]
    body = message.get_body(("html",)).get_content()
    assert "FilesSourceError" in body and "no-such-dir" in body
    [post] = [p for p in snapshot_run["webhook"] if p["path"] == "/hook/alerts"]
    assert "gone" in json.dumps(post["json"])


def test_a_failed_snapshot_pages_every_route_once_with_a_key_of_its_cluster_and_task(snapshot_run):
    """The paging route takes only critical findings, yet gets the failure: a cluster nobody can audit is unwatched.
    Slack gets the message, PagerDuty and Opsgenie one trigger each, keyed by cluster and task; no secret in the
    log."""
    key = "kafka-zk-audit:gone:task_failed:snapshot"
    posts = snapshot_run["webhook"]
    [slack] = [p for p in posts if p["path"] == f"/slack/{SLACK_TOKEN}"]
    assert "gone" in slack["json"]["text"] and "audit could NOT complete" in slack["json"]["text"]
    [opsgenie] = [p for p in posts if p["path"] == "/opsgenie/v2/alerts"]
    assert opsgenie["json"]["alias"] == key and opsgenie["json"]["priority"] == "P1"
    assert opsgenie["json"]["entity"] == "gone" and "FilesSourceError" in opsgenie["json"]["description"]
    [event] = [p["json"] for p in snapshot_run["pagerduty"] if p["path"] == "/pagerduty/v2/enqueue"]
    assert event["event_action"] == "trigger" and event["dedup_key"] == key
    assert event["routing_key"] == PAGERDUTY_KEY
    assert event["payload"]["severity"] == "critical" and event["payload"]["group"] == "gone"
    assert event["payload"]["component"] == "snapshot"
    assert len(posts) == 3 and len(snapshot_run["pagerduty"]) == 1  # nothing for the two clusters that succeeded
    for secret in (SLACK_TOKEN, OPSGENIE_KEY, PAGERDUTY_KEY, SMTP_PASSWORD):
        assert secret not in snapshot_run["outcome"].log
