"""The alert lifecycle on plain rows: pending, firing, resolved, the transitions to send and the next state."""

from __future__ import annotations

from datetime import timedelta

from kafka_zk_audit.report.lifecycle import (
    compute_lifecycle,
    dedup_key,
    format_lifecycle,
    next_state,
    snapshot_time,
)

CLUSTER = "prod-eu"
T0, T1, T2, T3 = "20261101T000000Z-prod-eu", "20261101T001000Z-prod-eu", "20261101T002000Z-prod-eu", \
    "20261101T010000Z-prod-eu"
URP = {"check_id": "under_replicated", "severity": "warning", "topic": "orders", "partition": 1, "group_id": None,
       "broker_id": None, "path": "/brokers/topics/orders/partitions/1/state", "detail": "isr [1] smaller than [1, 2]"}
OFFLINE = {"check_id": "offline_partition", "severity": "critical", "topic": "orders", "partition": 0,
           "group_id": None, "broker_id": None, "path": "/brokers/topics/orders/partitions/0/state",
           "detail": "leader is -1"}


def seen(finding: dict, first_seen: str, now: str) -> dict:
    status = "new" if first_seen == now else "ongoing"
    return {**finding, "snapshot_id": now, "first_seen": first_seen, "status": status}


def pending_for(durations: dict[str, timedelta]):
    return lambda check_id: durations.get(check_id, timedelta(0))


URP_WAITS_15M = pending_for({"under_replicated": timedelta(minutes=15)})


def run(snapshot_id: str, findings: list[dict], state: dict | None, durations=URP_WAITS_15M):
    lifecycle = compute_lifecycle(CLUSTER, snapshot_id, findings, durations, state)
    return lifecycle, next_state(lifecycle, state)


def test_the_dedup_key_is_stable_and_names_cluster_check_and_subject():
    key = dedup_key(CLUSTER, URP)
    assert key == dedup_key(CLUSTER, {**URP, "detail": "isr [] smaller than [1, 2]", "severity": "error"})
    assert key.startswith("kafka-zk-audit:prod-eu:under_replicated:") and len(key) <= 255
    assert key != dedup_key("prod-us", URP)
    assert key != dedup_key(CLUSTER, {**URP, "partition": 2})
    assert dedup_key(CLUSTER, {**URP, "broker_id": None}) != dedup_key(CLUSTER, {**URP, "broker_id": 0})


def test_a_transient_urp_healed_within_its_grace_period_sends_nothing():
    lifecycle, state = run(T0, [seen(URP, T0, T0)], None)
    assert lifecycle.triggered == [] and lifecycle.firing == [] and lifecycle.resolved == []
    [pending] = lifecycle.pending
    assert pending["key"] == dedup_key(CLUSTER, URP) and pending["for_s"] == 900 and pending["fires_in_s"] == 900
    lifecycle, state = run(T1, [seen(URP, T0, T1)], state)  # 10 minutes in: still pending
    assert lifecycle.triggered == [] and lifecycle.pending[0]["fires_in_s"] == 300
    lifecycle, state = run("20261101T001400Z-prod-eu", [], state)  # healed at 14 minutes
    assert lifecycle.triggered == [] and lifecycle.resolved == [] and lifecycle.firing == []
    assert [e["key"] for e in lifecycle.healed_while_pending] == [dedup_key(CLUSTER, URP)]
    assert state["firing"] == {} and state["pending"] == {}


def test_a_finding_outliving_its_grace_period_triggers_once_and_resolves_with_the_same_key():
    _, state = run(T0, [seen(URP, T0, T0)], None)
    _, state = run(T1, [seen(URP, T0, T1)], state)
    lifecycle, state = run(T2, [seen(URP, T0, T2)], state)  # 20 minutes: past its 15 minutes
    [trigger] = lifecycle.triggered
    assert trigger["key"] == dedup_key(CLUSTER, URP) and trigger["firing_since"] == T2 and trigger["age_s"] == 1200
    assert trigger["since"] == snapshot_time(T0).isoformat()
    lifecycle, state = run(T3, [seen(URP, T0, T3)], state)  # still there an hour in: firing, not triggered again
    assert lifecycle.triggered == [] and [e["key"] for e in lifecycle.firing] == [trigger["key"]]
    assert lifecycle.firing[0]["firing_since"] == T2 and lifecycle.firing[0]["age_s"] == 3600
    fixed = "20261101T020000Z-prod-eu"
    lifecycle, state = run(fixed, [], state)
    [resolve] = lifecycle.resolved
    assert resolve["key"] == trigger["key"] and resolve["resolved_in"] == fixed
    assert resolve["lasted_s"] == 7200 and resolve["fired_s"] == 6000
    assert state["firing"] == {}
    lifecycle, _ = run("20261101T030000Z-prod-eu", [], state)
    assert lifecycle.resolved == []  # resolved once


