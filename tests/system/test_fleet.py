"""A fleet in one DAG run (the shared system run, tests/system/fleet_run.py).

The live clusters are snapshotted by mapped tasks and audited in one Spark app, each with its own findings,
baseline, alert route and Data Docs entries; the dead one fails its own snapshot task and alerts on its own;
between the runs charlie loses most of its topics and the drift suite fires for it alone; after the second run
retention prunes the first run's raw snapshots and keeps every cluster's baseline.
"""

from __future__ import annotations

import json
import re
import sqlite3

from tests.system.fleet_run import AUDITED, DEAD, FLEET_ROUTE, LIVE_FLEET, ROUTES, SystemRun


def test_each_live_cluster_is_audited_in_one_spark_app_with_its_own_findings(system: SystemRun):
    first = system.runs[0]
    clusters = first.fleet["clusters"]
    assert set(clusters) == {*AUDITED, DEAD}
    assert "bravo" in first.fleet["red"] and {"alpha", "charlie", "clean39", "kraft39"} <= set(first.fleet["green"])
    assert first.fleet["not_audited"] == [DEAD]
    assert first.returncode != 0
    submits = [line for line in first.log.splitlines() if "Spark-Submit cmd:" in line and "audit_snapshot.py" in line]
    assert len(submits) == 1, submits  # one audit app for the whole fleet
    ids = {name: clusters[name]["snapshot_id"] for name in AUDITED}
    assert all(sid in submits[0] for sid in ids.values()), submits[0]
    for name in LIVE_FLEET:
        # the first run's raw snapshots are pruned by the second run (see the retention test): read the second's
        kept = system.runs[1].snapshot_id(name)
        manifest = json.loads((system.warehouse / "snapshots" / f"snapshot_id={kept}" / "_MANIFEST.json").read_text())
        assert manifest["cluster"] == name and manifest["chroot"] == f"/fleet_{name}"
        checks = {f["check_id"] for f in first.findings(name)}
        if name == "bravo":
            assert "leader_not_in_isr" in checks
        else:
            assert not checks & {"leader_not_in_isr", "under_replicated"}, (name, checks)


def test_the_dead_cluster_alerts_on_its_own(system: SystemRun):
    first = system.runs[0]
    failures = [p["json"]["kafka_zk_audit"] for p in first.posts
                if p["json"].get("kafka_zk_audit", {}).get("kind") == "task_failure"]
    assert [(f["task_id"], f["cluster"]) for f in failures] == [("snapshot", DEAD)], failures
    assert any("could NOT complete" in p["json"]["text"] for p in first.posts)
    assert first.fleet["clusters"][DEAD]["status"] == "not audited"


def test_each_red_cluster_alerts_once_through_its_own_route(system: SystemRun):
    for run in system.runs:
        cluster_of = {run.snapshot_id(name): name for name in AUDITED}
        # the webhooks' findings alerts (Slack, Opsgenie and PagerDuty get theirs elsewhere: test_dag_e2e.py)
        gate_alerts = [p for p in run.posts if "kafka_zk_audit" in (p["json"] or {})
                       and p["json"]["kafka_zk_audit"].get("kind") != "task_failure"]
        alerted = [cluster_of[p["json"]["kafka_zk_audit"]["snapshot_id"]] for p in gate_alerts]
        assert len(alerted) == len(set(alerted)), alerted
        # alerts follow the findings' lifecycle: a red cluster whose findings started firing, or one whose firing
        # findings resolved (its gate may pass then)
        resolving = {name for name in AUDITED if run.summary(name)["alerts"]["counts"]["resolved"]}
        assert set(alerted) <= set(run.fleet["red"]) | resolving, (alerted, run.fleet["red"], resolving)
        for post, name in zip(gate_alerts, alerted, strict=True):
            assert post["path"] == ROUTES.get(name, FLEET_ROUTE), (name, post["path"])
            assert name in json.dumps(post["json"])
    # bravo is red in both runs with nothing new in the second: no second alert, and the log says why
    second = system.runs[1]
    assert "bravo" in system.runs[0].fleet["red"] and "bravo" in second.fleet["red"]
    assert not [p for p in second.posts if second.snapshot_id("bravo") in json.dumps(p["json"])]
    said = next(line for line in second.log.splitlines() if f"snapshot {second.snapshot_id('bravo')}: the gate" in line)
    assert "no alert sent (alerts.only_new is true)" in said, said


