"""The whole DAG, end to end, on the real parts: the e2e cluster of the shared system run (tests/system/fleet_run.py).

The session's ZooKeeper, the simulator writing a Kafka cluster in Kafka's encodings, spark-submit (a standalone
master in run 1, local in run 2), Great Expectations with Data Docs, Airflow 3. Run 1 plants every non-history check
at once on distinct subjects; before run 2 time passes, epochs and offsets go back, a topic is deleted and recreated
and one problem is fixed. Alerts go to a real SMTP server and a real webhook receiver on 127.0.0.1 through Airflow
connections; the Data Docs the gates built are opened in headless Chromium.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq

from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS, ENTITIES
from kafka_zk_audit.report.lifecycle import dedup_key
from kafka_zk_audit_testing.browser import render_dom, text_of
from tests.system.fleet_run import (
    HISTORY_PLANTS,
    PAGERDUTY_KEY,
    RECIPIENT,
    ROUTES,
    SECRETS,
    SLACK_ROUTE,
    SystemRun,
)


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


def test_clean_cluster_passes_the_gate(system: SystemRun):
    """A clean cluster gives no finding. (Run 1's apps ran on a standalone master:
    tests/airflow/test_standalone_master.py.)"""
    first = system.runs[0]
    assert first.findings("alpha") == []
    summary = first.summary("alpha")
    assert summary["gate"]["success"] is True and first.fleet["clusters"]["alpha"]["status"] == "green"
    assert set(summary["checks"]) == set(CHECK_IDS)
    assert summary["baseline_snapshot_id"] is None
    assert (system.warehouse / "data_docs" / "index.html").exists()


def test_every_planted_problem_is_found_on_its_subject(system: SystemRun):
    run = system.runs[0]
    summary, findings = run.summary("e2e"), run.findings("e2e")
    assert run.returncode != 0 and summary["gate"]["success"] is False
    assert summary["baseline_snapshot_id"] is None
    assert_planted_found(system.planted, findings)
    for plant in system.planted:
        assert summary["checks"][plant.check_id] >= 1
    assert set(summary["checks"]) == set(CHECK_IDS)
    assert {f["status"] for f in findings} == {"new"}
    assert summary["new_findings"] == len(findings) and summary["resolved_findings"] == 0


def test_history_regressions_new_ongoing_and_resolved(system: SystemRun):
    first, second = system.runs
    summary1, summary2, findings2 = first.summary("e2e"), second.summary("e2e"), second.findings("e2e")
    assert second.returncode != 0
    assert summary2["baseline_snapshot_id"] == summary1["snapshot_id"]
    assert_planted_found(system.history, findings2, earlier=system.planted, also_touched={system.recreated_topic})
    by_id = {f["check_id"]: f for f in findings2 if f["topic"] != system.recreated_topic}
    assert by_id["leader_not_in_isr"]["status"] == "ongoing"
    assert by_id["leader_not_in_isr"]["first_seen"] == summary1["snapshot_id"]
    for plant in system.history:
        assert by_id[plant.check_id]["status"] == "new", plant
    assert "delete_marker_orphaned" not in by_id  # fixed between the runs
    assert summary2["resolved_findings"] >= 1


def test_offsets_of_a_recreated_topic_are_explained(system: SystemRun):
    second = system.runs[1]
    topic = system.recreated_topic
    on_topic = [f for f in second.findings("e2e") if f["topic"] == topic]
    assert on_topic, f"nothing reported for the recreated topic {topic}"
    assert {f["check_id"] for f in on_topic} == {"offset_regressed"}, on_topic
    for finding in on_topic:
        # Explained: reported with severity info and status explained, never flagged for the gate.
        assert (finding["severity"], finding["status"]) == ("info", "explained"), finding
        assert "explained: the topic was deleted and recreated (czxid 0x" in finding["detail"], finding
    audit_offsets = pq.read_table(
        system.warehouse / "tables" / "audit_offsets" / f"snapshot_id={second.snapshot_id('e2e')}"
    ).to_pylist()
    recreated_rows = [row for row in audit_offsets if row["topic"] == topic]
    assert recreated_rows and not any(row["offset_regressed"] for row in recreated_rows), recreated_rows
    plain = next(f for f in second.findings("e2e") if f["check_id"] == "offset_regressed" and f["topic"] != topic)
    assert "recreated" not in plain["detail"]
    assert (plain["severity"], plain["status"]) == ("error", "new"), plain


def test_alerts_reach_smtp_and_webhook_and_only_new_findings_alert_again(system: SystemRun):
    first, second = system.runs
    summary1 = first.summary("e2e")

    [message] = first.emails
    assert message["To"] == RECIPIENT and message["From"] == "kafka-zk-audit@example.com"
    assert f"gate FAILED for snapshot {summary1['snapshot_id']}" in message["Subject"]
    body = message.get_body(("html",)).get_content()
    [post] = first.posts_to(ROUTES["e2e"])
    facts = post["json"]["kafka_zk_audit"]
    assert facts["snapshot_id"] == summary1["snapshot_id"] and facts["baseline_snapshot_id"] is None
    counts = {c["check_id"]: (c["count"], c["new"]) for c in facts["checks"]}
    for check_id, count in summary1["checks"].items():
        if count:
            assert counts[check_id] == (count, count), check_id
    gating = [p for p in system.planted if BY_ID[p.check_id].severity in ("critical", "error")]
    new_listed = {(f["check_id"], f["path"]) for f in facts["new_findings"]}
    for plant in system.planted:
        assert (plant.check_id, plant.path) in new_listed, plant
    for plant in gating:
        assert plant.path in body and plant.check_id in body
    offender_names = {o["name"] for o in facts["top_offenders"]}
    assert {p.topic for p in gating if p.topic} & offender_names
    docs = str(system.warehouse / "data_docs" / "index.html")
    assert facts["data_docs"] == docs and docs in body and docs in post["json"]["text"]

    # Run 2: only what is new since run 1 is listed; the ongoing problems are not repeated as new (a red cluster
    # with nothing new sends nothing: bravo, tests/system/test_fleet.py).
    [message2] = second.emails
    [post2] = second.posts_to(ROUTES["e2e"])
    facts2 = post2["json"]["kafka_zk_audit"]
    new2 = {f["check_id"] for f in facts2["new_findings"]}
    assert set(HISTORY_PLANTS) <= new2
    assert "leader_not_in_isr" not in new2 and "delete_marker_orphaned" not in new2
    assert facts2["baseline_snapshot_id"] == summary1["snapshot_id"]
    assert "leader_epoch_regressed" in message2["Subject"] or "controller_epoch_regressed" in message2["Subject"]

    for run in system.runs:
        for secret in SECRETS:
            assert secret not in run.log and secret not in run.stdout + run.stderr
    raw = [m.as_string() for m in (message, message2)] + [json.dumps(p["json"]) for p in (*first.posts, *second.posts)]
    assert not [r for r in raw for secret in SECRETS if secret in r]
    stored = [p for p in system.warehouse.rglob("*") if p.suffix in (".json", ".html") and p.is_file()]
    assert not [p for p in stored for secret in SECRETS if secret in p.read_text(errors="replace")]


def test_a_fixed_finding_resolves_with_the_key_it_triggered_with(system: SystemRun):
    """e2e's critical/error/warning findings go to PagerDuty (HTTPS), Opsgenie and Slack through the providers'
    hooks: run 1 triggers each once with its dedup key; run 2 triggers only what is new and resolves the problem
    fixed in between with the same key on all three."""
    first, second = system.runs
    [fixed] = [f for f in first.findings("e2e") if f["check_id"] == system.fixed.check_id
               and f["path"] == system.fixed.path]
    key = dedup_key("e2e", fixed)

    def events(run, action: str) -> list[str]:
        found = [p["json"] for p in run.pagerduty if p["path"] == "/pagerduty/v2/enqueue"]
        assert {e["routing_key"] for e in found} <= {PAGERDUTY_KEY}
        return [e["dedup_key"] for e in found if e["event_action"] == action]

    triggered1 = events(first, "trigger")
    record = json.loads((system.warehouse / "runs" / first.snapshot_id("e2e") / "alerts.json").read_text())
    routed = [e for e in record["lifecycle"]["firing"] if e["severity"] in ("critical", "error", "warning")]
    assert key in triggered1 and len(triggered1) == len(set(triggered1)) == len(routed)
    assert all(d["ok"] for d in record["deliveries"]) and record["retry_next_run"] == {"triggers": [], "resolves": []}
    assert {p["json"]["alias"] for p in first.posts_to("/opsgenie/v2/alerts")} == set(triggered1)
    [slack1] = first.posts_to(SLACK_ROUTE)
    assert key in slack1["json"]["text"] and f"Started firing ({len(triggered1)}):" in slack1["json"]["text"]

    assert key in events(second, "resolve")
    assert not set(events(second, "trigger")) & set(triggered1)  # a firing finding pages once
    assert f"/opsgenie/v2/alerts/{quote(key, safe='')}/close?identifierType=alias" in [p["path"] for p in second.posts]
    [slack2] = second.posts_to(SLACK_ROUTE)
    assert "Resolved (" in slack2["json"]["text"] and key in slack2["json"]["text"]

    alerts2 = second.summary("e2e")["alerts"]
    [resolved] = [e for e in alerts2["resolved"] if e["key"] == key]
    assert resolved["resolved_in"] == second.snapshot_id("e2e") and resolved["lasted_s"] >= 1
    page = (system.warehouse / "data_docs" / "alerts" / "index.html").read_text()
    assert "Resolved at this snapshot" in page and key in page


def test_data_docs_in_headless_chromium(system: SystemRun):
    """The site the two gates built, opened offline: every suite on the index, the failing expectation with the
    planted partition's row on its validation page."""
    docs = system.warehouse / "data_docs"
    index = render_dom(docs / "index.html")
    assert 'class="bootstrap-table' in index  # the index's tables are built by its (local) scripts
    index_text = text_of(index)
    for suite in (*ENTITIES, "drift", "migration"):
        assert suite in index_text, suite
    # the eight entity suites, the drift suite and the readiness suite
    assert "Showing 1 to 10 of 10 rows" in index_text
    results = len(list((docs / "validations").rglob("*.html")))
    assert results >= 10 * len(system.runs) and f"of {results} rows" in index_text  # every validation result listed
    assert index_text.startswith("ZooKeeper → KRaft migration readiness")  # the link to the readiness pages

    pages = sorted((docs / "validations" / "partitions").rglob("*.html"))
    assert len(pages) == len(system.runs)
    # the index links the latest result
    assert quote(Path(pages[-1]).relative_to(docs).as_posix()) in index
    text = text_of(render_dom(pages[-1]))
    plant = next(p for p in system.planted if p.check_id == "leader_not_in_isr")
    assert "Expectation Suite: partitions" in text and "Status: Failed" in text
    assert "leader_not_in_isr (error): the state's leader is not in its isr" in text
    assert "**" not in text
    # the expectations are listed by name: leader_not_in_isr's block ends where offline_partition's starts
    failing = text[text.index("leader_not_in_isr (error)"):text.index("offline_partition (critical)")]
    assert "unexpected values found" in failing and plant.topic in failing and plant.path in failing
    assert "evidence" in failing and "isr [" in failing
