"""The whole DAG, end to end, with ``airflow dags test`` on a SQLite metadata DB.

Real parts only: the session's ZooKeeper, the simulator writing a Kafka cluster in Kafka's
encodings, spark-submit (local), Great Expectations with Data Docs, Airflow 3. Each run plants
many problems at once on distinct subjects instead of one run per problem.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest
import yaml
from kazoo.client import KazooClient

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS, ENTITIES
from kafka_zk_audit_testing.browser import render_dom, text_of
from kafka_zk_audit_testing.receivers import CollectingHandler, WebhookReceiver, smtp_receiver, webhook_receiver
from kafka_zk_audit_testing.simulator import ClusterSpec, Planted, Simulator
from kafka_zk_audit_testing.simulator.plants import MIGRATION_HEALTH_CHECKS
from kafka_zk_audit_testing.spark_cluster import standalone_cluster

pytestmark = pytest.mark.dag

# Planted together in one run (distinct subjects). The /controller plants exclude each other:
# controller_session_mismatch runs here, controller_not_alive in the history run, and
# controller_missing in the CLI run.
PLANTED_TOGETHER = tuple(
    c for c in CHECK_IDS
    if not BY_ID[c].history and c not in {"controller_missing", "controller_not_alive"}
    and c not in MIGRATION_HEALTH_CHECKS  # they need a migration in flight: tests/audit/checks/test_migration.py
)
SPEC = ClusterSpec(era="3.x", brokers=4, racks=2, topics=4, partitions=4, replication_factor=3,
                   groups=2, consumers_per_group=2, threads_per_consumer=2, seed=11)
TEST_CONFIG = """
sla:
  delete_topic: 0s
  reassignment: 0s
  preferred_election: 0s