def test_baselines_are_per_cluster_and_drift_fires_for_the_cluster_that_lost_topics(system: SystemRun):
    first, second = system.runs
    for name in AUDITED:
        audit = json.loads((system.warehouse / "runs" / second.snapshot_id(name) / "audit.json").read_text())
        assert audit["baseline_snapshot_id"] == first.snapshot_id(name), name
    assert {"bravo", "charlie"} <= set(second.fleet["red"]) and "alpha" in second.fleet["green"]
    assert second.summary("charlie")["gate"]["failed_expectations"] >= 1
    assert ("[charlie] error expectation failed (gating): drift: "
            "expect_column_pair_values_a_to_be_greater_than_b(topics), 1 unexpected rows") in second.log, (
        second.log[-3000:])
    assert "[alpha] error expectation failed (gating): drift" not in second.log


def test_data_docs_show_each_suite_once_per_run_with_the_cluster_of_every_unexpected_row(system: SystemRun):
    docs = system.warehouse / "data_docs"
    index = (docs / "index.html").read_text()
    assert "audit_partitions" in index and "drift" in index
    for suite in ("partitions", "drift"):
        pages = sorted((docs / "validations" / suite).rglob("*.html"))
        assert len(pages) == len(system.runs), suite  # one validation per run for all the clusters
    second = system.runs[1]
    drift = sorted((docs / "validations" / "drift").rglob("*.html"))[-1].read_text()
    # the run is named by one of its snapshot ids ("<id> +9 snapshots"); the rows listed are charlie's only
    rows = re.sub(r"\d{8}T\d{6}Z-[\w.-]+ \+\d+ snapshots", "", drift)
    listed = [name for name in AUDITED if second.snapshot_id(name) in rows]
    assert listed == ["charlie"], listed  # the one row that dropped topics


def test_retention_prunes_the_first_run_and_keeps_the_baselines(system: SystemRun):
    first, second = system.runs
    for name in AUDITED:
        old, new = first.snapshot_id(name), second.snapshot_id(name)
        assert not (system.warehouse / "snapshots" / f"snapshot_id={old}").exists(), name
        assert not (system.warehouse / "tables" / "partitions" / f"snapshot_id={old}").exists(), name
        assert (system.warehouse / "findings" / f"snapshot_id={old}").exists(), name  # findings outlive data
        assert (system.warehouse / "snapshots" / f"snapshot_id={new}" / "_MANIFEST.json").exists(), name


def test_each_audited_cluster_publishes_an_asset_event_with_its_counts(system: SystemRun):
    db = sqlite3.connect(system.airflow_home / "airflow.db")
    events = [(uri, json.loads(extra)) for uri, extra in db.execute(
        "select a.uri, e.extra from asset_event e join asset a on a.id = e.asset_id order by e.id")]
    db.close()
    assert sorted(uri.rstrip("/") for uri, _ in events) == sorted([f"kafka-zk-audit://{n}" for n in AUDITED] * 2)
    by_snapshot = {extra["snapshot_id"]: extra for _, extra in events}
    for run in system.runs:
        for name in AUDITED:
            extra = by_snapshot[run.snapshot_id(name)]
            assert extra["gate_success"] is (run.fleet["clusters"][name]["status"] == "green"), (name, extra)
            assert extra["findings"] == run.fleet["clusters"][name]["findings"]
    assert by_snapshot[system.runs[0].snapshot_id("bravo")]["checks"]["leader_not_in_isr"] == 1


def test_a_finding_waits_for_its_for_then_pages_once(system: SystemRun):
    """secured's missing controller has ``for: 1s``: pending at the run that first sees it (no alert for it), firing at
    the next one, which sends its trigger once, through the fleet's route."""
    first, second = system.runs

    def started(run) -> list[str]:
        posts = [p["json"]["kafka_zk_audit"] for p in run.posts_to(FLEET_ROUTE)
                 if p["json"]["kafka_zk_audit"].get("snapshot_id") == run.snapshot_id("secured")]
        return [e["check_id"] for post in posts for e in post["started_firing"]]

    alerts1, alerts2 = first.summary("secured")["alerts"], second.summary("secured")["alerts"]
    [pending] = [e for e in alerts1["pending"] if e["check_id"] == "controller_missing"]
    assert pending["for_s"] == 1 and pending["age_s"] == 0 and pending["fires_in_s"] == 1
    assert "controller_missing" not in [e["check_id"] for e in alerts1["firing"]]
    assert "controller_missing" not in started(first)
    [firing] = [e for e in alerts2["firing"] if e["check_id"] == "controller_missing"]
    assert firing["key"] == pending["key"] and firing["firing_since"] == second.snapshot_id("secured")
    assert firing["age_s"] >= 1 and started(second).count("controller_missing") == 1
    assert f"  pending  [critical] controller_missing at {system.secured_plant.path}" in first.log
    assert f"  firing   [critical] controller_missing at {system.secured_plant.path}" in second.stdout
