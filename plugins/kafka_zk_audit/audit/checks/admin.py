"""Admin-operation checks: delete/reassign/election markers and the notification queues.

One clock: every age is ``snapshot start - ctime``, where the snapshot start (``now_ms``, the
manifest's ``started_at``) is the auditor's clock and ctime is ZooKeeper's, never the wall clock at
check time; the details name both instants. A marker written during the walk has a negative age and
is never overdue.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    duration,
    empty_ints,
    instant,
    int_list,
    kraft_migration,
    registered_broker_ids,
    say,
    to_output,
)

# The controller deletes these children once it has processed them (at once, and all at failover).
CONTROLLER_QUEUES = ("isr_change", "log_dir_event")
# Brokers purge /config/changes lazily: only when they process a new change do they delete the
# children more than changeExpirationMs older than that moment (apache/kafka
# core/src/main/scala/kafka/common/ZkNodeChangeNotificationListener.scala, processNotifications →
# purgeObsoleteNotifications; TopicConfigManager.scala in 0.8.x). The last changes therefore stay for
# as long as no newer change comes: their age alone says nothing.
BROKER_PURGED_QUEUES = ("config_change",)
CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def _markers(admin_markers: DataFrame, kind: str) -> DataFrame:
    return admin_markers.where(F.col("kind") == kind)


def _age_ms(now_ms: int) -> Column:
    return F.lit(now_ms).cast("long") - F.col("ctime")


def _older_than(now_ms: int, sla_ms: int) -> Column:
    return F.col("ctime").isNotNull() & (_age_ms(now_ms) > F.lit(sla_ms))


def _snapshot_start(now_ms: int) -> str:
    return datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age_text(now_ms: int, sla_ms: int, suffix: str = "") -> Column:
    """'3d (SLA 1d; age = snapshot start 2027-01-15T08:00:00Z - znode ctime 2027-01-12T08:00:00Z)'."""
    return say("%s%s (SLA %s; age = snapshot start %s - znode ctime %s)", duration(_age_ms(now_ms)), F.lit(suffix),
               duration(F.lit(sla_ms).cast("long")), F.lit(_snapshot_start(now_ms)), instant("ctime"))


def delete_topic_stuck(admin_markers: DataFrame, topics: DataFrame, now_ms: int, sla_ms: int) -> DataFrame:
    """An /admin/delete_topics/<t> marker of an existing topic is not older than its SLA."""
    rows = (
        _markers(admin_markers, "delete_topic")
        .where(_older_than(now_ms, sla_ms))
        .join(topics.select("topic"), "topic", "left_semi")
    )
    return to_output(
        rows, "delete_topic_stuck", topic="topic", path="path",
        detail=say("topic %s marked for deletion %s and /brokers/topics/%s still exists",
                   "topic", _age_text(now_ms, sla_ms, " ago"), "topic"),
    )


def delete_marker_orphaned(admin_markers: DataFrame, topics: DataFrame) -> DataFrame:
    """An /admin/delete_topics/<t> marker names a topic that exists."""
    rows = _markers(admin_markers, "delete_topic").join(topics.select("topic"), "topic", "left_anti")
    return to_output(
        rows, "delete_marker_orphaned", topic="topic", path="path",
        detail=say("deletion marker for topic %s, which has no /brokers/topics/%s", "topic", "topic"),
    )


def reassignment_stuck(admin_markers: DataFrame, now_ms: int, sla_ms: int) -> DataFrame:
    """No /admin/reassign_partitions entry is older than its SLA (an entry's age is its znode's)."""
    rows = _markers(admin_markers, "reassignment").where(_older_than(now_ms, sla_ms))
    return to_output(
        rows, "reassignment_stuck", topic="topic", partition="partition", path="path",
        detail=say("reassignment of %s-%s to replicas %s pending for %s",
                   "topic", "partition", int_list("replicas"), _age_text(now_ms, sla_ms)),
    )


def reassignment_invalid(
    admin_markers: DataFrame, assignments: DataFrame, brokers: DataFrame, controller: DataFrame
) -> DataFrame:
    """Every /admin/reassign_partitions entry names an assigned partition and registered brokers.

    During a ZK → KRaft migration brokers already running in KRaft mode are alive but absent from
    /brokers/ids, so the target brokers are not checked then.
    """
    known = assignments.select("topic", "partition").distinct().withColumn("known_partition", F.lit(True))
    rows = (
        _markers(admin_markers, "reassignment")
        .join(known, ["topic", "partition"], "left")
        .crossJoin(registered_broker_ids(brokers))
        .crossJoin(kraft_migration(controller))
        .withColumn("unknown", F.array_except(F.coalesce("replicas", empty_ints()), F.col("registered_brokers")))
        .withColumn(
            "problems",
            F.concat_ws(
                "; ",
                F.when(F.col("known_partition").isNull(),
                       say("%s-%s is not an assigned partition", "topic", "partition")),
                F.when((F.size("unknown") > 0) & ~F.col("kraft_migration"),
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
        detail=say("preferred replica election of %s-%s pending for %s",
                   "topic", "partition", _age_text(now_ms, sla_ms)),
    )


def _controller_queue_backlog(notifications: DataFrame, now_ms: int, max_children: int, max_age_ms: int) -> DataFrame:
    queues = (
        notifications.where(F.col("kind").isin(*CONTROLLER_QUEUES))
        .groupBy("parent")
        .agg(F.count(F.lit(1)).alias("children"), F.min("ctime").alias("oldest_ctime"))
        .withColumn("oldest_age_ms", F.lit(now_ms).cast("long") - F.col("oldest_ctime"))
    )
    rows = queues.where((F.col("children") > max_children) | (F.col("oldest_age_ms") > max_age_ms))
    return rows.select(
        "parent",
        say("%s child znode(s), the oldest %s old (limits: %s children, %s; age = snapshot start %s - "
            "ctime %s)", "children", duration("oldest_age_ms"), F.lit(max_children), duration(F.lit(max_age_ms)),
            F.lit(_snapshot_start(now_ms)), instant("oldest_ctime")).alias("detail"),
    )


def _purged_queue_backlog(notifications: DataFrame, now_ms: int, max_age_ms: int) -> DataFrame:
    """Children the brokers should have purged: more than 15 min (+ max_age of slack for clocks) older
    than the newest change they have surely processed (one at least max_age old at snapshot start)."""
    children = notifications.where(F.col("kind").isin(*BROKER_PURGED_QUEUES) & F.col("ctime").isNotNull())
    processed = (
        children.where(F.col("ctime") <= F.lit(now_ms - max_age_ms))
        .groupBy("parent").agg(F.max("ctime").alias("processed_ctime"))
    )
    overdue = (
        children.join(processed, "parent")
        .where(F.col("ctime") < F.col("processed_ctime") - F.lit(CHANGE_EXPIRATION_MS + max_age_ms))
        .groupBy("parent", "processed_ctime")
        .agg(F.count(F.lit(1)).alias("overdue"), F.min("ctime").alias("oldest_ctime"))
    )
    return overdue.select(
        "parent",
        say("%s child znode(s) not purged: the oldest (ctime %s) is %s older than the change of %s; brokers "
            "processing a change purge those more than %s older (tolerance %s)",
            "overdue", instant("oldest_ctime"), duration(F.col("processed_ctime") - F.col("oldest_ctime")),
            instant("processed_ctime"), duration(F.lit(CHANGE_EXPIRATION_MS)),
            duration(F.lit(max_age_ms))).alias("detail"),
    )


def notification_backlog(notifications: DataFrame, now_ms: int, max_children: int, max_age_ms: int) -> DataFrame:
    """The isr_change and log_dir_event queues stay short and young; /config/changes keeps no change
    that the brokers should have purged when they processed a newer one."""
    rows = _controller_queue_backlog(notifications, now_ms, max_children, max_age_ms).unionByName(
        _purged_queue_backlog(notifications, now_ms, max_age_ms)
    )
    return to_output(rows, "notification_backlog", path="parent", detail=F.col("detail"))
