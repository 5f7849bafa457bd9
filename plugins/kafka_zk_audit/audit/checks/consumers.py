"""Old (ZooKeeper-based) consumer group checks: registrations, owners, the range assignment, offsets.

Each check is a declaration (``engine.check``): the checks of one frame (owner znodes, offset znodes, a view) are
evaluated together in one select, with the facts they name joined once. The subscriptions of the live consumers
(``consumer_subscriptions``), their summary per group and topic (``consumer_group_topics``) and the range
assignment (``range_owner``) are each derived once per audit for every check that reads them.

Every frame is keyed by ``snapshot_id`` (``KEY``): each join, aggregation and window below includes it, so
the checks of several snapshots run in one plan and never mix their groups, topics or threads.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import check, instant, previous_snapshot, say, zk_id
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.contract.schemas import KEY

# Topics Kafka's consumers leave out of wildcard subscriptions (exclude.internal.topics=true).
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
GROUP_PARTITION = ["group_id", "topic", "partition"]
GROUP_TOPIC = [KEY, "group_id", "topic"]  # the unit of a range assignment: one group's threads on one topic


def _owner_consumer() -> Column:
    return F.coalesce(F.col("owner_consumer_id"), F.col("owner"))


def _group_partition_finds(where: Column, detail: Column, path: Column | str = "path",
                           explained: Column | None = None) -> Finds:
    return Finds(where=where, detail=detail, topic="topic", partition="partition", group_id="group_id", path=path,
                 explained=explained)


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


def group_topics(subscribed: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, consumers, group_path, has_pykafka) for every topic a group's live consumers
    subscribe to: how many consumers, the group's znode and whether one of them is a pykafka consumer."""
    return subscribed.groupBy(*GROUP_TOPIC).agg(
        F.countDistinct("consumer_id").alias("consumers"),
        F.min(F.regexp_replace("path", "/ids/[^/]*$", "")).alias("group_path"),
        F.max(F.col("format") == "pykafka").alias("has_pykafka"),
    )


@view
def consumer_subscriptions(consumer_registrations: DataFrame, topics: DataFrame) -> DataFrame:
    """``subscriptions``, derived once per audit."""
    return subscriptions(consumer_registrations, topics)


@view
def consumer_group_topics(consumer_subscriptions: DataFrame) -> DataFrame:
    """``group_topics`` of the live consumers' subscriptions, derived once per audit."""
    return group_topics(consumer_subscriptions)


def _range_assignment(subscribed: DataFrame, subscribed_groups: DataFrame, assignments: DataFrame) -> DataFrame:
    """``range_assignment`` from the subscriptions and their ``group_topics``."""
    range_groups = subscribed_groups.where(~F.coalesce(F.col("has_pykafka"), F.lit(False))).select(*GROUP_TOPIC)
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


def range_assignment(consumer_registrations: DataFrame, assignments: DataFrame, topics: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, partition, expected_owner): the old consumer's range assignment, recomputed.

    Per snapshot, group and topic: partitions sorted numerically, threads "<consumer_id>-<n>" (n < streams) of the
    subscribed consumers sorted as strings; with n = P div T and r = P mod T, thread i owns
    n*i + min(i, r) ... for n + (i < r ? 1 : 0) partitions. Groups where a pykafka consumer subscribes to
    the topic are left out: pykafka balances on its own.
    """
    subscribed = subscriptions(consumer_registrations, topics)
    return _range_assignment(subscribed, group_topics(subscribed), assignments)


@fact(on=(KEY, *GROUP_PARTITION))
def range_owner(consumer_subscriptions: DataFrame, consumer_group_topics: DataFrame,
                assignments: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, partition, expected_owner): ``range_assignment``, derived once per audit
    (one thread per partition of a group's topic)."""
    return _range_assignment(consumer_subscriptions, consumer_group_topics, assignments)


