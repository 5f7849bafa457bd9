"""Healthy states a naive check would report, checked against what Kafka itself computes: reassignments
in progress, the controller's preferred replica count, a ZK -> KRaft migration, znodes created anew.
Each case has its unhealthy twin, which is still reported. One Spark action in all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import admin, consumers, controller, partitions
from kafka_zk_audit.audit.checks.common import BASELINE_ID
from tests.audit.checks.test_checks import (
    NOW,
    broker,
    collect_by_label,
    derive_partitions,
    make_frame,
    small_data_settings,
)

pytestmark = pytest.mark.spark

BEFORE = "20270115T070000Z"


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


def _assignment(topic: str, p: int, replicas: list[int], adding: list[int] | None = None,
                removing: list[int] | None = None) -> dict[str, Any]:
    return {"topic": topic, "partition": p, "replicas": replicas, "adding_replicas": adding,
            "removing_replicas": removing, "path": f"/brokers/topics/{topic}"}


def _state(topic: str, p: int, leader: int, isr: list[int], controller_epoch: int = 3) -> dict[str, Any]:
    return {"topic": topic, "partition": p, "leader": leader, "isr": isr, "leader_epoch": 1,
            "controller_epoch": controller_epoch, "path": f"/brokers/topics/{topic}/partitions/{p}/state"}


def _controller(broker_id: int, kraft_epoch: int = -1) -> dict[str, Any]:
    """A ZooKeeper controller (ephemeral, kraft epoch -1) or, with kraft_epoch >= 0, a KRaft one (persistent)."""
    kraft = kraft_epoch >= 0
    return {"broker_id": broker_id, "version": 2, "kraft_controller_epoch": kraft_epoch,
            "session": 0 if kraft else 0x101, "is_ephemeral": not kraft, "path": "/controller"}


def _offset(group: str, topic: str, p: int, value: int, ctime: int) -> dict[str, Any]:
    return {"group_id": group, "topic": topic, "partition": p, "offset": value, "raw": str(value), "ctime": ctime,
            "path": f"/consumers/{group}/offsets/{topic}/{p}"}


@pytest.fixture(scope="module")
def results(small_data_spark: SparkSession) -> dict[str, list[tuple]]:
    spark = small_data_spark

    def frame(name: str, rows: list[dict[str, Any]]) -> DataFrame:
        return make_frame(spark, name, rows)

    # -- reassignments in progress (topic znode v2+) -------------------------------------------------
    reassigning = {
        "assignments": [
            _assignment("r", 0, [1, 2, 3], adding=[3]),                     # [1, 2] → [1, 2, 3]: 3 catching up
            _assignment("r", 1, [1, 2, 4, 3], adding=[4], removing=[3]),    # [1, 2, 3] → [1, 2, 4]
            _assignment("r", 2, [1, 2, 3]),                                 # no reassignment
            _assignment("r", 3, [4, 1, 2], adding=[4], removing=[]),        # [1, 2] → [4, 1, 2]
            _assignment("r", 4, [4, 1, 2], adding=[4], removing=[]),
        ],
        "partition_states": [
            _state("r", 0, 1, [1, 2]),         # 2 of RF 2: in sync
            _state("r", 1, 1, [1, 2]),         # 2 of RF 3 (1, 2, 3): under-replicated
            _state("r", 2, 1, [1, 2]),         # 2 of 3: under-replicated
            _state("r", 3, 1, [1, 2]),         # preferred 4 is still being added: not counted
            _state("r", 4, 1, [1, 2, 4]),      # preferred 4 is in the isr: counted until it leads
        ],
    }
    reassigned_partitions = frame("partitions", derive_partitions(reassigning))
    reassigned_assignments = frame("assignments", reassigning["assignments"])
    rf_topics = frame("assignments", [
        _assignment("grow", 0, [1, 2]), _assignment("grow", 1, [1, 2, 3], adding=[3]),   # RF 2 growing to 3
        _assignment("shrink", 0, [1, 2]), _assignment("shrink", 1, [1, 2, 3], removing=[3]),  # RF 3 → 2
    ])
    no_markers = frame("admin_markers", [])
    deleting = frame("admin_markers", [{"kind": "delete_topic", "topic": "r", "path": "/admin/delete_topics/r",
                                        "ctime": NOW}])

    # -- a ZK -> KRaft migration: broker 5 runs in KRaft mode, only broker 1 is in /brokers/ids ---------
    migrating = {
        "assignments": [_assignment("m", 0, [5, 1]), _assignment("m", 1, [5, 1]), _assignment("m", 2, [5, 1])],
        "partition_states": [
            _state("m", 0, 5, [5, 1], controller_epoch=7),    # written by the KRaft controller (epoch 7)
            _state("m", 1, -1, [5], controller_epoch=7),      # no leader: offline in any mode
            _state("m", 2, 5, [5], controller_epoch=9),       # beyond every controller epoch
        ],
    }
    migrating_partitions = frame("partitions", derive_partitions(migrating))
    migrating_assignments = frame("assignments", migrating["assignments"])
    zk_brokers = frame("brokers", [broker(1, 0x101, "kafka1:9092")])
    kraft = frame("controller", [_controller(3000, kraft_epoch=7)])
    zk = frame("controller", [_controller(1)])
    epoch_3 = frame("controller_epoch", [{"epoch": 3, "path": "/controller_epoch", "ctime": 100}])
    migration = frame("migration", [{"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 7,
                                     "path": "/migration"}])
    reassign_to_kraft_broker = frame("admin_markers", [
        {"kind": "reassignment", "topic": "m", "partition": 0, "replicas": [5, 1], "ctime": NOW,
         "path": "/admin/reassign_partitions"},
    ])

    # -- znodes created anew between two snapshots ----------------------------------------------------
    def epoch(value: int, ctime: int) -> DataFrame:
        return frame("controller_epoch", [{"epoch": value, "path": "/controller_epoch", "ctime": ctime}])

    epoch_before = epoch(9, 100).withColumn(BASELINE_ID, F.lit(BEFORE))
    topics = frame("topics", [{"topic": "t", "partition_count": 1, "czxid": 5, "path": "/brokers/topics/t"}])
    offsets_before = frame("consumer_offsets", [
        _offset("deleted-group", "t", 0, 900, ctime=1_000), _offset("rewound", "t", 0, 900, ctime=1_000),
    ]).withColumn(BASELINE_ID, F.lit(BEFORE))
    offsets_now = frame("consumer_offsets", [
        _offset("deleted-group", "t", 0, 20, ctime=NOW - 60_000), _offset("rewound", "t", 0, 20, ctime=1_000),
    ])

    return collect_by_label({
        "reassigning_urp": partitions.under_replicated(reassigned_partitions, reassigned_assignments),
        "reassigning_preferred": partitions.preferred_leader_not_leader(
            reassigned_partitions, reassigned_assignments, no_markers),
        "deleting_preferred": partitions.preferred_leader_not_leader(
            reassigned_partitions, reassigned_assignments, deleting),
        "reassigning_rf": partitions.replication_factor_inconsistent(rf_topics),
        "kraft_leader": partitions.leader_not_alive(migrating_partitions, zk_brokers, kraft),
        "zk_leader": partitions.leader_not_alive(migrating_partitions, zk_brokers, zk),
        "kraft_offline": partitions.offline_partition(migrating_partitions, zk_brokers, kraft),
        "zk_offline": partitions.offline_partition(migrating_partitions, zk_brokers, zk),
        "kraft_replicas": partitions.replica_on_unknown_broker(migrating_assignments, zk_brokers, kraft),
        "zk_replicas": partitions.replica_on_unknown_broker(migrating_assignments, zk_brokers, zk),
        "kraft_reassignment": admin.reassignment_invalid(
            reassign_to_kraft_broker, migrating_assignments, zk_brokers, kraft),
        "zk_reassignment": admin.reassignment_invalid(reassign_to_kraft_broker, migrating_assignments, zk_brokers, zk),
        "kraft_epochs": partitions.partition_epoch_ahead_of_controller(migrating_partitions, epoch_3, kraft, migration),
        "zk_epochs": partitions.partition_epoch_ahead_of_controller(
            migrating_partitions, epoch_3, zk, frame("migration", [])),
        "epoch_znode_recreated": controller.controller_epoch_regressed(epoch(2, 500), epoch_before),
        "epoch_restored": controller.controller_epoch_regressed(epoch(2, 100), epoch_before),
        "offsets": consumers.offset_regressed(offsets_now, topics, offsets_before, topics),
    })


def test_reassignment_in_progress_counts_the_original_replicas(results: dict[str, list[tuple]]) -> None:
    assert [(row[2], row[6]) for row in results["reassigning_urp"]] == [
        (1, "isr [1, 2] has 2 of replication factor 3 (replicas [1, 2, 4, 3], of which [4] are being added)"),
        (2, "isr [1, 2] has 2 of 3 replicas [1, 2, 3]"),
    ]
    # Growing RF 2 to 3 is consistent while it runs; shrinking 3 to 2 still counts 3 until it completes.
    assert [(row[1], row[6]) for row in results["reassigning_rf"]] == [
        ("shrink", "partitions have different replication factors: RF 2 on 1 partition(s), RF 3 on 1 partition(s)"),
    ]


def test_preferred_leader_as_the_controller_counts_it(results: dict[str, list[tuple]]) -> None:
    assert [(row[2], row[6]) for row in results["reassigning_preferred"]] == [
        (4, "leader 1 is not the preferred replica 4 of replicas [4, 1, 2]"),
    ]
    assert results["deleting_preferred"] == []  # topics queued for deletion are left out


def test_kraft_brokers_are_not_dead_during_a_migration(results: dict[str, list[tuple]]) -> None:
    assert results["kraft_leader"] == [] and results["kraft_replicas"] == [] and results["kraft_reassignment"] == []
    assert [row[2] for row in results["kraft_offline"]] == [1]  # leader -1 is offline in any mode
    # The same tree with a ZooKeeper controller: broker 5 is not registered, so it is reported.
    assert [row[2] for row in results["zk_leader"]] == [0, 2]
    assert [row[2] for row in results["zk_offline"]] == [1, 2]  # m-0 has broker 1 in its isr
    assert [row[2] for row in results["zk_replicas"]] == [0, 1, 2]
    assert [row[6] for row in results["zk_reassignment"]] == [
        "reassignment entry m-0 to [5, 1]: target replicas [5] are not registered brokers",
    ]


def test_kraft_controller_epoch_bounds_partition_states_during_a_migration(results: dict[str, list[tuple]]) -> None:
    assert [(row[2], row[6]) for row in results["kraft_epochs"]] == [
        (2, "controller_epoch 9 in state > /controller_epoch 3 and > KRaft controller epoch 7"),
    ]
    assert [(row[2], row[6]) for row in results["zk_epochs"]] == [
        (0, "controller_epoch 7 in state > /controller_epoch 3"),
        (1, "controller_epoch 7 in state > /controller_epoch 3"),
        (2, "controller_epoch 9 in state > /controller_epoch 3"),
    ]


def test_znodes_created_anew_start_over(results: dict[str, list[tuple]]) -> None:
    assert results["epoch_znode_recreated"] == []
    assert [row[6] for row in results["epoch_restored"]] == [f"/controller_epoch 2 < 9 in previous snapshot {BEFORE}"]
    by_group = {row[3]: row for row in results["offsets"]}
    assert by_group["deleted-group"][6:] == (
        f"offset 20 < 900 in previous snapshot {BEFORE}; explained: the offset znode was deleted and created "
        "again (ctime 1970-01-01T00:00:01Z → 2027-01-15T07:59:00Z)", "explained",
    )
    assert by_group["rewound"][6:] == (f"offset 20 < 900 in previous snapshot {BEFORE}",)
