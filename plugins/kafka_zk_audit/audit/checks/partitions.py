"""Partition and replica checks: /brokers/topics/<t> assignments against their partition state znodes.

Each check is a declaration (``engine.check``): the checks on ``partitions`` rows are evaluated together in one
select, with the facts they name joined once.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    EMPTY_INTS,
    KRAFT_MIGRATION,
    REGISTERED_BROKERS,
    check,
    empty_ints,
    int_list,
    partition_finds,
    previous_snapshot,
    say,
)
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.contract.schemas import KEY


def _has_state() -> Column:
    return F.coalesce(F.col("has_state"), F.lit(False))


def _assigned() -> Column:
    return F.coalesce(F.col("assigned"), F.lit(False))


def _isr() -> Column:
    return F.coalesce(F.col("isr"), empty_ints())


def _replicas() -> Column:
    return F.coalesce(F.col("replicas"), empty_ints())


@fact(on=(KEY, "topic", "partition"), defaults={"adding": EMPTY_INTS})
def adding(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, adding): the replicas a reassignment in progress is adding (topic znode
    v2+, Kafka 2.4+; an empty array otherwise)."""
    return assignments.select(KEY, "topic", "partition", F.coalesce("adding_replicas", empty_ints()).alias("adding"))


@fact(on=(KEY, "topic"), defaults={"queued_for_deletion": "false"})
def queued_for_deletion(admin_markers: DataFrame) -> DataFrame:
    """(snapshot_id, topic, queued_for_deletion): the topics with an /admin/delete_topics marker."""
    return (admin_markers.where(F.col("kind") == "delete_topic").select(KEY, "topic").distinct()
            .withColumn("queued_for_deletion", F.lit(True)))


@fact()
def controller_epochs(controller_epoch: DataFrame, controller: DataFrame, migration: DataFrame) -> DataFrame:
    """(snapshot_id, cluster_epoch, allowed_epoch): /controller_epoch, and the highest epoch a partition state may
    carry: /controller_epoch, or during a ZK -> KRaft migration the KRaft controller's epoch (in /controller and
    /migration) when higher."""
    bounds = (
        controller_epoch.select(KEY, F.col("epoch").alias("bound"))
        .unionByName(controller.select(KEY, F.col("kraft_controller_epoch").alias("bound")))
        .unionByName(migration.select(KEY, F.col("kraft_controller_epoch").alias("bound")))
        .groupBy(KEY)
        .agg(F.max("bound").alias("allowed_epoch"))
    )
    return controller_epoch.groupBy(KEY).agg(F.max("epoch").alias("cluster_epoch")).join(bounds, KEY, "left")


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


@check("partitions")
def leader_not_in_isr() -> Finds:
    """A partition's leader (when >= 0) is a member of its isr."""
    return partition_finds(
        _has_state() & (F.col("leader") >= 0) & ~F.array_contains(_isr(), F.col("leader")),
        say("leader %s not in isr %s", "leader", int_list("isr")))


@check("partitions")
def isr_not_subset_of_replicas() -> Finds:
    """Every isr member of an assigned partition is one of its assigned replicas."""
    strangers = F.array_except(_isr(), _replicas())
    return partition_finds(
        _has_state() & _assigned() & (F.size(strangers) > 0),
        say("isr members %s of isr %s are not in replicas %s", int_list(strangers), int_list("isr"),
            int_list("replicas")))


@check("partitions", facts=(REGISTERED_BROKERS, KRAFT_MIGRATION))
def leader_not_alive() -> Finds:
    """A partition's leader (when >= 0) is registered under /brokers/ids (not checked during a ZK -> KRaft
    migration, when brokers running in KRaft mode lead partitions without being there)."""
    return partition_finds(
        _has_state() & (F.col("leader") >= 0) & ~F.array_contains("registered_brokers", F.col("leader"))
        & ~F.col("kraft_migration"),
        say("leader %s is not registered under /brokers/ids", "leader"))


