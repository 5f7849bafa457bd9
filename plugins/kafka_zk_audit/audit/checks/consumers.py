"""Old (ZooKeeper-based) consumer group checks: registrations, owners, the range assignment, offsets.

Every frame is keyed by ``snapshot_id`` (``KEY``): each join, aggregation and window below includes it, so
the checks of several snapshots run in one plan and never mix their groups, topics or threads.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import empty_output, instant, previous_snapshot, say, to_output, zk_id
from kafka_zk_audit.contract.schemas import KEY

# Topics Kafka's consumers leave out of wildcard subscriptions (exclude.internal.topics=true).
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
GROUP_PARTITION = ["group_id", "topic", "partition"]
GROUP_TOPIC = [KEY, "group_id", "topic"]  # the unit of a range assignment: one group's threads on one topic


def _owner_consumer() -> Column:
    return F.coalesce(F.col("owner_consumer_id"), F.col("owner"))


def subscriptions(consumer_registrations: DataFrame, topics: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, consumer_id, format, topic, streams, path) for every topic each live consumer
    subscribes to (among its own snapshot's topics).

    A static subscription names its topics; a white_list / black_list registration holds one regex that
    matches (or, for black_list, excludes) whole topic names, evaluated with Java's Pattern.matches as
    the consumer itself does. A regex Java cannot compile subscribes to nothing.
    """
    entries = consumer_registrations.select(
        KEY, "group_id", "consumer_id", "format", F.coalesce("pattern", F.lit("static")).alias("pattern"),
        F.explode("subscription").alias("key", "streams"), "path",
    )
    static = entries.where(F.col("pattern") == "static").withColumnRenamed("key", "topic")
    names = topics.select(KEY, "topic").where(~F.col("topic").isin(*INTERNAL_TOPICS))
    matches = F.try_reflect(F.lit("java.util.regex.Pattern"), F.lit("matches"), F.col("key"), F.col("topic"))
    wildcard = (
        entries.where(F.col("pattern").isin("white_list", "black_list"))
        .join(names, KEY)
        .where(
            ((F.col("pattern") == "white_list") & (matches == "true"))
            | ((F.col("pattern") == "black_list") & (matches == "false"))
        )
        .drop("key")
    )
    return static.drop("pattern").unionByName(wildcard.drop("pattern"))


def owner_not_registered(consumer_owners: DataFrame, consumer_registrations: DataFrame) -> DataFrame:
    """Every owner znode names a consumer id registered under /consumers/<g>/ids."""
    registered = consumer_registrations.select(KEY, "group_id", F.col("consumer_id").alias("owner_consumer"))
    rows = (
        consumer_owners.withColumn("owner_consumer", _owner_consumer())
        .join(registered, [KEY, "group_id", "owner_consumer"], "left_anti")
    )
    return to_output(
        rows, "owner_not_registered", topic="topic", partition="partition", group_id="group_id", path="path",
        detail=say("owner %s names consumer %s, which is not registered under /consumers/%s/ids",
                   "owner", "owner_consumer", "group_id"),
    )


def partition_multiply_owned(consumer_owners: DataFrame) -> DataFrame:
    """One (group, topic, partition) has at most one owner znode."""
    rows = (
        consumer_owners.groupBy(KEY, *GROUP_PARTITION)
        .agg(
            F.count(F.lit(1)).alias("claims"),
            F.array_sort(F.collect_list(F.coalesce("owner", F.lit("(empty)")))).alias("owners"),
            F.array_sort(F.collect_list("path")).alias("paths"),
        )
        .where(F.col("claims") > 1)
    )
    return to_output(
        rows, "partition_multiply_owned", topic="topic", partition="partition", group_id="group_id",
        path=F.try_element_at("paths", F.lit(1)),
        detail=say("claimed by %s owner znodes: %s (%s)", "claims", F.array_join("owners", ", "),
                   F.array_join("paths", ", ")),
    )


def partition_unowned(
    consumer_registrations: DataFrame, consumer_owners: DataFrame, assignments: DataFrame, topics: DataFrame
) -> DataFrame:
    """Every partition of a topic that a group's live consumers subscribe to has an owner."""
    subscribed = subscriptions(consumer_registrations, topics).groupBy(*GROUP_TOPIC).agg(
        F.countDistinct("consumer_id").alias("consumers"),
        F.min(F.regexp_replace("path", "/ids/[^/]*$", "")).alias("group_path"),
    )
    rows = (
        subscribed.join(assignments.select(KEY, "topic", "partition"), [KEY, "topic"])
        .join(consumer_owners.select(KEY, *GROUP_PARTITION), [KEY, *GROUP_PARTITION], "left_anti")
    )
    return to_output(
        rows, "partition_unowned", topic="topic", partition="partition", group_id="group_id",
        path=F.format_string("%s/owners/%s/%s", "group_path", "topic", F.col("partition").cast("string")),
        detail=say("partition %s of %s has no owner although %s live consumer(s) of the group subscribe to it",
                   "partition", "topic", "consumers"),
    )