@fact(on=GROUP_TOPIC)
def topic_subscribed(consumer_group_topics: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, subscribed): true for the topics a live consumer of the group subscribes
    to (null for the others)."""
    return consumer_group_topics.select(*GROUP_TOPIC, F.lit(True).alias("subscribed"))


@fact(on=(KEY, "group_id"), defaults={"registered_group": "false",
                                      "group_consumers": "CAST(array() AS array<string>)",
                                      "pykafka_group": "false"})
def consumer_groups(consumer_registrations: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, registered_group, group_consumers, pykafka_group) for every group with a consumer
    registered under /consumers/<g>/ids: its consumer ids, and whether one of them is a pykafka consumer (False
    and empty for other groups)."""
    return consumer_registrations.groupBy(KEY, "group_id").agg(
        F.lit(True).alias("registered_group"),
        F.collect_set("consumer_id").alias("group_consumers"),
        F.coalesce(F.max(F.col("format") == "pykafka"), F.lit(False)).alias("pykafka_group"),
    )


@check("consumer_owners", facts=(consumer_groups,))
def owner_not_registered() -> Finds:
    """Every owner znode names a consumer id registered under /consumers/<g>/ids."""
    registered = F.coalesce(F.array_contains("group_consumers", _owner_consumer()), F.lit(False))
    return _group_partition_finds(
        ~registered,
        say("owner %s names consumer %s, which is not registered under /consumers/%s/ids",
            "owner", _owner_consumer(), "group_id"))


@view
def owner_claims(consumer_owners: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, partition, claims, owners, paths): the owner znodes of each partition of a
    group (their owners and paths sorted)."""
    return consumer_owners.groupBy(KEY, *GROUP_PARTITION).agg(
        F.count(F.lit(1)).alias("claims"),
        F.array_sort(F.collect_list(F.coalesce("owner", F.lit("(empty)")))).alias("owners"),
        F.array_sort(F.collect_list("path")).alias("paths"),
    )


@check(owner_claims)
def partition_multiply_owned() -> Finds:
    """One (group, topic, partition) has at most one owner znode."""
    return _group_partition_finds(
        F.col("claims") > 1,
        say("claimed by %s owner znodes: %s (%s)", "claims", F.array_join("owners", ", "),
            F.array_join("paths", ", ")),
        path=F.try_element_at("paths", F.lit(1)))


@view
def subscribed_partitions(consumer_group_topics: DataFrame, assignments: DataFrame) -> DataFrame:
    """Every assigned partition of every topic a group's live consumers subscribe to, with ``group_topics``'s
    columns."""
    return consumer_group_topics.join(assignments.select(KEY, "topic", "partition"), [KEY, "topic"])


@fact(on=(KEY, *GROUP_PARTITION), defaults={"owned": "false"})
def owned_partitions(consumer_owners: DataFrame) -> DataFrame:
    """(snapshot_id, group_id, topic, partition, owned): the partitions of a group with an owner znode."""
    return consumer_owners.select(KEY, *GROUP_PARTITION).distinct().withColumn("owned", F.lit(True))


@check(subscribed_partitions, facts=(owned_partitions,))
def partition_unowned() -> Finds:
    """Every partition of a topic that a group's live consumers subscribe to has an owner."""
    return _group_partition_finds(
        ~F.col("owned"),
        say("partition %s of %s has no owner although %s live consumer(s) of the group subscribe to it",
            "partition", "topic", "consumers"),
        path=F.format_string("%s/owners/%s/%s", "group_path", "topic", F.col("partition").cast("string")))


@check("consumer_owners", facts=(consumer_groups, range_owner, topic_subscribed))
def owner_assignment_mismatch() -> Finds:
    """Each owner znode holds the thread the range assignment gives its partition (pykafka groups aside)."""
    partition_form = F.coalesce(F.col("node_form"), F.lit("partition")) == "partition"
    range_group = F.col("registered_group") & ~F.col("pykafka_group")
    owned_by = F.coalesce(F.col("owner"), F.lit("(empty)"))
    detail = (
        F.when(F.col("expected_owner").isNotNull(),
               say("owned by %s, range assignment gives %s", owned_by, "expected_owner"))
        .when(F.col("subscribed").isNull(),
              say("owned by %s, but no live consumer of the group subscribes to %s", owned_by, "topic"))
        .otherwise(say("owned by %s, but partition %s is not in the assignment of %s", owned_by, "partition", "topic"))
    )
    return _group_partition_finds(
        partition_form & range_group & ~F.col("owner").eqNullSafe(F.col("expected_owner")), detail)


