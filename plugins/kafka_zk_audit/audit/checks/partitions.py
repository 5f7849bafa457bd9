"""Partition and replica checks: /brokers/topics/<t> assignments against their partition state znodes."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    empty_ints,
    empty_output,
    int_list,
    previous_snapshot,
    say,
    to_output,
    with_kraft_migration,
    with_registered_brokers,
)
from kafka_zk_audit.contract.schemas import KEY


def _with_state(partitions: DataFrame) -> DataFrame:
    return partitions.where(F.coalesce(F.col("has_state"), F.lit(False)))


def _assigned_with_state(partitions: DataFrame) -> DataFrame:
    return _with_state(partitions).where(F.coalesce(F.col("assigned"), F.lit(False)))


def _isr() -> Column:
    return F.coalesce(F.col("isr"), empty_ints())


def _partition_output(rows: DataFrame, check_id: str, detail: Column) -> DataFrame:
    return to_output(rows, check_id, topic="topic", partition="partition", path="path", detail=detail)


def _adding(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, adding): the replicas a reassignment in progress is adding (topic znode
    v2+, Kafka 2.4+; an empty array otherwise)."""
    return assignments.select(KEY, "topic", "partition", F.coalesce("adding_replicas", empty_ints()).alias("adding"))


def _replication_factor(replicas: Column, adding: Column) -> Column:
    """Kafka's replication factor of a partition: its replicas minus those a reassignment is adding.

    While a partition is reassigned, the topic znode's replicas hold the union of the original and
    the target replicas. Kafka 2.5+ (KIP-352) counts the original ones: apache/kafka
    core/src/main/scala/kafka/cluster/Partition.scala, ``OngoingReassignmentState.replicationFactor =
    replicas.diff(addingReplicas).size`` ("keep the size of the original replicas"), used by
    ``isUnderReplicated = isLeader && replicationFactor - isr.size > 0``; and TopicCommand's
    ``getReplicationFactor`` = ``replicas.size - addingReplicas.size`` for the ReplicationFactor it
    prints and its --under-replicated-partitions (tools/.../TopicCommand.java @3.9). Adding replicas
    that are not in replicas do not count (Scala's diff).
    """
    return F.size(replicas) - F.size(F.array_intersect(adding, replicas))


def leader_not_in_isr(partitions: DataFrame) -> DataFrame:
    """A partition's leader (when >= 0) is a member of its isr."""
    rows = _with_state(partitions).where((F.col("leader") >= 0) & ~F.array_contains(_isr(), F.col("leader")))
    return _partition_output(rows, "leader_not_in_isr", say("leader %s not in isr %s", "leader", int_list("isr")))


def isr_not_subset_of_replicas(partitions: DataFrame) -> DataFrame:
    """Every isr member of an assigned partition is one of its assigned replicas."""
    rows = (
        _assigned_with_state(partitions)
        .withColumn("strangers", F.array_except(_isr(), F.coalesce("replicas", empty_ints())))
        .where(F.size("strangers") > 0)
    )
    detail = say("isr members %s of isr %s are not in replicas %s",
                 int_list("strangers"), int_list("isr"), int_list("replicas"))
    return _partition_output(rows, "isr_not_subset_of_replicas", detail)


def leader_not_alive(partitions: DataFrame, brokers: DataFrame, controller: DataFrame) -> DataFrame:
    """A partition's leader (when >= 0) is registered under /brokers/ids (not checked during a ZK -> KRaft
    migration, when brokers running in KRaft mode lead partitions without being there)."""
    registered = brokers.select(KEY, F.col("broker_id").alias("leader")).where(F.col("leader").isNotNull())
    rows = with_kraft_migration(
        _with_state(partitions).where(F.col("leader") >= 0).join(registered, [KEY, "leader"], "left_anti"),
        controller,
    ).where(~F.col("kraft_migration"))
    return _partition_output(rows, "leader_not_alive", say("leader %s is not registered under /brokers/ids", "leader"))


def offline_partition(partitions: DataFrame, brokers: DataFrame, controller: DataFrame) -> DataFrame:
    """A partition has a leader (not -1) and at least one registered isr member (the latter is not
    checked during a ZK -> KRaft migration: brokers in KRaft mode are alive without being registered)."""
    rows = (
        with_kraft_migration(with_registered_brokers(_with_state(partitions).where(F.col("leader").isNotNull()),
                                                     brokers), controller)
        .withColumn("live_isr", F.array_intersect(_isr(), F.col("registered_brokers")))
        .where((F.col("leader") == -1) | ((F.size("live_isr") == 0) & ~F.col("kraft_migration")))
    )
    detail = F.when(F.col("leader") == -1, say("leader is -1 (no leader), isr %s", int_list("isr"))).otherwise(
        say("no member of isr %s is registered under /brokers/ids", int_list("isr"))
    )
    return _partition_output(rows, "offline_partition", detail)


