"""Intervals of broken invariants from real ZooKeeper transaction logs; the oracle is the zxids of the writes."""

from __future__ import annotations

import pytest

from kafka_zk_audit.history import intervals
from kafka_zk_audit.history.changes import base_rows, build_changes, with_session_deletes
from kafka_zk_audit.snapshot.files.replay import rebuild_tree

CHROOT = "/kafka"


@pytest.fixture(scope="module")
def found(spark, history_files):
    """(listed intervals, short counts, parsed states) of the scenario's window."""
    data_dir, scenario = history_files
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        changes = build_changes(spark, str(data_dir), chroot=CHROOT, first_zxid=scenario.first_zxid,
                                last_zxid=scenario.last_zxid)
        tree = rebuild_tree(data_dir, at_zxid=scenario.first_zxid - 1)
        everything = with_session_deletes(changes.unionByName(base_rows(spark, tree, CHROOT))).cache()
        every, tables = intervals.all_intervals(everything)
        every = every.localCheckpoint()
        listed, short = intervals.split_by_floor(every)
        yield ([r.asDict() for r in listed.collect()], {r["check_id"]: r["short"] for r in short.collect()},
               {"failovers": [r.asDict() for r in intervals.controller_failovers(tables).orderBy("from_zxid")
                              .collect()],
                "leadership": [r.asDict() for r in intervals.leadership_history(tables).collect()]})
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)


def test_each_broken_state_is_one_interval_bounded_by_the_writes(found, history_files) -> None:
    _, scenario = history_files
    listed, _, _ = found
    got = sorted((r["check_id"], r["start_zxid"], r["end_zxid"], r["topic"], r["partition"], r["group_id"])
                 for r in listed)
    want = sorted((e.check_id, e.start_zxid, e.end_zxid, e.topic, e.partition, e.group_id)
                  for e in scenario.expected)
    assert got == want


def test_listed_intervals_carry_their_evidence_and_duration(found) -> None:
    listed, _, _ = found
    for row in listed:
        assert row["severity"] in ("critical", "error", "warning")
        assert row["duration_ms"] >= 1_000 and row["end_time"] > row["start_time"]
        assert row["detail"] and row["path"]
    not_in_isr = next(r for r in listed if r["check_id"] == "interval_leader_not_in_isr")
    assert "not in isr" in not_in_isr["detail"] and "leader_epoch 7" in not_in_isr["detail"]


def test_a_failover_below_the_floor_is_counted_not_listed(found, history_files) -> None:
    _, scenario = history_files
    _, short, _ = found
    assert short == scenario.short


def test_healthy_changes_give_no_interval(found, history_files) -> None:
    _, scenario = history_files
    listed, _, timelines = found
    subjects = {(r["topic"], r["partition"]) for r in listed}
    assert not subjects & set(scenario.healthy_partitions)
    healthy = [r for r in timelines["leadership"] if (r["topic"], r["partition"]) in scenario.healthy_partitions]
    assert any(r["leader_epoch"] == 5 for r in healthy)  # the healthy leader change is in the history


def test_controller_failover_timeline(found, history_files) -> None:
    _, scenario = history_files
    _, _, timelines = found
    failovers = timelines["failovers"]
    assert [f["broker_id"] for f in failovers[-2:]] == scenario.controller_ids
    slow = failovers[-2]
    assert slow["gap_ms"] >= 1_000 and slow["gap_from_zxid"] < slow["from_zxid"]
    assert failovers[-1]["epoch"] == failovers[-2]["epoch"] + 1
    assert failovers[-1]["to_zxid"] is None  # still the controller at the end of the window