@check("partitions", facts=(REGISTERED_BROKERS, KRAFT_MIGRATION))
def offline_partition() -> Finds:
    """A partition has a leader (not -1) and at least one registered isr member (the latter is not
    checked during a ZK -> KRaft migration: brokers in KRaft mode are alive without being registered)."""
    live_isr = F.array_intersect(_isr(), F.col("registered_brokers"))
    where = _has_state() & F.col("leader").isNotNull() & (
        (F.col("leader") == -1) | ((F.size(live_isr) == 0) & ~F.col("kraft_migration")))
    detail = F.when(F.col("leader") == -1, say("leader is -1 (no leader), isr %s", int_list("isr"))).otherwise(
        say("no member of isr %s is registered under /brokers/ids", int_list("isr")))
    return partition_finds(where, detail)


@check("partitions", facts=(adding,))
def under_replicated() -> Finds:
    """An assigned partition's isr has as many members as its replication factor (the assigned replicas
    minus those a reassignment in progress is adding, as Kafka counts it)."""
    rf = _replication_factor(F.col("replicas"), F.col("adding"))
    reassigning = F.size(F.array_intersect("adding", "replicas")) > 0
    detail = F.when(
        reassigning,
        say("isr %s has %s of replication factor %s (replicas %s, of which %s are being added)",
            int_list("isr"), F.size(_isr()), rf, int_list("replicas"), int_list("adding")),
    ).otherwise(say("isr %s has %s of %s replicas %s", int_list("isr"), F.size(_isr()), rf, int_list("replicas")))
    return partition_finds(_has_state() & _assigned() & (F.size(_isr()) < rf), detail)


@check("partitions", facts=(adding, queued_for_deletion))
def preferred_leader_not_leader() -> Finds:
    """A partition with a leader is led by its preferred (first assigned) replica, as the controller
    counts it for PreferredReplicaImbalanceCount (apache/kafka core/src/main/scala/kafka/controller/
    ControllerContext.scala, ``hasPreferredLeader`` @3.9): topics queued for deletion are left out, and a
    partition whose preferred replica is still being added by a reassignment only once that replica is
    in the isr."""
    preferred = F.try_element_at("replicas", F.lit(1))
    adding_preferred_outside_isr = F.array_contains("adding", preferred) & ~F.array_contains(_isr(), preferred)
    where = (_has_state() & _assigned() & (F.col("leader") >= 0) & (F.size("replicas") > 0)
             & (F.col("leader") != preferred) & ~F.col("queued_for_deletion") & ~adding_preferred_outside_isr)
    return partition_finds(where, say("leader %s is not the preferred replica %s of replicas %s",
                                       "leader", preferred, int_list("replicas")))


@check("assignments", facts=(REGISTERED_BROKERS, KRAFT_MIGRATION))
def replica_on_unknown_broker() -> Finds:
    """Every assigned replica's broker is registered under /brokers/ids (not checked during a ZK -> KRaft
    migration, when brokers running in KRaft mode hold replicas without being registered there)."""
    unknown = F.array_except(_replicas(), F.col("registered_brokers"))
    return partition_finds((F.size(unknown) > 0) & ~F.col("kraft_migration"),
                            say("replicas %s of %s are not registered under /brokers/ids", int_list(unknown),
                                int_list("replicas")))


@check("assignments")
def duplicate_replica() -> Finds:
    """No broker appears twice in one partition's assigned replicas."""
    repeated = F.array_distinct(
        F.filter("replicas", lambda r: F.size(F.filter("replicas", lambda s: s == r)) > 1)
    )
    return partition_finds(F.size(repeated) > 0, say("brokers %s appear more than once in replicas %s",
                                                      int_list(repeated), int_list("replicas")))


