"""Readiness of the topics the migration copies (R02-R06): their assignments, topic ids, partition states,
pending deletions and reassignments.

The migration reads every topic but those pending deletion (ZkTopicMigrationClient.iterateTopics): the checks of
the topics it reads leave out those the fact ``queued_for_deletion`` marks. Each check is a declaration
(``engine.check``) whose signature as a function is its inputs' names; every frame is keyed by ``snapshot_id``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import engine
from kafka_zk_audit.audit.checks.common import KRAFT_MIGRATION, empty_ints, int_list, say
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.audit.checks.partitions import queued_for_deletion
from kafka_zk_audit.audit.checks.readiness.cluster import readiness_znode_problems
from kafka_zk_audit.audit.normalize import kinds
from kafka_zk_audit.contract.schemas import KEY

# A Kafka topic id (Uuid.toString: URL-safe base64 of 16 bytes, no padding; fromString accepts padding).
TOPIC_ID = r"^[A-Za-z0-9_-]{22}(==)?$"


def _migrated() -> Column:
    """On rows with queued_for_deletion: the topic is one the migration reads (all topics minus deletions)."""
    return ~F.col("queued_for_deletion")


def _topic_of(path: Column) -> Column:
    return F.regexp_extract(path, kinds.TOPIC_PATH, 1)


@view
def readiness_replicas(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, path, broker_id): each broker an assignment names, one row per replica."""
    return assignments.select(
        KEY, "topic", "partition", "path", F.explode("replicas").alias("broker_id")
    ).where(F.col("broker_id").isNotNull())


@fact(on=(KEY, "broker_id"), defaults={"registered": "false"})
def readiness_registered(broker_ids: DataFrame) -> DataFrame:
    """(snapshot_id, broker_id, registered): the broker ids registered under /brokers/ids (``broker_ids``)."""
    return broker_ids.groupBy(KEY, "broker_id").agg(F.lit(True).alias("registered"))


@engine.check(readiness_replicas, facts=(queued_for_deletion, readiness_registered, KRAFT_MIGRATION),
              arguments=("assignments", "broker_ids", "admin_markers", "controller"))
def kraft_replica_on_unregistered_broker() -> Finds:
    """R02: every broker named in a migrated topic's assignment is registered under /brokers/ids
    (KRaftMigrationDriver.areZkBrokersReadyForMigration waits for all of them). Not judged while a KRaft controller
    holds /controller: brokers already in KRaft mode are then absent from /brokers/ids."""
    return Finds(
        where=_migrated() & ~F.col("registered") & ~F.col("kraft_migration"),
        topic="topic", partition="partition", broker_id="broker_id", path="path",
        detail=say("%s-%s has a replica on broker %s, which is not registered under /brokers/ids: the migration "
                   "waits until it registers", "topic", "partition", "broker_id"),
    )


@view
def readiness_topic_znodes(topics: DataFrame, malformed_znodes: DataFrame) -> DataFrame:
    """(snapshot_id, topic, path, version, topic_id, reason, parsed): every /brokers/topics/<t> znode, parsed (a
    topics row) or not (a malformed topic znode, with its reason)."""
    parsed = topics.select(KEY, "topic", "path", "version", "topic_id", F.lit(None).cast("string").alias("reason"),
                           F.lit(True).alias("parsed"))
    unparsable = malformed_znodes.where(F.col("kind") == kinds.TOPIC).select(
        KEY, _topic_of(F.col("path")).alias("topic"), "path", F.lit(None).cast("int").alias("version"),
        F.lit(None).cast("string").alias("topic_id"), "reason", F.lit(False).alias("parsed"),
    )
    return parsed.unionByName(unparsable)


@engine.check(readiness_topic_znodes, facts=(queued_for_deletion,),
              arguments=("topics", "malformed_znodes", "admin_markers"))
