"""The DAG under a real Airflow scheduler, DAG processor, triggerer and API server on loopback.

One shared run (tests/system/scheduled_run.py), of the package as a user installs it (a wheel in a new venv, one
copied DAG file: tests/system/test_install.py), proves what ``airflow dags test`` cannot: the scheduler creates the
hourly run by itself (the default schedule, catchup off), maps the snapshot over the settings' clusters, retries the
unreachable cluster's snapshot after its delay and alerts once when it has failed for good, and a second DAG
scheduled on the live cluster's Asset is triggered by the audit's event and reads its counts. The test holds the
warehouse's gate lock until the run's gate waits for it (two processes never hold it at once:
tests/contract/test_lock.py). The hourly run alerts for a leader outside its ISR in the live cluster; then the
triggerer's watch of the live cluster starts an event-driven audit of just that cluster when the test repairs it,
into the same warehouse: a resolve with the trigger's key; a transient violation healed within its ``for`` sends
nothing; the dead cluster still alerts only once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest

from tests.system.scheduled_run import DAG_ID, EVENTS_DAG_ID, PLANTED, RETRY_DELAY_S, TRANSIENT

pytestmark = pytest.mark.dag


def test_the_scheduler_creates_the_hourly_run_itself_with_catchup_off(scheduled):
    services = scheduled.services
    runs = services.query("select run_id, run_type, logical_date, run_after, queued_at from dag_run where dag_id = ?"
                          " order by id", DAG_ID)
    assert runs[0]["run_type"] == "scheduled", [dict(r) for r in runs]
    # the hour in which the scheduler created it (not the test's start: the two may straddle an hour boundary)
    created = datetime.fromisoformat(runs[0]["queued_at"]).replace(tzinfo=UTC)
    hour = created.replace(minute=0, second=0, microsecond=0)
    assert scheduled.started - timedelta(minutes=1) <= created
    # catchup off: the one run for the latest hour boundary (its start_date is years back), none before it
    first_after = datetime.fromisoformat(runs[0]["run_after"]).replace(tzinfo=UTC)
    assert first_after == hour, (first_after, hour)
    assert all(r["run_type"] == "scheduled" for r in runs)
    assert len(runs) <= 2  # a second one only if the test crossed the next hour
    dag = services.query("select is_paused, next_dagrun_create_after, timetable_summary from dag where dag_id = ?",
                         DAG_ID)[0]
    assert not dag["is_paused"]
    assert dag["timetable_summary"] in ("@hourly", "0 * * * *"), dag["timetable_summary"]
    next_after = datetime.fromisoformat(dag["next_dagrun_create_after"]).replace(tzinfo=UTC)
    assert next_after == hour + timedelta(hours=len(runs)), next_after


def test_the_snapshot_is_mapped_over_the_clusters_and_the_dead_one_is_retried_after_its_delay(scheduled):
    services = scheduled.services
    tis = {r["map_index"]: r for r in services.query(
        "select map_index, rendered_map_index, state, try_number from task_instance"
        " where dag_id = ? and run_id = ? and task_id = 'snapshot'", DAG_ID, scheduled.run_id)}
    assert {i: (t["state"], t["try_number"]) for i, t in tis.items()} == {0: ("success", 1), 1: ("failed", 2)}
    assert (tis[0]["rendered_map_index"], tis[1]["rendered_map_index"]) == ("live", "dead")
    first_try = services.query("select state, end_date from task_instance_history where dag_id = ? and run_id = ?"
                               " and task_id = 'snapshot' and map_index = 1 and try_number = 1",
                               DAG_ID, scheduled.run_id)
    assert len(first_try) == 1 and first_try[0]["state"] in ("failed", "up_for_retry"), [dict(r) for r in first_try]
    second_start = services.query("select start_date from task_instance where dag_id = ? and run_id = ?"
                                  " and task_id = 'snapshot' and map_index = 1", DAG_ID, scheduled.run_id)[0]
    waited = (datetime.fromisoformat(second_start["start_date"])
              - datetime.fromisoformat(first_try[0]["end_date"])).total_seconds()
    assert waited >= RETRY_DELAY_S, waited
    states = {r["task_id"]: r["state"] for r in services.query(
        "select task_id, state from task_instance where dag_id = ? and run_id = ? and task_id != 'snapshot'",
        DAG_ID, scheduled.run_id)}
    # the live cluster's planted leader outside its ISR fails the gate; no files: no history
    assert states == {"clusters": "success", "audit": "success", "gate": "failed", "history": "skipped",
                      "summary": "success", "retention": "success", "verdict": "failed"}, states


def test_the_dead_cluster_alerts_once_after_its_last_try(scheduled):
    failures = [p["json"]["kafka_zk_audit"] for p in scheduled.posts
                if p["json"].get("kafka_zk_audit", {}).get("kind") == "task_failure"]
    assert [(f["task_id"], f["cluster"]) for f in failures] == [("snapshot", "dead")], scheduled.posts
    text = next(p["json"]["text"] for p in scheduled.posts
                if p["json"].get("kafka_zk_audit", {}).get("kind") == "task_failure")
    assert "dead" in text and "snapshot" in text


def test_the_audits_asset_event_triggers_a_dag_scheduled_on_it(scheduled):
    runs = scheduled.consumer_runs  # after the hourly run (the event-driven audits publish events too, later)
    assert [(r["run_type"], r["state"]) for r in runs] == [("asset_triggered", "success")]
    assert [e["uri"].rstrip("/") for e in scheduled.consumer_events] == ["kafka-zk-audit://live"]
    extra = scheduled.consumer_events[0]["extra"]
    summary_path = next(scheduled.warehouse.glob(f"runs/{extra['snapshot_id']}/summary.json"))
    summary = json.loads(summary_path.read_text())
    assert extra["gate_success"] is summary["gate"]["success"] is False  # the planted leader outside its ISR
    assert extra["findings"] == sum(summary["checks"].values()) > 0, (extra, summary["checks"])


def test_one_active_run_at_a_time(scheduled):
    runs = scheduled.services.query("select start_date, end_date from dag_run where dag_id = ? and start_date"
                                    " is not null order by start_date", DAG_ID)
    for earlier, later in zip(runs, runs[1:], strict=False):
        assert earlier["end_date"] and earlier["end_date"] <= later["start_date"]


def test_the_gate_waits_for_the_warehouse_lock_and_each_run_finishes_intact(scheduled):
    assert "waiting for the gate lock" in scheduled.scheduled_gate_log
    # the hourly run's snapshot of the live cluster, then the event-driven audit's (the repair)
    [hourly] = scheduled.hourly_snapshot_ids
    [repaired] = scheduled.events.snapshot_ids
    summaries = {sid: json.loads((scheduled.warehouse / "runs" / sid / "summary.json").read_text())
                 for sid in (hourly, repaired)}
    for snapshot_id, summary in summaries.items():
        manifest = json.loads((scheduled.warehouse / "snapshots" / f"snapshot_id={snapshot_id}"
                               / "_MANIFEST.json").read_text())
        rows = pq.read_table(scheduled.warehouse / "snapshots" / f"snapshot_id={snapshot_id}").num_rows
        assert rows == manifest["znodes"], snapshot_id
        assert "error" not in summary["gate"], summary["gate"]
    # the event-driven audit's baseline is the hourly one; the repaired cluster has no finding
    assert [summaries[sid]["baseline_snapshot_id"] for sid in (hourly, repaired)] == [None, hourly]
    found = {check: n for check, n in summaries[hourly]["checks"].items() if n}
    assert found.get(PLANTED) == 1 and found.get(TRANSIENT) == 1, found
    assert not summaries[hourly]["gate"]["success"]
    assert not any(summaries[repaired]["checks"].values()) and summaries[repaired]["gate"]["success"]
    index = (scheduled.warehouse / "data_docs" / "index.html").read_text()
    for snapshot_id in summaries:
        assert snapshot_id in index, snapshot_id


def test_a_violation_alerted_by_the_hourly_run_is_resolved_by_the_event_driven_audit_of_its_repair(scheduled):
    events = scheduled.events
    print(f"event-driven resolve {events.resolve_latency_s:.1f} s after the repair's write")
    triggered = [e for p in events.trigger_posts for e in p["json"]["kafka_zk_audit"]["started_firing"]
                 if e["check_id"] == PLANTED]
    resolved = [e for p in events.resolve_posts for e in p["json"]["kafka_zk_audit"]["resolved"]
                if e["check_id"] == PLANTED]
    assert len(triggered) == 1 and len(resolved) == 1, (scheduled.posts, events.posts)
    assert triggered[0]["key"] == resolved[0]["key"]
    # each alert once: no other post repeats the trigger or the resolve
    keys = [(field, e["key"]) for p in (*scheduled.posts, *events.posts) for field in ("started_firing", "resolved")
            for e in p["json"].get("kafka_zk_audit", {}).get(field) or () if e["check_id"] == PLANTED]
    assert sorted(keys) == sorted([("started_firing", triggered[0]["key"]), ("resolved", triggered[0]["key"])])
    # the run: started by the watch's Asset event on the repair's writes (one run for the burst)
    assert [r["run_type"] for r in events.runs] == ["asset_triggered"], events.runs
    services = scheduled.services
    clusters = [r["rendered_map_index"] for r in services.query(
        "select rendered_map_index from task_instance where dag_id = ? and run_id = ? and task_id = 'snapshot'",
        EVENTS_DAG_ID, events.runs[0]["run_id"])]
    assert clusters == ["live"], clusters  # just the cluster that changed, not the dead one


def test_the_dead_cluster_still_alerts_only_once_with_events_on(scheduled):
    # the run of the next hour, when the test crosses one, is another hourly run: it alerts for the dead cluster again
    next_hour = {r["run_id"] for r in scheduled.services.query(
        "select run_id from dag_run where dag_id = ? and run_type = 'scheduled' and run_id != ?", DAG_ID,
        scheduled.run_id)}
    failures = [facts for p in scheduled.events.posts
                if (facts := p["json"].get("kafka_zk_audit", {})).get("kind") == "task_failure"
                and facts.get("run_id") not in next_hour]
    assert failures == []  # its watch never connects and never fires; the hourly run alerted (above)


def test_a_transient_violation_healed_within_its_for_is_pending_then_healed_and_sends_nothing(scheduled):
    events = scheduled.events
    listed = [(field, e["key"]) for p in (*scheduled.posts, *events.posts) for field in ("started_firing", "resolved")
              for e in p["json"].get("kafka_zk_audit", {}).get(field) or () if e["check_id"] == TRANSIENT]
    assert listed == [], (scheduled.posts, events.posts)
    # what the alerts found: pending in the hourly run, healed while pending in the event-driven audit of the repair
    first, second = (json.loads((scheduled.warehouse / "runs" / sid / "alerts.json").read_text())
                     for sid in (*scheduled.hourly_snapshot_ids, *scheduled.events.snapshot_ids))

    def subjects(record: dict, field: str) -> list[str]:
        return [e["key"] for e in record["lifecycle"][field] if e["check_id"] == TRANSIENT]

    pending = subjects(first, "pending")
    assert len(pending) == 1 and subjects(first, "firing") == []
    assert subjects(second, "healed_while_pending") == pending and subjects(second, "resolved") == []
    assert not any(key in pending for d in first["deliveries"] + second["deliveries"]
                   for key in d.get("triggers", []) + d.get("resolves", []))