@view
def topic_replication_factors(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, counts, path): per topic, its partitions counted by replication factor as Kafka counts
    it during a reassignment (the replicas minus those being added, see ``_replication_factor``)."""
    rf = _replication_factor(_replicas(), F.coalesce("adding_replicas", empty_ints()))
    per_rf = assignments.groupBy(KEY, "topic", rf.alias("rf")).agg(
        F.count(F.lit(1)).alias("partitions"), F.min("path").alias("path"))
    return per_rf.groupBy(KEY, "topic").agg(
        F.array_sort(F.collect_list(F.struct("rf", "partitions"))).alias("counts"), F.min("path").alias("path"))


@check(topic_replication_factors)
def replication_factor_inconsistent() -> Finds:
    """All partitions of a topic have the same replication factor, as Kafka counts it during a
    reassignment: the replicas minus those being added (see ``_replication_factor``)."""
    listing = F.array_join(
        F.transform("counts", lambda c: F.format_string("RF %d on %d partition(s)", c["rf"], c["partitions"])), ", "
    )
    return Finds(where=F.size("counts") > 1, topic="topic", path="path",
                 detail=say("partitions have different replication factors: %s", listing))


@check("partitions")
def partition_state_missing() -> Finds:
    """Every assigned partition has a .../partitions/<p>/state znode."""
    return partition_finds(F.col("assigned") & ~_has_state(),
                            say("partition %s is assigned in the topic znode but has no state znode", "partition"))


@check("partitions")
def partition_state_orphaned() -> Finds:
    """Every partition state znode belongs to a partition of the topic's assignment."""
    return partition_finds(F.col("has_state") & ~_assigned(),
                            say("state znode of partition %s, which is not in the topic's assignment", "partition"))


@check("partitions", facts=(controller_epochs,))
def partition_epoch_ahead_of_controller() -> Finds:
    """A partition state's controller_epoch is not greater than /controller_epoch, nor, during a ZK -> KRaft
    migration, than the KRaft controller's epoch.

    While migrating, the KRaft controller writes partition states with its own epoch
    (apache/kafka core/src/main/scala/kafka/zk/migration/ZkTopicMigrationClient.scala,
    ``state.kraftControllerEpoch()``) and bumps /controller_epoch only by one per takeover
    (KafkaZkClient.tryRegisterKRaftControllerAsActiveController): the KRaft epoch in /controller and
    /migration bounds those states.
    """
    where = (_has_state() & F.col("cluster_epoch").isNotNull()
             & (F.col("controller_epoch") > F.col("allowed_epoch")))
    detail = F.when(
        F.col("allowed_epoch") > F.col("cluster_epoch"),
        say("controller_epoch %s in state > /controller_epoch %s and > KRaft controller epoch %s",
            "controller_epoch", "cluster_epoch", "allowed_epoch"),
    ).otherwise(say("controller_epoch %s in state > /controller_epoch %s", "controller_epoch", "cluster_epoch"))
    return partition_finds(where, detail)


@view
def partition_history(partitions: DataFrame, topics: DataFrame, previous_partitions: DataFrame | None,
                      previous_topics: DataFrame | None) -> DataFrame | None:
    """Each partition with a state beside its state in the baseline (previous_leader_epoch, previous_snapshot) and
    its topic's czxid now and then (czxid_now, czxid_before); None without a baseline.

    The previous tables are keyed by the snapshot they are the baseline of: a snapshot without previous rows
    has no baseline."""
    if previous_partitions is None or previous_topics is None:
        return None
    now = partitions.where(_has_state()).select(KEY, "topic", "partition", "leader_epoch", "path")
    before = previous_partitions.where(_has_state()).select(
        KEY, "topic", "partition", F.col("leader_epoch").alias("previous_leader_epoch"),
        previous_snapshot(previous_partitions).alias("previous_snapshot"),
    )
    return (
        now.join(before, [KEY, "topic", "partition"])
        .join(topics.select(KEY, "topic", F.col("czxid").alias("czxid_now")), [KEY, "topic"], "left")
        .join(previous_topics.select(KEY, "topic", F.col("czxid").alias("czxid_before")), [KEY, "topic"], "left")
    )


@check(partition_history)
def leader_epoch_regressed() -> Finds:
    """A partition's leader_epoch never decreases between snapshots (unless the topic was recreated: a different
    czxid means the topic was deleted and created again, and its epochs start over)."""
    recreated = F.coalesce(F.col("czxid_now") != F.col("czxid_before"), F.lit(False))
    return partition_finds((F.col("leader_epoch") < F.col("previous_leader_epoch")) & ~recreated,
                            say("leader_epoch %s < %s in previous snapshot%s",
                                "leader_epoch", "previous_leader_epoch", "previous_snapshot"))

