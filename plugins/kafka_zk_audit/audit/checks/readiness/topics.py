"""Readiness of the topics the migration copies (R02-R06): their assignments, topic ids, partition states,
pending deletions and reassignments.

The migration reads every topic but those pending deletion (ZkTopicMigrationClient.iterateTopics); ``_migrated``
keeps the rows of the topics it reads. Every frame is keyed by ``snapshot_id``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import empty_ints, int_list, say, to_output, with_kraft_migration
from kafka_zk_audit.audit.normalize import kinds
from kafka_zk_audit.contract.schemas import KEY

# A Kafka topic id (Uuid.toString: URL-safe base64 of 16 bytes, no padding; fromString accepts padding).
TOPIC_ID = r"^[A-Za-z0-9_-]{22}(==)?$"


def _pending_deletions(admin_markers: DataFrame) -> DataFrame:
    """Topics under /admin/delete_topics: the migration leaves them out (3.6.1+) or migrates them (R05)."""
    return admin_markers.where(F.col("kind") == "delete_topic").select(KEY, "topic").distinct()


def _migrated(rows: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """The rows of topics the migration reads (ZkTopicMigrationClient.iterateTopics: all topics minus deletions)."""
    return rows.join(_pending_deletions(admin_markers), [KEY, "topic"], "left_anti")


def _topic_of(path: Column) -> Column:
    return F.regexp_extract(path, kinds.TOPIC_PATH, 1)


def kraft_replica_on_unregistered_broker(
    assignments: DataFrame, broker_ids: DataFrame, admin_markers: DataFrame, controller: DataFrame
) -> DataFrame:
    """R02: every broker named in a migrated topic's assignment is registered under /brokers/ids
    (KRaftMigrationDriver.areZkBrokersReadyForMigration waits for all of them). Not judged while a KRaft controller
    holds /controller: brokers already in KRaft mode are then absent from /brokers/ids."""
    replicas = _migrated(assignments, admin_markers).select(
        KEY, "topic", "partition", "path", F.explode("replicas").alias("broker_id")
    ).where(F.col("broker_id").isNotNull())
    unregistered = replicas.join(broker_ids.select(KEY, "broker_id").distinct(), [KEY, "broker_id"], "left_anti")
    rows = with_kraft_migration(unregistered, controller).where(~F.col("kraft_migration"))
    return to_output(
        rows, "kraft_replica_on_unregistered_broker", topic="topic", partition="partition", broker_id="broker_id",
        path="path",
        detail=say("%s-%s has a replica on broker %s, which is not registered under /brokers/ids: the migration "
                   "waits until it registers", "topic", "partition", "broker_id"),
    )


def kraft_topic_without_id(topics: DataFrame, malformed_znodes: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """R03: every migrated topic znode parses and carries a topic id (ZkTopicMigrationClient: topicIdOpt.get)."""
    without_id = topics.where(
        F.col("topic_id").isNull() | ~F.coalesce(F.col("topic_id").rlike(TOPIC_ID), F.lit(False))
    ).select(
        KEY, "topic", "path",
        F.when(F.col("topic_id").isNull(), say("topic znode (version %s) has no topic_id", "version"))
        .otherwise(say("topic_id %s is not a Kafka topic id", "topic_id")).alias("problem"),
    )
    unparsable = malformed_znodes.where(F.col("kind") == kinds.TOPIC).select(
        KEY, _topic_of(F.col("path")).alias("topic"), "path",
        say("topic znode does not parse: %s", "reason").alias("problem"),
    )
    rows = _migrated(without_id.unionByName(unparsable), admin_markers)
    return to_output(
        rows, "kraft_topic_without_id", topic="topic", path="path",
        detail=F.concat(F.col("problem"), F.lit("; the migrating controller fails on it")),
    )


def kraft_partition_state_missing(
    partitions: DataFrame, admin_markers: DataFrame, malformed_znodes: DataFrame, unreadable_znodes: DataFrame
) -> DataFrame:
    """R04: every assigned partition of a migrated topic has a state znode (ZkTopicMigrationClient ~89 otherwise
    invents leader = first replica, ISR = all replicas, leader epoch 0). A state the auditor could not read, or one
    that does not parse, is not missing."""
    state_path = F.concat(F.col("path"), F.lit("/partitions/"), F.col("partition").cast("string"), F.lit("/state"))
    missing = partitions.where(F.col("assigned") & ~F.col("has_state")).withColumn("state_path", state_path)
    seen = malformed_znodes.select(KEY, F.col("path").alias("state_path")).unionByName(
        unreadable_znodes.select(KEY, F.col("path").alias("state_path"))
    )
    hidden = unreadable_znodes.select(F.col(KEY).alias("hidden_snapshot_id"), F.col("path").alias("hidden"))
    under_hidden = (F.col(KEY) == F.col("hidden_snapshot_id")) & F.col("state_path").startswith(
        F.concat(F.col("hidden"), F.lit("/")))
    rows = (
        _migrated(missing, admin_markers)
        .join(seen, [KEY, "state_path"], "left_anti")
        .join(hidden, under_hidden, "left_anti")
    )
    return to_output(
        rows, "kraft_partition_state_missing", topic="topic", partition="partition", path="path",
        detail=say("%s-%s has no %s: KRaft would start it with leader = first replica and ISR = all replicas",
                   "topic", "partition", "state_path"),
    )


def kraft_pending_topic_deletion(admin_markers: DataFrame, topics: DataFrame, malformed_znodes: DataFrame) -> DataFrame:
    """R05: a /admin/delete_topics/<t> marker whose topic still exists (before 3.6.1 the migration copies it as a
    live topic, KAFKA-15605; from 3.6.1 it is left out and the brokers delete it afterwards)."""
    existing = topics.select(KEY, "topic").unionByName(
        malformed_znodes.where(F.col("kind") == kinds.TOPIC).select(KEY, _topic_of(F.col("path")).alias("topic"))
    ).distinct()
    rows = admin_markers.where(F.col("kind") == "delete_topic").join(existing, [KEY, "topic"])
    return to_output(
        rows, "kraft_pending_topic_deletion", topic="topic", path="path",
        detail=say("topic %s is marked for deletion but still exists", "topic"),
    )


def kraft_reassignment_in_flight(assignments: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """R06: no partition is being reassigned: adding/removing replicas in the topic znode (KIP-455) or an entry of
    /admin/reassign_partitions (the migration copies the half-moved assignment)."""
    moving = assignments.where(
        (F.size(F.coalesce("adding_replicas", empty_ints())) > 0)
        | (F.size(F.coalesce("removing_replicas", empty_ints())) > 0)
    ).select(
        KEY, "topic", "partition", "path",
        F.format_string("adding %s, removing %s", int_list("adding_replicas"), int_list("removing_replicas"))
        .alias("what"),
    )
    legacy = admin_markers.where(F.col("kind") == "reassignment").select(
        KEY, "topic", "partition", "path",
        F.format_string("/admin/reassign_partitions moves it to %s", int_list("replicas")).alias("what"),
    )
    rows = moving.unionByName(legacy).groupBy(KEY, "topic", "partition").agg(
        F.min("path").alias("path"), F.array_join(F.array_sort(F.collect_set("what")), "; ").alias("what")
    )
    return to_output(
        rows, "kraft_reassignment_in_flight", topic="topic", partition="partition", path="path",
        detail=say("%s-%s is being reassigned (%s)", "topic", "partition", "what"),
    )
