"""Admin-operation checks: delete/reassign/election markers and the notification queues.

Ages are ``now_ms - ctime`` where ``now_ms`` is the snapshot's start time, never the wall clock.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import duration, empty_ints, int_list, say, to_output

NOTIFICATION_QUEUES = ("isr_change", "log_dir_event", "config_change")


def _markers(admin_markers: DataFrame, kind: str) -> DataFrame:
    return admin_markers.where(F.col("kind") == kind)


def _age_ms(now_ms: int) -> Column:
    return F.lit(now_ms).cast("long") - F.col("ctime")


def _older_than(now_ms: int, sla_ms: int) -> Column:
    return F.col("ctime").isNotNull() & (_age_ms(now_ms) > F.lit(sla_ms))


def _sla_text(sla_ms: int) -> Column:
    return duration(F.lit(sla_ms).cast("long"))


def delete_topic_stuck(admin_markers: DataFrame, topics: DataFrame, now_ms: int, sla_ms: int) -> DataFrame:
    """An /admin/delete_topics/<t> marker of an existing topic is not older than its SLA."""
    rows = (
        _markers(admin_markers, "delete_topic")
        .where(_older_than(now_ms, sla_ms))
        .join(topics.select("topic"), "topic", "left_semi")
    )
    return to_output(
        rows, "delete_topic_stuck", topic="topic", path="path",
        detail=say("topic %s marked for deletion %s ago (SLA %s) and /brokers/topics/%s still exists",
                   "topic", duration(_age_ms(now_ms)), _sla_text(sla_ms), "topic"),
    )


def delete_marker_orphaned(admin_markers: DataFrame, topics: DataFrame) -> DataFrame:
    """An /admin/delete_topics/<t> marker names a topic that exists."""
    rows = _markers(admin_markers, "delete_topic").join(topics.select("topic"), "topic", "left_anti")
    return to_output(
        rows, "delete_marker_orphaned", topic="topic", path="path",
        detail=say("deletion marker for topic %s, which has no /brokers/topics/%s", "topic", "topic"),
    )


def reassignment_stuck(admin_markers: DataFrame, now_ms: int, sla_ms: int) -> DataFrame:
    """No /admin/reassign_partitions entry is older than its SLA."""
    rows = _markers(admin_markers, "reassignment").where(_older_than(now_ms, sla_ms))
    return to_output(
        rows, "reassignment_stuck", topic="topic", partition="partition", path="path",
        detail=say("reassignment of %s-%s to replicas %s pending for %s (SLA %s)",
                   "topic", "partition", int_list("replicas"), duration(_age_ms(now_ms)), _sla_text(sla_ms)),
    )


def reassignment_invalid(admin_markers: DataFrame, assignments: DataFrame, brokers: DataFrame) -> DataFrame:
    """Every /admin/reassign_partitions entry names an assigned partition and registered brokers."""
    known = assignments.select("topic", "partition").distinct().withColumn("known_partition", F.lit(True))
    registered = brokers.agg(F.collect_set("broker_id").alias("registered_brokers"))
    rows = (
        _markers(admin_markers, "reassignment")
        .join(known, ["topic", "partition"], "left")
        .crossJoin(registered)
        .withColumn("unknown", F.array_except(F.coalesce("replicas", empty_ints()), F.col("registered_brokers")))
        .withColumn(
            "problems",
            F.concat_ws(
                "; ",
                F.when(F.col("known_partition").isNull(),
                       say("%s-%s is not an assigned partition", "topic", "partition")),
                F.when(F.size("unknown") > 0,
                       say("target replicas %s are not registered brokers", int_list("unknown"))),
            ),
        )
        .where(F.col("problems") != "")
    )
    return to_output(
        rows, "reassignment_invalid", topic="topic", partition="partition", path="path",
        detail=say("reassignment entry %s-%s to %s: %s", "topic", "partition", int_list("replicas"), "problems"),
    )


def preferred_election_stuck(admin_markers: DataFrame, now_ms: int, sla_ms: int) -> DataFrame:
    """No /admin/preferred_replica_election entry is older than its SLA."""
    rows = _markers(admin_markers, "preferred_election").where(_older_than(now_ms, sla_ms))
    return to_output(
        rows, "preferred_election_stuck", topic="topic", partition="partition", path="path",
        detail=say("preferred replica election of %s-%s pending for %s (SLA %s)",
                   "topic", "partition", duration(_age_ms(now_ms)), _sla_text(sla_ms)),
    )


def notification_backlog(notifications: DataFrame, now_ms: int, max_children: int, max_age_ms: int) -> DataFrame:
    """The isr_change, log_dir_event and config_change queues stay short and young."""
    queues = (
        notifications.where(F.col("kind").isin(*NOTIFICATION_QUEUES))
        .groupBy("parent")
        .agg(F.count(F.lit(1)).alias("children"), F.min("ctime").alias("oldest_ctime"))
        .withColumn("oldest_age_ms", F.lit(now_ms).cast("long") - F.col("oldest_ctime"))
    )
    rows = queues.where((F.col("children") > max_children) | (F.col("oldest_age_ms") > max_age_ms))
    return to_output(
        rows, "notification_backlog", path="parent",
        detail=say("%s child znode(s), the oldest %s old (limits: %s children, %s)",
                   "children", duration("oldest_age_ms"), F.lit(max_children), duration(F.lit(max_age_ms))),
    )