"""


@pytest.fixture(scope="session")
def airflow_session(tmp_path_factory) -> dict[str, str]:
    """An Airflow home with a migrated SQLite DB, shared by every DAG run of the session."""
    home = tmp_path_factory.mktemp("airflow")
    env = airflow_env(airflow_home=home, base={k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")})
    ensure_metadata_db(env)
    return env


@pytest.fixture
def audit_config(tmp_path) -> str:
    path = tmp_path / "audit.yaml"
    path.write_text(TEST_CONFIG)
    return str(path)


def run_audit_dag(env: dict[str, str], zk_hosts: str, chroot: str, warehouse: Path, config: str | None,
                  label: str, extra_env: dict[str, str] | None = None,
                  spark_conn_id: str = "spark_default") -> tuple[int, dict, list[dict]]:
    env = {**env, **(extra_env or {})}
    env["AIRFLOW_CONN_ZOOKEEPER_DEFAULT"] = json.dumps(
        {"conn_type": "zookeeper", "host": zk_hosts, "extra": {"chroot": chroot}}
    )
    conf = {"warehouse": str(warehouse), "audit_config": config, "run_label": label, "spark_conn_id": spark_conn_id}
    result = run_dag_once(env, conf, warehouse / f"{label}.log")
    summaries = list(warehouse.glob(f"runs/*-{label}/summary.json"))
    assert summaries, f"no summary; log tail:\n{result.log_path.read_text()[-4000:]}"
    summary = json.loads(summaries[0].read_text())
    # the gate validated (a crash in the gate must not pass for a failed validation)
    assert "error" not in summary["gate"], f"{summary['gate']}; log tail:\n{result.log_path.read_text()[-4000:]}"
    assert isinstance(summary["gate"]["failed_expectations"], int)
    findings = pq.read_table(warehouse / "findings" / f"snapshot_id={summary['snapshot_id']}").to_pylist()
    return result.returncode, summary, findings


def subjects(findings: list[dict], check_id: str) -> list[tuple]:
    return [(f["topic"], f["partition"], f["group_id"], f["broker_id"], f["path"])
            for f in findings if f["check_id"] == check_id]


def assert_planted_found(planted, findings: list[dict], earlier=(), also_touched=frozenset()) -> None:
    """Each plant is reported on its subject; nothing is reported that no plant (or earlier plant, or a
    subject changed on purpose: ``also_touched``) explains."""
    expected_ids = {c for p in earlier for c in (p.check_id, *p.implied)}
    for plant in planted:
        found = [f for f in findings if f["check_id"] == plant.check_id]
        match = [f for f in found if f["path"] == plant.path
                 and (plant.topic is None or f["topic"] == plant.topic)
                 and (plant.group_id is None or f["group_id"] == plant.group_id)]
        assert match, f"{plant.check_id} not reported on {plant}; got {found}"
        expected_ids |= {plant.check_id, *plant.implied}
    planted_subjects = {
        s for p in (*planted, *earlier) for s in (p.topic, p.group_id, p.broker_id, p.path) if s is not None
    } | set(also_touched)
    for f in findings:
        if f["check_id"] in expected_ids:
            continue
        touches = {f["topic"], f["group_id"], f["broker_id"], f["path"]} & planted_subjects
        assert touches, f"unexpected finding on an unplanted subject: {f}"


def test_dag_folder_imports_without_errors(airflow_session):
    code = (
        "from airflow.dag_processing.dagbag import DagBag; import sys; "
        f"b = DagBag(dag_folder={airflow_session['AIRFLOW__CORE__DAGS_FOLDER']!r}); "
        "print(b.import_errors); sys.exit(1 if b.import_errors or 'kafka_zk_audit' not in b.dags else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=airflow_session, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_clean_cluster_passes_the_gate_with_a_spark_cluster_master(airflow_session, zk_server, zk_chroot, tmp_path,
                                                                   audit_config):
    """A clean cluster gives no error/critical finding. The audit runs on a Spark standalone cluster
    (master + worker on 127.0.0.1): moving off local[*] is a change of the Spark connection only."""
    sim = Simulator(hosts=zk_server.hosts + zk_chroot)
    try:
        sim.write(SPEC)
        with standalone_cluster(tmp_path / "spark") as master:
            host, port = master.rsplit(":", 1)
            spark_conn = {"AIRFLOW_CONN_SPARK_CLUSTER": json.dumps({"conn_type": "spark", "host": host,
                                                                    "port": int(port)})}
            code, summary, findings = run_audit_dag(airflow_session, zk_server.hosts, zk_chroot, tmp_path / "wh",
                                                    audit_config, "clean", extra_env=spark_conn,
                                                    spark_conn_id="spark_cluster")
            log = (tmp_path / "wh" / "clean.log").read_text()
    finally:
        sim.close()
    assert f"spark-submit --master {master} " in log
    # the app really ran on the cluster's executor, not in a local driver that ignored the master
    assert "Granted executor ID" in log and "Starting executor ID driver" not in log
    assert "spark.driver.host" not in log.split("Spark-Submit cmd:", 1)[1].split("\n", 1)[0]
    bad = [f for f in findings if f["severity"] in ("error", "critical")]
    assert bad == [], bad
    assert summary["gate"]["success"] is True and code == 0
    assert set(summary["checks"]) == set(CHECK_IDS)
    assert summary["baseline_snapshot_id"] is None
    assert (tmp_path / "wh" / "data_docs" / "index.html").exists()


# -- one planted cluster, three successive DAG runs ------------------------------------------
# Run 1 plants every non-history check at once; between runs 1 and 2 time passes, epochs and
# offsets go back, a topic is deleted and recreated and one problem is fixed; run 3 changes nothing.
# Alerts go to a real SMTP server and a real webhook receiver on 127.0.0.1 through Airflow
# connections; the Data Docs the three gates built are opened in headless Chromium.
SMTP_PASSWORD = "pw-Smtp-e2e-5ecret-314"
WEBHOOK_TOKEN = "T0E2E/B0E2E/e2e-hook-5ecret"
RECIPIENT = "kafka-oncall@example.com"
HISTORY_PLANTS = ("leader_epoch_regressed", "controller_epoch_regressed", "offset_regressed", "controller_not_alive")


@dataclass
class AuditRun:
    code: int
    summary: dict[str, Any]
    findings: list[dict[str, Any]]
    log: str
    emails: list[Any] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class History:
    warehouse: Path
    planted: list[Planted]
    history: list[Planted]
    recreated_topic: str
    fixed: Planted
    runs: list[AuditRun]


def alert_config(tmp: Path) -> str:
    path = tmp / "audit-alerts.yaml"
    path.write_text(TEST_CONFIG + yaml.safe_dump({"alerts": {
        "email_to": [RECIPIENT], "smtp_conn_id": "smtp_e2e", "webhook_conn_id": "webhook_e2e", "top_offenders": 100,
    }}))
    return str(path)


def alert_connections(smtp_port: int, webhook: WebhookReceiver) -> dict[str, str]:
    return {
        "AIRFLOW_CONN_SMTP_E2E": json.dumps({
            "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port, "login": "audit-sender",
            "password": SMTP_PASSWORD,
            "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "kafka-zk-audit@example.com",
                      "retry_limit": 0, "timeout": 10},
        }),
        "AIRFLOW_CONN_WEBHOOK_E2E": json.dumps({"conn_type": "http", "host": webhook.url(f"/hook/{WEBHOOK_TOKEN}")}),
    }


def topic_to_recreate(sim: Simulator, touched: set[str]) -> str:
    """A topic of the simulated cluster that some group consumes and no plant touched."""
    for group in reversed(sim.model.groups):
        for topic in reversed(group.topics):
            if topic not in touched and group.group_id not in touched:
                return topic
    raise AssertionError("no untouched consumed topic to recreate")


@pytest.fixture(scope="module")
def history(airflow_session, zk_server, tmp_path_factory) -> Iterator[History]:
    tmp = tmp_path_factory.mktemp("history")
    warehouse, chroot = tmp / "wh", "/e2e_history"
    admin = KazooClient(hosts=zk_server.hosts)
    admin.start(timeout=15)
    admin.ensure_path(chroot)
    sim = Simulator(hosts=zk_server.hosts + chroot)
    config = alert_config(tmp)
    runs: list[AuditRun] = []
    with smtp_receiver(SMTP_PASSWORD) as (smtp_port, inbox), webhook_receiver() as webhook:
        conns = alert_connections(smtp_port, webhook)

        def audit(label: str) -> None:
            sent, posted = len(inbox.envelopes), len(webhook.posts)
            code, summary, findings = run_audit_dag(airflow_session, zk_server.hosts, chroot, warehouse, config,
                                                    label, extra_env=conns)
            runs.append(AuditRun(code, summary, findings, (warehouse / f"{label}.log").read_text(),
                                 CollectingHandler.messages_of(inbox.envelopes[sent:]), webhook.posts[posted:]))

        try:
            sim.write(SPEC)
            planted = [sim.plant(check_id) for check_id in PLANTED_TOGETHER]
            audit("planted")

            sim.advance(steps=1)
            history_plants = [sim.plant(c) for c in HISTORY_PLANTS]
            touched = {s for p in (*planted, *history_plants) for s in (p.topic, p.group_id) if s}
            recreated = topic_to_recreate(sim, touched)
            sim.recreate_topic(recreated)
            fixed = next(p for p in planted if p.check_id == "delete_marker_orphaned")
            admin.delete(chroot + fixed.path)
            audit("history")

            audit("unchanged")
        finally:
            sim.close()
            admin.stop()
            admin.close()
    yield History(warehouse, planted, history_plants, recreated, fixed, runs)


def test_every_planted_problem_is_found_on_its_subject(history):
    first = history.runs[0]
    assert first.code != 0 and first.summary["gate"]["success"] is False
    assert first.summary["baseline_snapshot_id"] is None
    assert_planted_found(history.planted, first.findings)
    for plant in history.planted:
        assert first.summary["checks"][plant.check_id] >= 1
    assert set(first.summary["checks"]) == set(CHECK_IDS)
    assert {f["status"] for f in first.findings} == {"new"}
    assert first.summary["new_findings"] == len(first.findings) and first.summary["resolved_findings"] == 0


def test_history_regressions_new_ongoing_and_resolved(history):
    first, second, third = history.runs
    assert second.code != 0
    assert second.summary["baseline_snapshot_id"] == first.summary["snapshot_id"]
    assert_planted_found(history.history, second.findings, earlier=history.planted,
                         also_touched={history.recreated_topic})
    by_id = {f["check_id"]: f for f in second.findings if f["topic"] != history.recreated_topic}
    assert by_id["leader_not_in_isr"]["status"] == "ongoing"
    assert by_id["leader_not_in_isr"]["first_seen"] == first.summary["snapshot_id"]
    for plant in history.history:
        assert by_id[plant.check_id]["status"] == "new", plant
    assert "delete_marker_orphaned" not in by_id
    assert second.summary["resolved_findings"] >= 1

    # Nothing changed before run 3: the regressions (relative to run 2) are resolved, nothing is new.
    assert third.summary["baseline_snapshot_id"] == second.summary["snapshot_id"]
    assert third.summary["new_findings"] == 0
    assert {f["status"] for f in third.findings} == {"ongoing"}
    regressions = {"leader_epoch_regressed", "controller_epoch_regressed", "offset_regressed"}
    assert not [f for f in third.findings if f["check_id"] in regressions]
    assert third.summary["resolved_findings"] >= len(regressions)
    assert third.code != 0  # the ongoing errors still fail the gate


def test_offsets_of_a_recreated_topic_are_explained(history):
    second = history.runs[1]
    topic = history.recreated_topic
    on_topic = [f for f in second.findings if f["topic"] == topic]
    assert on_topic, f"nothing reported for the recreated topic {topic}"
    assert {f["check_id"] for f in on_topic} == {"offset_regressed"}, on_topic
    for finding in on_topic:
        # Explained: reported with severity info and status explained, never flagged for the gate.
        assert (finding["severity"], finding["status"]) == ("info", "explained"), finding
        assert "explained: the topic was deleted and recreated (czxid 0x" in finding["detail"], finding
    audit_offsets = pq.read_table(
        history.warehouse / "tables" / "audit_offsets" / f"snapshot_id={second.summary['snapshot_id']}"
    ).to_pylist()
    recreated_rows = [row for row in audit_offsets if row["topic"] == topic]
    assert recreated_rows and not any(row["offset_regressed"] for row in recreated_rows), recreated_rows
    plain = next(f for f in second.findings if f["check_id"] == "offset_regressed" and f["topic"] != topic)
    assert "recreated" not in plain["detail"]
    assert (plain["severity"], plain["status"]) == ("error", "new"), plain


def test_alerts_reach_smtp_and_webhook_and_only_new_findings_alert_again(history):
    first, second, third = history.runs

    [message] = first.emails
    assert message["To"] == RECIPIENT and message["From"] == "kafka-zk-audit@example.com"
    assert f"gate FAILED for snapshot {first.summary['snapshot_id']}" in message["Subject"]
    body = message.get_body(("html",)).get_content()
    [post] = first.posts
    assert post["path"] == f"/hook/{WEBHOOK_TOKEN}"
    facts = post["json"]["kafka_zk_audit"]
    assert facts["snapshot_id"] == first.summary["snapshot_id"] and facts["baseline_snapshot_id"] is None
    counts = {c["check_id"]: (c["count"], c["new"]) for c in facts["checks"]}
    for check_id, count in first.summary["checks"].items():
        if count:
            assert counts[check_id] == (count, count), check_id
    gating = [p for p in history.planted if BY_ID[p.check_id].severity in ("critical", "error")]
    new_listed = {(f["check_id"], f["path"]) for f in facts["new_findings"]}
    for plant in history.planted:
        assert (plant.check_id, plant.path) in new_listed, plant
    for plant in gating:
        assert plant.path in body and plant.check_id in body
    offender_names = {o["name"] for o in facts["top_offenders"]}
    assert {p.topic for p in gating if p.topic} & offender_names
    docs = str(history.warehouse / "data_docs" / "index.html")
    assert facts["data_docs"] == docs and docs in body and docs in post["json"]["text"]

    # Run 2: only what is new since run 1 is listed; the ongoing problems are not repeated as new.
    [message2] = second.emails
    [post2] = second.posts
    facts2 = post2["json"]["kafka_zk_audit"]
    new2 = {f["check_id"] for f in facts2["new_findings"]}
    assert set(HISTORY_PLANTS) <= new2
    assert "leader_not_in_isr" not in new2 and "delete_marker_orphaned" not in new2
    assert facts2["baseline_snapshot_id"] == first.summary["snapshot_id"]
    assert "leader_epoch_regressed" in message2["Subject"] or "controller_epoch_regressed" in message2["Subject"]

    # Run 3: the same problems, nothing new: no e-mail, no webhook, and the log says why.
    assert third.emails == [] and third.posts == []
    assert "no alert sent (alerts.only_new is true)" in third.log

    for run in history.runs:
        assert SMTP_PASSWORD not in run.log and WEBHOOK_TOKEN not in run.log
    raw = [m.as_string() for m in (message, message2)] + [json.dumps(p["json"]) for p in (post, post2)]
    assert not [r for r in raw if SMTP_PASSWORD in r or WEBHOOK_TOKEN in r]


def test_data_docs_in_headless_chromium(history):
    """The site the three gates built, opened offline: every suite on the index, the failing
    expectation with the planted partition's row on its validation page."""
    docs = history.warehouse / "data_docs"
    index = render_dom(docs / "index.html")
    assert 'class="bootstrap-table' in index  # the index's tables are built by its (local) scripts
    index_text = text_of(index)
    for suite in (*ENTITIES, "drift", "migration"):
        assert suite in index_text, suite
    # the eight entity suites, the drift suite and the readiness suite
    assert "Showing 1 to 10 of 10 rows" in index_text
    assert "of 30 rows" in index_text  # ten validation results per run, three runs (paginated)
    assert index_text.startswith("ZooKeeper → KRaft migration readiness")  # the link to the readiness pages

    pages = sorted((docs / "validations" / "partitions").rglob("*.html"))
    assert len(pages) == len(history.runs)
    # the index links the latest result
    assert quote(Path(pages[-1]).relative_to(docs).as_posix()) in index
    text = text_of(render_dom(pages[-1]))
    plant = next(p for p in history.planted if p.check_id == "leader_not_in_isr")
    assert "Expectation Suite: partitions" in text and "Status: Failed" in text
    assert "leader_not_in_isr (error): the state's leader is not in its isr" in text
    assert "**" not in text
    # the expectations are listed by name: leader_not_in_isr's block ends where offline_partition's starts
    failing = text[text.index("leader_not_in_isr (error)"):text.index("offline_partition (critical)")]
    assert "1 unexpected values found" in failing and plant.topic in failing and plant.path in failing
    assert "evidence" in failing and "isr [" in failing
