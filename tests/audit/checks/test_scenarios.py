"""Edge cases of single checks: the controller's states, KRaft migration, SLA boundaries, wildcards
of reassignments, endpoints without a host, leftovers of deleted topics. One Spark action in all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafka_zk_audit.audit.checks import admin, brokers_topics, consumers, controller, partitions
from kafka_zk_audit.audit.params import Params, params_row
from kafka_zk_audit.contract.settings import load_config
from tests.audit.checks.test_checks import (
    HOUR,
    MINUTE,
    NOW,
    SNAPSHOT_KEY,
    broker,
    collect_by_label,
    consumer,
    derive_partitions,
    make_frame,
    owner,
    small_data_settings,
)

pytestmark = pytest.mark.spark

SLA = 24 * HOUR


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


def params(spark: SparkSession, now_ms: int = NOW, snapshot_id: str = SNAPSHOT_KEY, **values: int) -> Params:
    """The parameters of one snapshot: the default settings at ``now_ms``, with the given parameters instead."""
    return Params(spark, {snapshot_id: {**params_row(load_config(None), now_ms), **values}})


def _controller(broker_id: int | None, session: int | None, ephemeral: bool = True, kraft_epoch: int = -1) -> dict:
    return {"broker_id": broker_id, "version": 2, "kraft_controller_epoch": kraft_epoch, "session": session,
            "is_ephemeral": ephemeral, "path": "/controller"}


def _marker(kind: str, topic: str, age_ms: int, partition: int | None = None) -> dict[str, Any]:
    path = {"delete_topic": f"/admin/delete_topics/{topic}", "reassignment": "/admin/reassign_partitions",
            "preferred_election": "/admin/preferred_replica_election"}[kind]
    return {"kind": kind, "topic": topic, "partition": partition, "replicas": [1] if kind == "reassignment" else None,
            "path": path, "ctime": NOW - age_ms}


def _notification(kind: str, parent: str, i: int, age_ms: int) -> dict[str, Any]:
    return {"kind": kind, "parent": parent, "name": f"{kind}_{i:010d}", "seq": i, "path": f"{parent}/{kind}_{i:010d}",
            "ctime": NOW - age_ms}


@pytest.fixture(scope="module")
def results(small_data_spark: SparkSession) -> dict[str, list[tuple]]:
    spark = small_data_spark

    def frame(name: str, rows: list[dict[str, Any]]) -> DataFrame:
        return make_frame(spark, name, rows)

    brokers = frame("brokers", [broker(1, 0x101, "kafka1:9092"), broker(2, 0x102, "kafka2:9092")])
    topics = frame("topics", [{"topic": "t", "partition_count": 2, "czxid": 5, "path": "/brokers/topics/t"}])
    no_epoch = frame("controller_epoch", [])
    at_sla = params(spark, delete_topic_sla_ms=SLA, reassignment_sla_ms=SLA)
    no_sla = params(spark, delete_topic_sla_ms=0, reassignment_sla_ms=0, preferred_election_sla_ms=0)

    def controllers(*rows: dict) -> DataFrame:
        return frame("controller", list(rows))

    dead_isr_rows = {
        "assignments": [{"topic": "t", "partition": 0, "replicas": [5, 6], "path": "/brokers/topics/t"}],
        "partition_states": [{"topic": "t", "partition": 0, "leader": 5, "isr": [5], "leader_epoch": 1,
                              "controller_epoch": 3, "path": "/brokers/topics/t/partitions/0/state"}],
    }
    reassigning = frame("assignments", [
        # Moving p0 from [1, 2, 4] to [1, 2, 3]: replicas holds both sets while 4 is being removed.
        {"topic": "t", "partition": 0, "replicas": [1, 2, 3, 4], "adding_replicas": [3], "removing_replicas": [4],
         "path": "/brokers/topics/t"},
        {"topic": "t", "partition": 1, "replicas": [1, 2, 3], "path": "/brokers/topics/t"},
    ])
    markers = frame("admin_markers", [
        _marker("delete_topic", "t", SLA),                      # exactly at the SLA: not yet stuck
        _marker("reassignment", "t", SLA + 1, partition=1),     # one ms over: stuck
    ])
    # Written just now, or during the walk (after the snapshot started): never stuck.
    fresh_markers = frame("admin_markers", [
        _marker("reassignment", "t", 0, partition=0), _marker("preferred_election", "t", -5_000, partition=0),
        _marker("delete_topic", "t", -5_000),
    ])
    queues = frame("notifications", [
        _notification("log_dir_event", "/log_dir_event_notification", 1, 31 * MINUTE),  # too old
        *[_notification("config_change", "/config/changes", i, MINUTE) for i in range(100)],  # at the limit
    ])
    hostless = frame("brokers", [
        {"broker_id": 7, "host": None, "port": -1, "session": 1, "is_ephemeral": True, "path": "/brokers/ids/7",
         "endpoints": [{"listener": "SASL", "security_protocol": "SASL_SSL", "host": None, "port": 9093}]},
        {"broker_id": 8, "host": None, "port": -1, "session": 2, "is_ephemeral": True, "path": "/brokers/ids/8",
         "endpoints": [{"listener": "SASL", "security_protocol": "SASL_SSL", "host": None, "port": 9093}]},
    ])
    deleted_topic_owners = frame("consumer_owners", [owner("g", "gone", 0, "g_c-0")])
    gone_offsets = frame("consumer_offsets", [
        {"group_id": "g", "topic": "gone", "partition": 0, "offset": 5, "raw": "5",
         "path": "/consumers/g/offsets/gone/0"},
        # Kafka creates its internal topics itself when needed: not a leftover.
        {"group_id": "g", "topic": "__consumer_offsets", "partition": 3, "offset": 5, "raw": "5",
         "path": "/consumers/g/offsets/__consumer_offsets/3"},
    ])
    stray = {
        "registrations": frame("consumer_registrations", [consumer("g", "g_c", {"t": 1})]),
        "owners": frame("consumer_owners", [owner("g", "t", 0, "g_c-0"), owner("g", "t", 1, "g_c-0"),
                                            owner("g", "other", 0, "g_c-0")]),
        "assignments": frame("assignments", [{"topic": "t", "partition": p, "replicas": [1]} for p in (0, 1)]),
        "topics": frame("topics", [{"topic": "t"}, {"topic": "other"}]),
    }
    empty = {name: frame(name, []) for name in ("configs", "partition_states", "consumer_offsets", "consumer_owners")}

    return collect_by_label({
        "missing": controller.controller_missing(controllers(), frame("kraft_log", []), params(spark)),
        "present": controller.controller_missing(controllers(_controller(1, 0x101)), frame("kraft_log", []),
                                                 params(spark)),
        # a KRaft cluster has no /controller: its quorum leader is quorum_leader_missing's to judge
        "kraft_cluster": controller.controller_missing(controllers(), frame("kraft_log", [{"last_offset": 9}]),
                                                       params(spark)),
        "missing_is_not_dead": controller.controller_not_alive(controllers(), brokers),
        "dead": controller.controller_not_alive(controllers(_controller(9, 0x109)), brokers),
        "kraft_migration": controller.controller_not_alive(
            controllers(_controller(3000, 0, ephemeral=False, kraft_epoch=4)), brokers),
        "kraft_migration_session": controller.controller_session_mismatch(
            controllers(_controller(1, 0, ephemeral=False, kraft_epoch=4)), brokers),
        "persistent_zk_controller": controller.controller_not_alive(
            controllers(_controller(9, 0, ephemeral=False, kraft_epoch=-1)), brokers),
        "session_unknown": controller.controller_session_mismatch(controllers(_controller(1, None)), brokers),
        "session_matches": controller.controller_session_mismatch(controllers(_controller(2, 0x102)), brokers),
        "no_baseline_epoch": controller.controller_epoch_regressed(no_epoch, None),
        "dead_isr": partitions.offline_partition(
            frame("partitions", derive_partitions(dead_isr_rows)), brokers, controllers(_controller(1, 0x101))),
        "no_controller_epoch": partitions.partition_epoch_ahead_of_controller(
            frame("partitions", derive_partitions(dead_isr_rows)), no_epoch, controllers(), frame("migration", [])),
        "reassigning_rf": partitions.replication_factor_inconsistent(reassigning),
        "delete_at_sla": admin.delete_topic_stuck(markers, topics, at_sla),
        "reassignment_over_sla": admin.reassignment_stuck(markers, at_sla),
        "fresh_delete": admin.delete_topic_stuck(fresh_markers, topics, no_sla),
        "fresh_reassignment": admin.reassignment_stuck(fresh_markers, no_sla),
        "fresh_election": admin.preferred_election_stuck(fresh_markers, no_sla),
        "reassignment_valid": admin.reassignment_invalid(
            markers, frame("assignments", [{"topic": "t", "partition": 1, "replicas": [1]}]), brokers,
            controllers(_controller(1, 0x101))),
        "backlog": admin.notification_backlog(
            queues, params(spark, backlog_max_children=100, backlog_max_age_ms=30 * MINUTE)),
        "hostless_endpoints": brokers_topics.broker_endpoint_conflict(hostless),
        "ephemeral_brokers": brokers_topics.broker_registration_not_ephemeral(brokers),
        "owner_remnants": brokers_topics.deleted_topic_remnants(
            topics, empty["configs"], empty["partition_states"], deleted_topic_owners, empty["consumer_offsets"]),
        "offset_of_deleted_topic": consumers.offset_for_unknown_partition(
            gone_offsets, frame("assignments", []), topics),
        "unsubscribed_owner": consumers.owner_assignment_mismatch(
            stray["registrations"], stray["owners"], stray["assignments"], stray["topics"]),
        "no_multiple_owners": consumers.partition_multiply_owned(stray["owners"]),
    })


def test_controller_missing(results: dict[str, list[tuple]]) -> None:
    assert results["missing"] == [
        ("controller_missing", None, None, None, None, "/controller",
         "no /controller znode: no broker is acting as controller"),
    ]
    assert results["present"] == []
    assert results["kraft_cluster"] == []
    assert results["missing_is_not_dead"] == []


def test_controller_not_alive_except_during_kraft_migration(results: dict[str, list[tuple]]) -> None:
    assert results["dead"] == [
        ("controller_not_alive", None, None, None, 9, "/controller",
         "controller broker 9 is not registered under /brokers/ids"),
    ]
    assert results["kraft_migration"] == []
    assert results["kraft_migration_session"] == []
    assert [row[4] for row in results["persistent_zk_controller"]] == [9]


def test_controller_session_compared_only_when_known(results: dict[str, list[tuple]]) -> None:
    assert results["session_unknown"] == []
    assert results["session_matches"] == []
    assert results["no_baseline_epoch"] == []


def test_partition_edges(results: dict[str, list[tuple]]) -> None:
    assert [row[6] for row in results["dead_isr"]] == ["no member of isr [5] is registered under /brokers/ids"]
    assert results["no_controller_epoch"] == []
    # Replicas being removed do not count towards the replication factor.
    assert results["reassigning_rf"] == []


def test_admin_edges(results: dict[str, list[tuple]]) -> None:
    assert results["delete_at_sla"] == []
    assert [(row[1], row[2]) for row in results["reassignment_over_sla"]] == [("t", 1)]
    assert results["reassignment_valid"] == []
    assert [(row[5], row[6]) for row in results["backlog"]] == [
        ("/log_dir_event_notification", "1 child znode(s), the oldest 31m old (limits: 100 children, 30m; "
         "age = snapshot start 2027-01-15T08:00:00Z - ctime 2027-01-15T07:29:00Z)"),
    ]


def test_markers_written_just_now_are_not_stuck(results: dict[str, list[tuple]]) -> None:
    """Even with an SLA of 0: age is snapshot start - ctime, zero or negative for these markers."""
    assert results["fresh_delete"] == results["fresh_reassignment"] == results["fresh_election"] == []


def test_broker_and_topic_edges(results: dict[str, list[tuple]]) -> None:
    assert results["hostless_endpoints"] == []
    assert results["ephemeral_brokers"] == []
    assert [(row[1], row[5], row[6]) for row in results["owner_remnants"]] == [
        ("gone", "/consumers/g/owners/gone/0",
         "1 consumer owner znode(s) left for topic gone, which has no /brokers/topics/gone "
         "(first: /consumers/g/owners/gone/0)"),
    ]
    # An offset of a topic that no longer exists is reported per offset znode (and the topic's leftovers
    # as deleted_topic_remnants); one of Kafka's internal topics is not.
    assert results["offset_of_deleted_topic"] == [
        ("offset_for_unknown_partition", "gone", 0, "g", None, "/consumers/g/offsets/gone/0",
         "offset for partition 0 of gone, which does not exist (no /brokers/topics/gone)"),
    ]


def test_owner_of_a_topic_nobody_subscribes_to(results: dict[str, list[tuple]]) -> None:
    assert [(row[1], row[2], row[6]) for row in results["unsubscribed_owner"]] == [
        ("other", 0, "owned by g_c-0, but no live consumer of the group subscribes to other"),
    ]
    assert results["no_multiple_owners"] == []
