"""Partition and replica checks: /brokers/topics/<t> assignments against their partition state znodes."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    empty_ints,
    empty_output,
    int_list,
    previous_snapshot,
    registered_broker_ids,
    say,
    to_output,
)


def _with_state(partitions: DataFrame) -> DataFrame:
    return partitions.where(F.coalesce(F.col("has_state"), F.lit(False)))


def _assigned_with_state(partitions: DataFrame) -> DataFrame:
    return _with_state(partitions).where(F.coalesce(F.col("assigned"), F.lit(False)))


def _isr() -> Column:
    return F.coalesce(F.col("isr"), empty_ints())


def _partition_output(rows: DataFrame, check_id: str, detail: Column) -> DataFrame:
    return to_output(rows, check_id, topic="topic", partition="partition", path="path", detail=detail)


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


def leader_not_alive(partitions: DataFrame, brokers: DataFrame) -> DataFrame:
    """A partition's leader (when >= 0) is registered under /brokers/ids."""
    registered = brokers.select(F.col("broker_id").alias("leader")).where(F.col("leader").isNotNull())
    rows = _with_state(partitions).where(F.col("leader") >= 0).join(registered, "leader", "left_anti")
    return _partition_output(rows, "leader_not_alive", say("leader %s is not registered under /brokers/ids", "leader"))


def offline_partition(partitions: DataFrame, brokers: DataFrame) -> DataFrame:
    """A partition has a leader (not -1) and at least one registered isr member."""
    rows = (
        _with_state(partitions)
        .where(F.col("leader").isNotNull())
        .crossJoin(registered_broker_ids(brokers))
        .withColumn("live_isr", F.array_intersect(_isr(), F.col("registered_brokers")))
        .where((F.col("leader") == -1) | (F.size("live_isr") == 0))
    )
    detail = F.when(F.col("leader") == -1, say("leader is -1 (no leader), isr %s", int_list("isr"))).otherwise(
        say("no member of isr %s is registered under /brokers/ids", int_list("isr"))
    )
    return _partition_output(rows, "offline_partition", detail)


def under_replicated(partitions: DataFrame) -> DataFrame:
    """An assigned partition's isr has as many members as it has assigned replicas."""
    rows = _assigned_with_state(partitions).where(F.size(_isr()) < F.size("replicas"))
    detail = say("isr %s has %s of %s replicas %s",
                 int_list("isr"), F.size(_isr()), F.size("replicas"), int_list("replicas"))
    return _partition_output(rows, "under_replicated", detail)


def preferred_leader_not_leader(partitions: DataFrame) -> DataFrame:
    """A partition with a leader is led by its preferred (first assigned) replica."""
    preferred = F.try_element_at("replicas", F.lit(1))
    rows = _assigned_with_state(partitions).where(
        (F.col("leader") >= 0) & (F.size("replicas") > 0) & (F.col("leader") != preferred)
    )
    detail = say("leader %s is not the preferred replica %s of replicas %s",
                 "leader", preferred, int_list("replicas"))
    return _partition_output(rows, "preferred_leader_not_leader", detail)


def replica_on_unknown_broker(assignments: DataFrame, brokers: DataFrame) -> DataFrame:
    """Every assigned replica's broker is registered under /brokers/ids."""
    rows = (
        assignments.crossJoin(registered_broker_ids(brokers))
        .withColumn("unknown", F.array_except(F.coalesce("replicas", empty_ints()), F.col("registered_brokers")))
        .where(F.size("unknown") > 0)
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
    """All partitions of a topic have the same replication factor (replicas minus removing_replicas)."""
    removing = F.coalesce("removing_replicas", empty_ints())
    target = F.filter(F.coalesce("replicas", empty_ints()), lambda r: ~F.array_contains(removing, r))
    per_rf = assignments.groupBy("topic", F.size(target).alias("rf")).agg(
        F.count(F.lit(1)).alias("partitions"), F.min("path").alias("path")
    )
    rows = (
        per_rf.groupBy("topic")
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


def partition_epoch_ahead_of_controller(partitions: DataFrame, controller_epoch: DataFrame) -> DataFrame:
    """A partition state's controller_epoch is not greater than /controller_epoch."""
    current = controller_epoch.select(F.col("epoch").alias("cluster_epoch")).where(F.col("cluster_epoch").isNotNull())
    rows = _with_state(partitions).crossJoin(current).where(F.col("controller_epoch") > F.col("cluster_epoch"))
    detail = say("controller_epoch %s in state > /controller_epoch %s", "controller_epoch", "cluster_epoch")
    return _partition_output(rows, "partition_epoch_ahead_of_controller", detail)


def leader_epoch_regressed(
    partitions: DataFrame,
    topics: DataFrame,
    previous_partitions: DataFrame | None,
    previous_topics: DataFrame | None,
) -> DataFrame:
    """A partition's leader_epoch never decreases between snapshots (unless the topic was recreated)."""
    if previous_partitions is None or previous_topics is None:
        return empty_output(partitions, "leader_epoch_regressed")
    now = _with_state(partitions).select("topic", "partition", "leader_epoch", "path")
    before = _with_state(previous_partitions).select(
        "topic", "partition", F.col("leader_epoch").alias("previous_leader_epoch"),
        previous_snapshot(previous_partitions).alias("previous_snapshot"),
    )
    rows = (
        now.join(before, ["topic", "partition"])
        .where(F.col("leader_epoch") < F.col("previous_leader_epoch"))
        .join(topics.select("topic", F.col("czxid").alias("czxid_now")), "topic", "left")
        .join(previous_topics.select("topic", F.col("czxid").alias("czxid_before")), "topic", "left")
        # A different czxid means the topic was deleted and created again: its epochs start over.
        .where(~F.coalesce(F.col("czxid_now") != F.col("czxid_before"), F.lit(False)))
    )
    detail = say("leader_epoch %s < %s in previous snapshot%s",
                 "leader_epoch", "previous_leader_epoch", "previous_snapshot")
    return _partition_output(rows, "leader_epoch_regressed", detail)