def range_assignment(consumer_registrations: DataFrame, assignments: DataFrame, topics: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, partition, expected_owner): the old consumer's range assignment, recomputed.

    Per snapshot, group and topic: partitions sorted numerically, threads "<consumer_id>-<n>" (n < streams) of the
    subscribed consumers sorted as strings; with n = P div T and r = P mod T, thread i owns
    n*i + min(i, r) ... for n + (i < r ? 1 : 0) partitions. Groups where a pykafka consumer subscribes to
    the topic are left out: pykafka balances on its own.
    """
    subscribed = subscriptions(consumer_registrations, topics)
    range_groups = (
        subscribed.groupBy(*GROUP_TOPIC)
        .agg(F.max(F.col("format") == "pykafka").alias("has_pykafka"))
        .where(~F.coalesce(F.col("has_pykafka"), F.lit(False)))
        .drop("has_pykafka")
    )
    threads = (
        subscribed.where(F.col("streams") > 0)
        .join(range_groups, GROUP_TOPIC, "left_semi")
        .select(*GROUP_TOPIC, "consumer_id", F.explode(F.sequence(F.lit(0), F.col("streams") - 1)).alias("n"))
        .select(*GROUP_TOPIC, F.concat_ws("-", "consumer_id", F.col("n").cast("string")).alias("thread_id"))
        .distinct()
    )
    by_thread = Window.partitionBy(*GROUP_TOPIC).orderBy("thread_id")
    ranked_threads = threads.select(
        *GROUP_TOPIC, "thread_id", (F.row_number().over(by_thread) - 1).alias("thread_index")
    )
    thread_counts = ranked_threads.groupBy(*GROUP_TOPIC).agg(F.count(F.lit(1)).alias("thread_count"))
    per_topic = Window.partitionBy(KEY, "topic")
    ranked_partitions = (
        assignments.select(KEY, "topic", "partition").where(F.col("partition").isNotNull()).distinct()
        .select(KEY, "topic", "partition",
                (F.row_number().over(per_topic.orderBy("partition")) - 1).alias("partition_index"),
                F.count(F.lit(1)).over(per_topic).alias("partition_count"))
    )
    # Invert the ranges: the first r threads own n + 1 partitions each, the others n.
    n = F.floor(F.col("partition_count") / F.col("thread_count"))
    r = F.col("partition_count") % F.col("thread_count")
    j = F.col("partition_index")
    thread_index = F.when(j < r * (n + 1), F.floor(j / (n + 1))).otherwise(
        r + F.floor((j - r * (n + 1)) / F.nullif(n, F.lit(0)))
    )
    expected = (
        ranked_partitions.join(thread_counts, [KEY, "topic"])
        .withColumn("thread_index", thread_index.cast("int"))
        .join(ranked_threads, [*GROUP_TOPIC, "thread_index"])
    )
    return expected.select(*GROUP_TOPIC, "partition", F.col("thread_id").alias("expected_owner"))


def owner_assignment_mismatch(
    consumer_registrations: DataFrame, consumer_owners: DataFrame, assignments: DataFrame, topics: DataFrame
) -> DataFrame:
    """Each owner znode holds the thread the range assignment gives its partition (pykafka groups aside)."""
    subscribed = subscriptions(consumer_registrations, topics)
    group = [KEY, "group_id"]
    pykafka_groups = consumer_registrations.where(F.col("format") == "pykafka").select(*group).distinct()
    range_groups = consumer_registrations.select(*group).distinct().join(pykafka_groups, group, "left_anti")
    subscribed_topics = subscribed.select(*GROUP_TOPIC).distinct().withColumn("subscribed", F.lit(True))
    owners = (
        consumer_owners.where(F.coalesce(F.col("node_form"), F.lit("partition")) == "partition")
        .join(range_groups, group, "left_semi")
        .select(KEY, *GROUP_PARTITION, "owner", "path")
    )
    rows = (
        owners.join(range_assignment(consumer_registrations, assignments, topics), [KEY, *GROUP_PARTITION], "left")
        .join(subscribed_topics, GROUP_TOPIC, "left")
        .where(~F.col("owner").eqNullSafe(F.col("expected_owner")))
    )
    owned_by = F.coalesce(F.col("owner"), F.lit("(empty)"))
    detail = (
        F.when(F.col("expected_owner").isNotNull(),
               say("owned by %s, range assignment gives %s", owned_by, "expected_owner"))
        .when(F.col("subscribed").isNull(),
              say("owned by %s, but no live consumer of the group subscribes to %s", owned_by, "topic"))
        .otherwise(say("owned by %s, but partition %s is not in the assignment of %s", owned_by, "partition", "topic"))
    )
    return to_output(
        rows, "owner_assignment_mismatch", topic="topic", partition="partition", group_id="group_id", path="path",
        detail=detail,
    )


def offset_invalid(consumer_offsets: DataFrame) -> DataFrame:
    """Every offset znode holds a non-negative decimal long."""
    rows = consumer_offsets.where(F.col("offset").isNull() | (F.col("offset") < 0))
    raw = F.when(F.col("raw").isNull(), F.lit("no data")).otherwise(
        F.concat(F.lit('"'), F.substring("raw", 1, 60), F.lit('"'))
    )
    detail = F.when(F.col("offset") < 0, say("offset %s is negative", "offset")).otherwise(
        say("offset data %s is not a decimal long", raw)
    )
    return to_output(
        rows, "offset_invalid", topic="topic", partition="partition", group_id="group_id", path="path", detail=detail
    )


def offset_for_unknown_partition(
    consumer_offsets: DataFrame, assignments: DataFrame, topics: DataFrame
) -> DataFrame:
    """Every offset names an assigned partition of an existing topic.

    Kafka never deletes the old consumers' offsets of a deleted topic (nor does a recreated topic with
    fewer partitions): they stay under /consumers/<g>/offsets/<t>/<p> until a tool deletes them. Offsets
    of Kafka's internal topics are left out: Kafka creates those topics itself when first needed and
    refuses to delete them.
    """
    rows = (
        consumer_offsets.where(F.col("partition").isNotNull() & ~F.col("topic").isin(*INTERNAL_TOPICS))
        .join(topics.select(KEY, "topic", "partition_count", F.lit(True).alias("topic_exists")), [KEY, "topic"],
              "left")
        .join(assignments.select(KEY, "topic", "partition"), [KEY, "topic", "partition"], "left_anti")
    )
    detail = F.when(
        F.col("topic_exists"),
        say("offset for partition %s of %s, which has no such partition (partition_count %s)",
            "partition", "topic", "partition_count"),
    ).otherwise(say("offset for partition %s of %s, which does not exist (no /brokers/topics/%s)",
                    "partition", "topic", "topic"))
    return to_output(
        rows, "offset_for_unknown_partition", topic="topic", partition="partition", group_id="group_id", path="path",
        detail=detail,
    )


def offset_regressed(
    consumer_offsets: DataFrame,
    topics: DataFrame,
    previous_consumer_offsets: DataFrame | None,
    previous_topics: DataFrame | None,
) -> DataFrame:
    """A committed offset never decreases between snapshots.

    Two causes are explained rather than reported as problems (info, status explained): the topic was
    deleted and created again (another czxid: its offsets start over), or the offset znode itself was
    deleted and created again (another ctime: the group's offsets were deleted, e.g. by
    ``kafka-consumer-groups --delete``, and committed anew).

    The previous tables are keyed by the snapshot they are the baseline of: a snapshot without previous
    rows reports nothing, as without a baseline.
    """
    if previous_consumer_offsets is None or previous_topics is None:
        return empty_output(consumer_offsets, "offset_regressed")
    before = previous_consumer_offsets.select(
        KEY, *GROUP_PARTITION, F.col("offset").alias("previous_offset"), F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_consumer_offsets).alias("previous_snapshot"),
    )
    rows = (
        consumer_offsets.select(KEY, *GROUP_PARTITION, "offset", "path", "ctime")
        .join(before, [KEY, *GROUP_PARTITION])
        .where(F.col("offset") < F.col("previous_offset"))
        .join(topics.select(KEY, "topic", F.col("czxid").alias("czxid_now")), [KEY, "topic"], "left")
        .join(previous_topics.select(KEY, "topic", F.col("czxid").alias("czxid_before")), [KEY, "topic"], "left")
    )
    recreated_topic = F.coalesce(F.col("czxid_now") != F.col("czxid_before"), F.lit(False))
    recreated_offset = F.coalesce(F.col("ctime") != F.col("previous_ctime"), F.lit(False))
    detail = F.concat(
        say("offset %s < %s in previous snapshot%s", "offset", "previous_offset", "previous_snapshot"),
        F.when(recreated_topic, say("; explained: the topic was deleted and recreated (czxid %s → %s)",
                                    zk_id("czxid_before"), zk_id("czxid_now")))
        .when(recreated_offset, say("; explained: the offset znode was deleted and created again (ctime %s → %s)",
                                    instant("previous_ctime"), instant("ctime")))
        .otherwise(F.lit("")),
    )
    return to_output(
        rows, "offset_regressed", topic="topic", partition="partition", group_id="group_id", path="path",
        detail=detail, explained=recreated_topic | recreated_offset,
    )