def kraft_topic_without_id() -> Finds:
    """R03: every migrated topic znode parses and carries a topic id (ZkTopicMigrationClient: topicIdOpt.get)."""
    without_id = F.col("topic_id").isNull() | ~F.coalesce(F.col("topic_id").rlike(TOPIC_ID), F.lit(False))
    problem = (
        F.when(~F.col("parsed"), say("topic znode does not parse: %s", "reason"))
        .when(F.col("topic_id").isNull(), say("topic znode (version %s) has no topic_id", "version"))
        .otherwise(say("topic_id %s is not a Kafka topic id", "topic_id"))
    )
    return Finds(where=_migrated() & without_id, topic="topic", path="path",
                 detail=F.concat(problem, F.lit("; the migrating controller fails on it")))


def _state_path() -> Column:
    return F.concat(F.col("path"), F.lit("/partitions/"), F.col("partition").cast("string"), F.lit("/state"))


@engine.check("partitions", facts=(queued_for_deletion, readiness_znode_problems),
              arguments=("partitions", "admin_markers", "malformed_znodes", "unreadable_znodes"))
def kraft_partition_state_missing() -> Finds:
    """R04: every assigned partition of a migrated topic has a state znode (ZkTopicMigrationClient ~89 otherwise
    invents leader = first replica, ISR = all replicas, leader epoch 0). A state the auditor could not read, or one
    that does not parse, is not missing."""
    state_path = _state_path()
    seen = (F.array_contains(F.map_keys("malformed_reasons"), state_path)
            | F.array_contains("unreadable_paths", state_path))
    under_hidden = F.exists("unreadable_paths", lambda hidden: state_path.startswith(F.concat(hidden, F.lit("/"))))
    where = (F.col("assigned") & ~F.col("has_state") & _migrated() & ~F.coalesce(seen, F.lit(False))
             & ~F.coalesce(under_hidden, F.lit(False)))
    return Finds(
        where=where, topic="topic", partition="partition", path="path",
        detail=say("%s-%s has no %s: KRaft would start it with leader = first replica and ISR = all replicas",
                   "topic", "partition", state_path),
    )


@fact(on=(KEY, "topic"), defaults={"topic_exists": "false"})
def readiness_topic_exists(readiness_topic_znodes: DataFrame) -> DataFrame:
    """(snapshot_id, topic, topic_exists): the topics with a /brokers/topics/<t> znode, parsed or not."""
    return readiness_topic_znodes.groupBy(KEY, "topic").agg(F.lit(True).alias("topic_exists"))


@engine.check("admin_markers", facts=(readiness_topic_exists,),
              arguments=("admin_markers", "topics", "malformed_znodes"))
def kraft_pending_topic_deletion() -> Finds:
    """R05: a /admin/delete_topics/<t> marker whose topic still exists (before 3.6.1 the migration copies it as a
    live topic, KAFKA-15605; from 3.6.1 it is left out and the brokers delete it afterwards)."""
    return Finds(where=(F.col("kind") == "delete_topic") & F.col("topic_exists"), topic="topic", path="path",
                 detail=say("topic %s is marked for deletion but still exists", "topic"))


@view
def readiness_reassignments(assignments: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, path, what): each partition being reassigned, by adding/removing replicas in
    its topic znode (KIP-455) or an entry of /admin/reassign_partitions, and how."""
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
    return moving.unionByName(legacy).groupBy(KEY, "topic", "partition").agg(
        F.min("path").alias("path"), F.array_join(F.array_sort(F.collect_set("what")), "; ").alias("what")
    )


@engine.check(readiness_reassignments, arguments=("assignments", "admin_markers"))
def kraft_reassignment_in_flight() -> Finds:
    """R06: no partition is being reassigned: adding/removing replicas in the topic znode (KIP-455) or an entry of
    /admin/reassign_partitions (the migration copies the half-moved assignment)."""
    return Finds(where=F.lit(True), topic="topic", partition="partition", path="path",
                 detail=say("%s-%s is being reassigned (%s)", "topic", "partition", "what"))
