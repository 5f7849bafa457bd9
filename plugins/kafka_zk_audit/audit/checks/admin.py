"""Admin-operation checks: delete/reassign/election markers and the notification queues.

One clock: every age is ``snapshot start - ctime``, where the snapshot start (``now_ms``, the
manifest's ``started_at``) is the auditor's clock and ctime is ZooKeeper's, never the wall clock at
check time; the details name both instants. A marker written during the walk has a negative age and
is never overdue. The clock and the SLAs and limits are each snapshot's ``params`` (audit.params), joined
on the snapshot key.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    duration,
    empty_ints,
    instant,
    int_list,
    say,
    to_output,
    with_kraft_migration,
    with_registered_brokers,
)
from kafka_zk_audit.audit.params import Params, with_params
from kafka_zk_audit.contract.schemas import KEY

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


def _age_ms(ctime: str = "ctime") -> Column:
    """A znode's age at the snapshot start: now_ms (rows with that parameter) - its ``ctime``."""
    return F.col("now_ms").cast("long") - F.col(ctime)


def _overdue(markers: DataFrame, params: Params, sla: str) -> DataFrame:
    """The markers older than their snapshot's SLA (parameter ``sla``), with columns now_ms and ``sla``."""
    return with_params(markers, params, "now_ms", sla).where(
        F.col("ctime").isNotNull() & (_age_ms() > F.col(sla)))


def _snapshot_start() -> Column:
    """The snapshot start (rows with the now_ms parameter) as e.g. 2027-01-15T08:00:00Z."""
    return instant("now_ms")


def _age_text(sla: str, suffix: str = "") -> Column:
    """'3d (SLA 1d; age = snapshot start 2027-01-15T08:00:00Z - znode ctime 2027-01-12T08:00:00Z)' (rows with
    the now_ms and ``sla`` parameters)."""
    return say("%s%s (SLA %s; age = snapshot start %s - znode ctime %s)", duration(_age_ms()), F.lit(suffix),
               duration(F.col(sla)), _snapshot_start(), instant("ctime"))


def delete_topic_stuck(admin_markers: DataFrame, topics: DataFrame, params: Params) -> DataFrame:
    """An /admin/delete_topics/<t> marker of an existing topic is not older than its SLA (delete_topic_sla_ms)."""
    rows = _overdue(_markers(admin_markers, "delete_topic"), params, "delete_topic_sla_ms").join(
        topics.select(KEY, "topic"), [KEY, "topic"], "left_semi")
    return to_output(
        rows, "delete_topic_stuck", topic="topic", path="path",
        detail=say("topic %s marked for deletion %s and /brokers/topics/%s still exists",
                   "topic", _age_text("delete_topic_sla_ms", " ago"), "topic"),
    )


def delete_marker_orphaned(admin_markers: DataFrame, topics: DataFrame) -> DataFrame:
    """An /admin/delete_topics/<t> marker names a topic that exists."""
    rows = _markers(admin_markers, "delete_topic").join(topics.select(KEY, "topic"), [KEY, "topic"], "left_anti")
    return to_output(
        rows, "delete_marker_orphaned", topic="topic", path="path",
        detail=say("deletion marker for topic %s, which has no /brokers/topics/%s", "topic", "topic"),
    )


def reassignment_stuck(admin_markers: DataFrame, params: Params) -> DataFrame:
    """No /admin/reassign_partitions entry is older than its SLA (reassignment_sla_ms; an entry's age is its
    znode's)."""
    rows = _overdue(_markers(admin_markers, "reassignment"), params, "reassignment_sla_ms")
    return to_output(
        rows, "reassignment_stuck", topic="topic", partition="partition", path="path",
        detail=say("reassignment of %s-%s to replicas %s pending for %s",
                   "topic", "partition", int_list("replicas"), _age_text("reassignment_sla_ms")),
    )