def test_without_for_a_finding_fires_at_its_first_observation():
    lifecycle, state = run(T0, [seen(OFFLINE, T0, T0), seen(URP, T0, T0)], None)
    assert [e["check_id"] for e in lifecycle.triggered] == ["offline_partition"]
    assert [e["check_id"] for e in lifecycle.pending] == ["under_replicated"]
    assert list(state["firing"]) == [dedup_key(CLUSTER, OFFLINE)]
    assert list(state["pending"]) == [dedup_key(CLUSTER, URP)]


def test_a_pending_finding_is_listed_as_pending_with_its_durations():
    lifecycle, _ = run(T1, [seen(URP, T0, T1)], None)
    [entry] = lifecycle.pending
    assert (entry["age_s"], entry["for_s"], entry["fires_in_s"]) == (600, 900, 300)
    assert entry["status"] == "ongoing" and entry["first_seen"] == T0
    text = "\n".join(format_lifecycle(lifecycle.as_dict()))
    assert "0 firing (0 started now), 1 pending, 0 resolved" in text
    assert "pending  [warning] under_replicated topic orders partition 1 at " in text and "fires in 5m00s" in text


def test_explained_and_suppressed_findings_never_fire_and_resolve_a_firing_one():
    _, state = run(T0, [seen(OFFLINE, T0, T0)], None)
    explained = {**seen(OFFLINE, T0, T1), "status": "explained", "severity": "info"}
    lifecycle, state = run(T1, [explained], state)
    assert lifecycle.firing == [] and [e["key"] for e in lifecycle.resolved] == [dedup_key(CLUSTER, OFFLINE)]


def test_once_firing_a_finding_stays_firing_when_its_for_grows():
    _, state = run(T0, [seen(URP, T0, T0)], None, durations=pending_for({}))
    lifecycle, _ = run(T1, [seen(URP, T0, T1)], state, durations=pending_for({"under_replicated": timedelta(days=1)}))
    assert [e["firing_since"] for e in lifecycle.firing] == [T0] and lifecycle.pending == []


def test_failed_deliveries_are_due_again_at_the_next_run():
    lifecycle = compute_lifecycle(CLUSTER, T0, [seen(OFFLINE, T0, T0)], URP_WAITS_15M, None)
    state = next_state(lifecycle, None, failed_triggers=[dedup_key(CLUSTER, OFFLINE)])
    assert state["firing"] == {}
    again = compute_lifecycle(CLUSTER, T1, [seen(OFFLINE, T0, T1)], URP_WAITS_15M, state)
    assert [e["key"] for e in again.triggered] == [dedup_key(CLUSTER, OFFLINE)]
    state = next_state(again, state)
    gone = compute_lifecycle(CLUSTER, T2, [], URP_WAITS_15M, state)
    kept = next_state(gone, state, failed_resolves=[dedup_key(CLUSTER, OFFLINE)])
    assert list(kept["firing"]) == [dedup_key(CLUSTER, OFFLINE)]  # the resolve goes out again next run
    assert [e["key"] for e in compute_lifecycle(CLUSTER, T3, [], URP_WAITS_15M, kept).resolved] == list(kept["firing"])


def test_an_older_or_the_same_snapshot_than_the_state_sends_nothing_and_keeps_the_state():
    _, state = run(T1, [seen(OFFLINE, T1, T1)], None)
    for snapshot_id in (T0, T1):
        lifecycle = compute_lifecycle(CLUSTER, snapshot_id, [], URP_WAITS_15M, state)
        assert lifecycle.stale and lifecycle.triggered == [] and lifecycle.resolved == []
        assert next_state(lifecycle, state) == state
