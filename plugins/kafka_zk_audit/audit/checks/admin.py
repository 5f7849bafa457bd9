"""Admin-operation checks: delete/reassign/election markers and the notification queues.

One clock: every age is ``snapshot start - ctime``, where the snapshot start (``now_ms``, the
manifest's ``started_at``) is the auditor's clock and ctime is ZooKeeper's, never the wall clock at
check time; the details name both instants. A marker written during the walk has a negative age and
is never overdue. The clock and the SLAs and limits are each snapshot's ``params`` (audit.params), read as
columns of the row's snapshot.

Each check is a declaration (``engine.check``): the checks on ``admin_markers`` rows are evaluated together in one
select, with the facts they name joined once; the notification queues (``notification_queues``) are summed up once
per audit.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.brokers_topics import existing_topics
from kafka_zk_audit.audit.checks.common import (
    KRAFT_MIGRATION,
    REGISTERED_BROKERS,
    check,
    duration,
    empty_ints,
    instant,
    int_list,
    say,
)
from kafka_zk_audit.audit.checks.engine import ColumnLike, Finds, fact, view
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


def _kind(kind: str) -> Column:
    """On admin_markers rows: the marker is of this kind."""
    return F.col("kind") == kind


def _overdue(params: Params, sla: str, suffix: str = "") -> tuple[Column, Column]:
    """(overdue, age text) of a marker: whether it (a row with a ctime) is older than its snapshot's SLA (parameter
    ``sla``), and '3d (SLA 1d; age = snapshot start 2027-01-15T08:00:00Z - znode ctime 2027-01-12T08:00:00Z)'."""
    now, limit = params.column("now_ms").cast("long"), params.column(sla)
    age = now - F.col("ctime")
    text = say("%s%s (SLA %s; age = snapshot start %s - znode ctime %s)", duration(age), F.lit(suffix),
               duration(limit), instant(now), instant("ctime"))
    return F.col("ctime").isNotNull() & (age > limit), text


def _marker_finds(where: Column, detail: Column, partition: ColumnLike = "partition") -> Finds:
    return Finds(where=where, detail=detail, topic="topic", partition=partition, path="path")


@check("admin_markers", facts=(existing_topics,))
def delete_topic_stuck(params: Params) -> Finds:
    """An /admin/delete_topics/<t> marker of an existing topic is not older than its SLA (delete_topic_sla_ms)."""
    overdue, age = _overdue(params, "delete_topic_sla_ms", " ago")
    return _marker_finds(
        _kind("delete_topic") & overdue & F.col("topic_present"),
        say("topic %s marked for deletion %s and /brokers/topics/%s still exists", "topic", age, "topic"),
        partition=None)


@check("admin_markers", facts=(existing_topics,))
def delete_marker_orphaned() -> Finds:
    """An /admin/delete_topics/<t> marker names a topic that exists."""
    return _marker_finds(
        _kind("delete_topic") & ~F.col("topic_present"),
        say("deletion marker for topic %s, which has no /brokers/topics/%s", "topic", "topic"),
        partition=None)


@check("admin_markers")
def reassignment_stuck(params: Params) -> Finds:
    """No /admin/reassign_partitions entry is older than its SLA (reassignment_sla_ms; an entry's age is its
    znode's)."""
    overdue, age = _overdue(params, "reassignment_sla_ms")
    return _marker_finds(
        _kind("reassignment") & overdue,
        say("reassignment of %s-%s to replicas %s pending for %s", "topic", "partition", int_list("replicas"), age))


@fact(on=(KEY, "topic", "partition"), defaults={"reassigned_partition_known": "false"})
def reassigned_partition_known(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, reassigned_partition_known): every assigned partition (False for others)."""
    return (assignments.select(KEY, "topic", "partition").distinct()
            .withColumn("reassigned_partition_known", F.lit(True)))


@check("admin_markers", facts=(reassigned_partition_known, REGISTERED_BROKERS, KRAFT_MIGRATION))
def reassignment_invalid() -> Finds:
    """Every /admin/reassign_partitions entry names an assigned partition and registered brokers.

    During a ZK → KRaft migration brokers already running in KRaft mode are alive but absent from
    /brokers/ids, so the target brokers are not checked then.
    """
    unknown = F.array_except(F.coalesce("replicas", empty_ints()), F.col("registered_brokers"))
    problems = F.concat_ws(
        "; ",
        F.when(~F.col("reassigned_partition_known"), say("%s-%s is not an assigned partition", "topic", "partition")),
        F.when((F.size(unknown) > 0) & ~F.col("kraft_migration"),
               say("target replicas %s are not registered brokers", int_list(unknown))),
    )
    return _marker_finds(
        _kind("reassignment") & (problems != ""),
        say("reassignment entry %s-%s to %s: %s", "topic", "partition", int_list("replicas"), problems))


@check("admin_markers")
def preferred_election_stuck(params: Params) -> Finds:
    """No /admin/preferred_replica_election entry is older than its SLA (preferred_election_sla_ms)."""
    overdue, age = _overdue(params, "preferred_election_sla_ms")
    return _marker_finds(
        _kind("preferred_election") & overdue,
        say("preferred replica election of %s-%s pending for %s", "topic", "partition", age))


def _purged_queue_overdue(notifications: DataFrame, params: Params) -> DataFrame:
    """(snapshot_id, parent, processed_ctime, overdue, oldest_ctime): per /config/changes queue, the children the
    brokers should have purged: more than 15 min (+ max_age of slack for clocks) older than the newest change they
    have surely processed (one at least max_age old at snapshot start); queues without any are left out."""
    children = with_params(
        notifications.where(F.col("kind").isin(*BROKER_PURGED_QUEUES) & F.col("ctime").isNotNull()),
        params, "now_ms", "backlog_max_age_ms",
    )
    processed = (
        children.where(F.col("ctime") <= F.col("now_ms") - F.col("backlog_max_age_ms"))
        .groupBy(KEY, "parent").agg(F.max("ctime").alias("processed_ctime"))
    )
    return (
        children.join(processed, [KEY, "parent"])
        .where(F.col("ctime") < F.col("processed_ctime") - (F.lit(CHANGE_EXPIRATION_MS) + F.col("backlog_max_age_ms")))
        .groupBy(KEY, "parent", "processed_ctime")
        .agg(F.count(F.lit(1)).alias("overdue"), F.min("ctime").alias("oldest_ctime"))
    )


@view
def notification_queues(notifications: DataFrame, params: Params) -> DataFrame:
    """(snapshot_id, parent, purged_by_brokers, children, oldest_ctime, processed_ctime, overdue): one row per
    queue the controller empties (isr_change, log_dir_event: its children and the oldest one's ctime), and one per
    queue the brokers purge (/config/changes) holding children they should have purged (how many, the oldest
    one's ctime and the change they surely processed)."""
    controller_queues = (
        notifications.where(F.col("kind").isin(*CONTROLLER_QUEUES))
        .groupBy(KEY, "parent")
        .agg(F.count(F.lit(1)).alias("children"), F.min("ctime").alias("oldest_ctime"))
        .select("*", F.lit(False).alias("purged_by_brokers"), F.lit(None).cast("long").alias("processed_ctime"),
                F.lit(None).cast("long").alias("overdue"))
    )
    purged = _purged_queue_overdue(notifications, params).select(
        KEY, "parent", F.lit(None).cast("long").alias("children"), "oldest_ctime",
        F.lit(True).alias("purged_by_brokers"), "processed_ctime", "overdue")
    return controller_queues.unionByName(purged)


@check(notification_queues)
def notification_backlog(params: Params) -> Finds:
    """The isr_change and log_dir_event queues stay short and young (backlog_max_children, backlog_max_age_ms);
    /config/changes keeps no change that the brokers should have purged when they processed a newer one."""
    now = params.column("now_ms").cast("long")
    max_children, max_age = params.column("backlog_max_children"), params.column("backlog_max_age_ms")
    oldest_age = now - F.col("oldest_ctime")
    too_long = (F.col("children") > max_children) | (oldest_age > max_age)
    controller_detail = say(
        "%s child znode(s), the oldest %s old (limits: %s children, %s; age = snapshot start %s - ctime %s)",
        "children", duration(oldest_age), max_children, duration(max_age), instant(now),
        instant("oldest_ctime"))
    purged_detail = say(
        "%s child znode(s) not purged: the oldest (ctime %s) is %s older than the change of %s; brokers "
        "processing a change purge those more than %s older (tolerance %s)",
        "overdue", instant("oldest_ctime"), duration(F.col("processed_ctime") - F.col("oldest_ctime")),
        instant("processed_ctime"), duration(F.lit(CHANGE_EXPIRATION_MS)), duration(max_age))
    return Finds(where=F.col("purged_by_brokers") | too_long,
                 detail=F.when(F.col("purged_by_brokers"), purged_detail).otherwise(controller_detail),
                 path="parent")