def under_replicated(partitions: DataFrame, assignments: DataFrame) -> DataFrame:
    """An assigned partition's isr has as many members as its replication factor (the assigned replicas
    minus those a reassignment in progress is adding, as Kafka counts it)."""
    rows = (
        _assigned_with_state(partitions)
        .join(_adding(assignments), [KEY, "topic", "partition"], "left")
        .withColumn("adding", F.coalesce("adding", empty_ints()))
        .withColumn("rf", _replication_factor(F.col("replicas"), F.col("adding")))
        .where(F.size(_isr()) < F.col("rf"))
    )
    reassigning = F.size(F.array_intersect("adding", "replicas")) > 0
    detail = F.when(
        reassigning,
        say("isr %s has %s of replication factor %s (replicas %s, of which %s are being added)",
            int_list("isr"), F.size(_isr()), "rf", int_list("replicas"), int_list("adding")),
    ).otherwise(say("isr %s has %s of %s replicas %s", int_list("isr"), F.size(_isr()), "rf", int_list("replicas")))
    return _partition_output(rows, "under_replicated", detail)


def preferred_leader_not_leader(partitions: DataFrame, assignments: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """A partition with a leader is led by its preferred (first assigned) replica, as the controller
    counts it for PreferredReplicaImbalanceCount (apache/kafka core/src/main/scala/kafka/controller/
    ControllerContext.scala, ``hasPreferredLeader`` @3.9): topics queued for deletion are left out, and a
    partition whose preferred replica is still being added by a reassignment only once that replica is
    in the isr."""
    preferred = F.try_element_at("replicas", F.lit(1))
    queued_for_deletion = admin_markers.where(F.col("kind") == "delete_topic").select(KEY, "topic").distinct()
    adding_preferred_outside_isr = F.array_contains("adding", preferred) & ~F.array_contains(_isr(), preferred)
    rows = (
        _assigned_with_state(partitions)
        .where((F.col("leader") >= 0) & (F.size("replicas") > 0) & (F.col("leader") != preferred))
        .join(queued_for_deletion, [KEY, "topic"], "left_anti")
        .join(_adding(assignments), [KEY, "topic", "partition"], "left")
        .withColumn("adding", F.coalesce("adding", empty_ints()))
        .where(~adding_preferred_outside_isr)
    )
    detail = say("leader %s is not the preferred replica %s of replicas %s",
                 "leader", preferred, int_list("replicas"))
    return _partition_output(rows, "preferred_leader_not_leader", detail)


def replica_on_unknown_broker(assignments: DataFrame, brokers: DataFrame, controller: DataFrame) -> DataFrame:
    """Every assigned replica's broker is registered under /brokers/ids (not checked during a ZK -> KRaft
    migration, when brokers running in KRaft mode hold replicas without being registered there)."""
    rows = (
        with_kraft_migration(with_registered_brokers(assignments, brokers), controller)
        .withColumn("unknown", F.array_except(F.coalesce("replicas", empty_ints()), F.col("registered_brokers")))
        .where((F.size("unknown") > 0) & ~F.col("kraft_migration"))
    )
    detail = say("replicas %s of %s are not registered under /brokers/ids", int_list("unknown"), int_list("replicas"))
    return _partition_output(rows, "replica_on_unknown_broker", detail)


def duplicate_replica(assignments: DataFrame) -> DataFrame:
    """No broker appears twice in one partition's assigned replicas."""
    repeated = F.array_distinct(
        F.filter("replicas", lambda r: F.size(F.filter("replicas", lambda s: s == r)) > 1)
    )
    rows = assignments.withColumn("repeated", repeated).where(F.size("repeated") > 0)
    detail = say("brokers %s appear more than once in replicas %s", int_list("repeated"), int_list("replicas"))
    return _partition_output(rows, "duplicate_replica", detail)


def replication_factor_inconsistent(assignments: DataFrame) -> DataFrame:
    """All partitions of a topic have the same replication factor, as Kafka counts it during a
    reassignment: the replicas minus those being added (see ``_replication_factor``)."""
    rf = _replication_factor(F.coalesce("replicas", empty_ints()), F.coalesce("adding_replicas", empty_ints()))
    per_rf = assignments.groupBy(KEY, "topic", rf.alias("rf")).agg(
        F.count(F.lit(1)).alias("partitions"), F.min("path").alias("path")
    )
    rows = (
        per_rf.groupBy(KEY, "topic")
        .agg(F.array_sort(F.collect_list(F.struct("rf", "partitions"))).alias("counts"), F.min("path").alias("path"))
        .where(F.size("counts") > 1)
    )
    listing = F.array_join(
        F.transform("counts", lambda c: F.format_string("RF %d on %d partition(s)", c["rf"], c["partitions"])), ", "
    )
    return to_output(
        rows, "replication_factor_inconsistent", topic="topic", path="path",
        detail=say("partitions have different replication factors: %s", listing),
    )


def partition_state_missing(partitions: DataFrame) -> DataFrame:
    """Every assigned partition has a .../partitions/<p>/state znode."""
    rows = partitions.where(F.col("assigned") & ~F.coalesce(F.col("has_state"), F.lit(False)))
    detail = say("partition %s is assigned in the topic znode but has no state znode", "partition")
    return _partition_output(rows, "partition_state_missing", detail)


def partition_state_orphaned(partitions: DataFrame) -> DataFrame:
    """Every partition state znode belongs to a partition of the topic's assignment."""
    rows = partitions.where(F.col("has_state") & ~F.coalesce(F.col("assigned"), F.lit(False)))
    detail = say("state znode of partition %s, which is not in the topic's assignment", "partition")
    return _partition_output(rows, "partition_state_orphaned", detail)


def partition_epoch_ahead_of_controller(
    partitions: DataFrame, controller_epoch: DataFrame, controller: DataFrame, migration: DataFrame
) -> DataFrame:
    """A partition state's controller_epoch is not greater than /controller_epoch, nor, during a ZK -> KRaft
    migration, than the KRaft controller's epoch.

    While migrating, the KRaft controller writes partition states with its own epoch
    (apache/kafka core/src/main/scala/kafka/zk/migration/ZkTopicMigrationClient.scala,
    ``state.kraftControllerEpoch()``) and bumps /controller_epoch only by one per takeover
    (KafkaZkClient.tryRegisterKRaftControllerAsActiveController): the KRaft epoch in /controller and
    /migration bounds those states.
    """
    bounds = (
        controller_epoch.select(KEY, F.col("epoch").alias("bound"))
        .unionByName(controller.select(KEY, F.col("kraft_controller_epoch").alias("bound")))
        .unionByName(migration.select(KEY, F.col("kraft_controller_epoch").alias("bound")))
        .groupBy(KEY)
        .agg(F.max("bound").alias("allowed_epoch"))
    )
    # A snapshot with a /controller_epoch has a row in bounds too (its epoch is one of them).
    current = (
        controller_epoch.groupBy(KEY).agg(F.max("epoch").alias("cluster_epoch"))
        .where(F.col("cluster_epoch").isNotNull())
        .join(bounds, KEY)
    )
    rows = _with_state(partitions).join(current, KEY).where(F.col("controller_epoch") > F.col("allowed_epoch"))
    detail = F.when(
        F.col("allowed_epoch") > F.col("cluster_epoch"),
        say("controller_epoch %s in state > /controller_epoch %s and > KRaft controller epoch %s",
            "controller_epoch", "cluster_epoch", "allowed_epoch"),
    ).otherwise(say("controller_epoch %s in state > /controller_epoch %s", "controller_epoch", "cluster_epoch"))
    return _partition_output(rows, "partition_epoch_ahead_of_controller", detail)


def leader_epoch_regressed(
    partitions: DataFrame,
    topics: DataFrame,
    previous_partitions: DataFrame | None,
    previous_topics: DataFrame | None,
) -> DataFrame:
    """A partition's leader_epoch never decreases between snapshots (unless the topic was recreated).

    The previous tables are keyed by the snapshot they are the baseline of: a snapshot without previous rows
    has no baseline."""
    if previous_partitions is None or previous_topics is None:
        return empty_output(partitions, "leader_epoch_regressed")
    now = _with_state(partitions).select(KEY, "topic", "partition", "leader_epoch", "path")
    before = _with_state(previous_partitions).select(
        KEY, "topic", "partition", F.col("leader_epoch").alias("previous_leader_epoch"),
        previous_snapshot(previous_partitions).alias("previous_snapshot"),
    )
    rows = (
        now.join(before, [KEY, "topic", "partition"])
        .where(F.col("leader_epoch") < F.col("previous_leader_epoch"))
        .join(topics.select(KEY, "topic", F.col("czxid").alias("czxid_now")), [KEY, "topic"], "left")
        .join(previous_topics.select(KEY, "topic", F.col("czxid").alias("czxid_before")), [KEY, "topic"], "left")
        # A different czxid means the topic was deleted and created again: its epochs start over.
        .where(~F.coalesce(F.col("czxid_now") != F.col("czxid_before"), F.lit(False)))
    )
    detail = say("leader_epoch %s < %s in previous snapshot%s",
                 "leader_epoch", "previous_leader_epoch", "previous_snapshot")
    return _partition_output(rows, "leader_epoch_regressed", detail)