def reassignment_invalid(
    admin_markers: DataFrame, assignments: DataFrame, brokers: DataFrame, controller: DataFrame
) -> DataFrame:
    """Every /admin/reassign_partitions entry names an assigned partition and registered brokers.

    During a ZK → KRaft migration brokers already running in KRaft mode are alive but absent from
    /brokers/ids, so the target brokers are not checked then.
    """
    known = assignments.select(KEY, "topic", "partition").distinct().withColumn("known_partition", F.lit(True))
    marked = _markers(admin_markers, "reassignment").join(known, [KEY, "topic", "partition"], "left")
    rows = (
        with_kraft_migration(with_registered_brokers(marked, brokers), controller)
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


def preferred_election_stuck(admin_markers: DataFrame, params: Params) -> DataFrame:
    """No /admin/preferred_replica_election entry is older than its SLA (preferred_election_sla_ms)."""
    rows = _overdue(_markers(admin_markers, "preferred_election"), params, "preferred_election_sla_ms")
    return to_output(
        rows, "preferred_election_stuck", topic="topic", partition="partition", path="path",
        detail=say("preferred replica election of %s-%s pending for %s",
                   "topic", "partition", _age_text("preferred_election_sla_ms")),
    )


def _controller_queue_backlog(notifications: DataFrame, params: Params) -> DataFrame:
    queues = with_params(
        notifications.where(F.col("kind").isin(*CONTROLLER_QUEUES))
        .groupBy(KEY, "parent")
        .agg(F.count(F.lit(1)).alias("children"), F.min("ctime").alias("oldest_ctime")),
        params, "now_ms", "backlog_max_children", "backlog_max_age_ms",
    ).withColumn("oldest_age_ms", _age_ms("oldest_ctime"))
    rows = queues.where((F.col("children") > F.col("backlog_max_children"))
                        | (F.col("oldest_age_ms") > F.col("backlog_max_age_ms")))
    return rows.select(
        KEY, "parent",
        say("%s child znode(s), the oldest %s old (limits: %s children, %s; age = snapshot start %s - "
            "ctime %s)", "children", duration("oldest_age_ms"), "backlog_max_children",
            duration("backlog_max_age_ms"), _snapshot_start(), instant("oldest_ctime")).alias("detail"),
    )


def _purged_queue_backlog(notifications: DataFrame, params: Params) -> DataFrame:
    """Children the brokers should have purged: more than 15 min (+ max_age of slack for clocks) older
    than the newest change they have surely processed (one at least max_age old at snapshot start)."""
    children = with_params(
        notifications.where(F.col("kind").isin(*BROKER_PURGED_QUEUES) & F.col("ctime").isNotNull()),
        params, "now_ms", "backlog_max_age_ms",
    )
    processed = (
        children.where(F.col("ctime") <= F.col("now_ms") - F.col("backlog_max_age_ms"))
        .groupBy(KEY, "parent").agg(F.max("ctime").alias("processed_ctime"))
    )
    overdue = (
        children.join(processed, [KEY, "parent"])
        .where(F.col("ctime") < F.col("processed_ctime") - (F.lit(CHANGE_EXPIRATION_MS) + F.col("backlog_max_age_ms")))
        .groupBy(KEY, "parent", "processed_ctime", "backlog_max_age_ms")
        .agg(F.count(F.lit(1)).alias("overdue"), F.min("ctime").alias("oldest_ctime"))
    )
    return overdue.select(
        KEY, "parent",
        say("%s child znode(s) not purged: the oldest (ctime %s) is %s older than the change of %s; brokers "
            "processing a change purge those more than %s older (tolerance %s)",
            "overdue", instant("oldest_ctime"), duration(F.col("processed_ctime") - F.col("oldest_ctime")),
            instant("processed_ctime"), duration(F.lit(CHANGE_EXPIRATION_MS)),
            duration("backlog_max_age_ms")).alias("detail"),
    )


def notification_backlog(notifications: DataFrame, params: Params) -> DataFrame:
    """The isr_change and log_dir_event queues stay short and young (backlog_max_children, backlog_max_age_ms);
    /config/changes keeps no change that the brokers should have purged when they processed a newer one."""
    rows = _controller_queue_backlog(notifications, params).unionByName(_purged_queue_backlog(notifications, params))
    return to_output(rows, "notification_backlog", path="parent", detail=F.col("detail"))