@check("consumer_offsets")
def offset_invalid() -> Finds:
    """Every offset znode holds a non-negative decimal long."""
    raw = F.when(F.col("raw").isNull(), F.lit("no data")).otherwise(
        F.concat(F.lit('"'), F.substring("raw", 1, 60), F.lit('"'))
    )
    detail = F.when(F.col("offset") < 0, say("offset %s is negative", "offset")).otherwise(
        say("offset data %s is not a decimal long", raw)
    )
    return _group_partition_finds(F.col("offset").isNull() | (F.col("offset") < 0), detail)


@fact(on=(KEY, "topic"))
def offset_topics(topics: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition_count, topic_exists): every topic (one row per topic znode)."""
    return topics.select(KEY, "topic", "partition_count", F.lit(True).alias("topic_exists"))


@fact(on=(KEY, "topic", "partition"), defaults={"partition_assigned": "false"})
def offset_partitions(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, partition_assigned): every assigned partition."""
    return assignments.select(KEY, "topic", "partition").distinct().withColumn("partition_assigned", F.lit(True))


@check("consumer_offsets", facts=(offset_topics, offset_partitions))
def offset_for_unknown_partition() -> Finds:
    """Every offset names an assigned partition of an existing topic.

    Kafka never deletes the old consumers' offsets of a deleted topic (nor does a recreated topic with
    fewer partitions): they stay under /consumers/<g>/offsets/<t>/<p> until a tool deletes them. Offsets
    of Kafka's internal topics are left out: Kafka creates those topics itself when first needed and
    refuses to delete them.
    """
    where = (F.col("partition").isNotNull() & ~F.col("topic").isin(*INTERNAL_TOPICS)
             & ~F.col("partition_assigned"))
    detail = F.when(
        F.col("topic_exists"),
        say("offset for partition %s of %s, which has no such partition (partition_count %s)",
            "partition", "topic", "partition_count"),
    ).otherwise(say("offset for partition %s of %s, which does not exist (no /brokers/topics/%s)",
                    "partition", "topic", "topic"))
    return _group_partition_finds(where, detail)


@view
def offset_history(consumer_offsets: DataFrame, topics: DataFrame, previous_consumer_offsets: DataFrame | None,
                   previous_topics: DataFrame | None) -> DataFrame | None:
    """Each offset beside its offset in the baseline (previous_offset, previous_ctime, previous_snapshot) and its
    topic's czxid now and then (czxid_now, czxid_before); None without a baseline.

    The previous tables are keyed by the snapshot they are the baseline of: a snapshot without previous rows
    has no baseline."""
    if previous_consumer_offsets is None or previous_topics is None:
        return None
    before = previous_consumer_offsets.select(
        KEY, *GROUP_PARTITION, F.col("offset").alias("previous_offset"), F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_consumer_offsets).alias("previous_snapshot"),
    )
    return (
        consumer_offsets.select(KEY, *GROUP_PARTITION, "offset", "path", "ctime")
        .join(before, [KEY, *GROUP_PARTITION])
        .join(topics.select(KEY, "topic", F.col("czxid").alias("czxid_now")), [KEY, "topic"], "left")
        .join(previous_topics.select(KEY, "topic", F.col("czxid").alias("czxid_before")), [KEY, "topic"], "left")
    )


@check(offset_history)
def offset_regressed() -> Finds:
    """A committed offset never decreases between snapshots.

    Two causes are explained rather than reported as problems (info, status explained): the topic was
    deleted and created again (another czxid: its offsets start over), or the offset znode itself was
    deleted and created again (another ctime: the group's offsets were deleted, e.g. by
    ``kafka-consumer-groups --delete``, and committed anew).

    The previous tables are keyed by the snapshot they are the baseline of: a snapshot without previous
    rows reports nothing, as without a baseline.
    """
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
    return _group_partition_finds(F.col("offset") < F.col("previous_offset"), detail,
                                  explained=recreated_topic | recreated_offset)
