"""Broker and topic checks: registrations, endpoints, topic configs and leftovers of deleted topics.

Each check is a declaration (``engine.check``): the checks of one frame are evaluated together in one select, with
the facts they name joined once. Whether a topic exists (``existing_topics``) is derived once per audit, for these
checks and the admin markers'.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import check, say
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.audit.unions import union_all
from kafka_zk_audit.contract.schemas import KEY


@fact(on=(KEY, "topic"), defaults={"topic_present": "false"})
def existing_topics(topics: DataFrame) -> DataFrame:
    """(snapshot_id, topic, topic_present): the topics with a /brokers/topics/<t> znode (False for others)."""
    return topics.select(KEY, "topic").distinct().withColumn("topic_present", F.lit(True))


@check("brokers")
def broker_registration_not_ephemeral() -> Finds:
    """A /brokers/ids/<id> registration is ephemeral (ephemeralOwner != 0)."""
    persistent = ~F.coalesce(F.col("is_ephemeral"), F.col("session") != 0, F.lit(True))
    return Finds(
        where=persistent, broker_id="broker_id", path="path",
        detail=F.lit("ephemeralOwner is 0: the registration is persistent and outlives the broker's session"),
    )


def _advertised_endpoints(brokers: DataFrame) -> DataFrame:
    """(snapshot_id, broker_id, path, endpoint 'host:port') for every usable endpoint, legacy host/port included."""
    listed = brokers.select(KEY, "broker_id", "path", F.explode("endpoints").alias("e")).select(
        KEY, "broker_id", "path", F.col("e.host").alias("host"), F.col("e.port").alias("port")
    )
    legacy = brokers.select(KEY, "broker_id", "path", "host", "port")
    return (
        listed.unionByName(legacy)
        .where(F.col("broker_id").isNotNull())
        .where(F.col("host").isNotNull() & (F.col("host") != "") & (F.col("port") > 0))
        .select(KEY, "broker_id", "path", F.concat_ws(":", "host", F.col("port").cast("string")).alias("endpoint"))
        .distinct()
    )


@view
def broker_endpoint_clashes(brokers: DataFrame) -> DataFrame:
    """(snapshot_id, broker_id, path, clashes): per broker advertising an endpoint another broker advertises too,
    one sentence per such endpoint naming the others (sorted)."""
    mine = _advertised_endpoints(brokers)
    others = mine.select(KEY, F.col("broker_id").alias("other_id"), "endpoint")
    clashes = (
        mine.join(others, [KEY, "endpoint"])
        .where(F.col("broker_id") != F.col("other_id"))
        .groupBy(KEY, "broker_id", "path", "endpoint")
        .agg(F.array_sort(F.collect_set("other_id")).alias("others"))
        .select(
            KEY, "broker_id", "path", "endpoint",
            F.format_string("%s is also advertised by broker %s", F.col("endpoint"),
                            F.array_join(F.col("others").cast("array<string>"), ", ")).alias("clash"),
        )
    )
    return clashes.groupBy(KEY, "broker_id", "path").agg(F.array_sort(F.collect_list("clash")).alias("clashes"))


@check(broker_endpoint_clashes)
def broker_endpoint_conflict() -> Finds:
    """No two brokers advertise the same host:port endpoint (one finding per broker involved)."""
    return Finds(where=F.lit(True), broker_id="broker_id", path="path",
                 detail=say("endpoint %s", F.array_join("clashes", "; endpoint ")))


@fact(on=(KEY, "topic"), defaults={"topic_configured": "false"})
def topic_configured(configs: DataFrame) -> DataFrame:
    """(snapshot_id, topic, topic_configured): the topics with a /config/topics/<t> znode (False for others)."""
    return (configs.where(F.col("entity_type") == "topics").select(KEY, F.col("entity_name").alias("topic"))
            .distinct().withColumn("topic_configured", F.lit(True)))


@check("topics", facts=(topic_configured,))
def topic_config_missing() -> Finds:
    """Every topic has a /config/topics/<t> znode."""
    return Finds(where=~F.col("topic_configured"), topic="topic", path="path",
                 detail=say("topic %s has no /config/topics/%s znode", "topic", "topic"))


@view
def topic_leftovers(
    configs: DataFrame,
    partition_states: DataFrame,
    consumer_owners: DataFrame,
    consumer_offsets: DataFrame,
) -> DataFrame:
    """(snapshot_id, topic, kind, znodes, path): per topic and kind, the config, partition state, owner and offset
    znodes that name it (how many, and the first path)."""
    sources = {
        "config znode": configs.where(F.col("entity_type") == "topics").select(
            KEY, F.col("entity_name").alias("topic"), "path"
        ),
        "partition state znode(s)": partition_states.select(KEY, "topic", "path"),
        "consumer owner znode(s)": consumer_owners.select(KEY, "topic", "path"),
        "consumer offset znode(s)": consumer_offsets.select(KEY, "topic", "path"),
    }
    leftovers = union_all([rows.withColumn("kind", F.lit(kind)) for kind, rows in sources.items()])
    return leftovers.groupBy(KEY, "topic", "kind").agg(F.count(F.lit(1)).alias("znodes"), F.min("path").alias("path"))


@check(topic_leftovers, facts=(existing_topics,))
def deleted_topic_remnants() -> Finds:
    """No config, partition state, owner or offset znode names a topic without /brokers/topics/<t>."""
    return Finds(where=F.col("topic").isNotNull() & ~F.col("topic_present"), topic="topic", path="path",
                 detail=say("%s %s left for topic %s, which has no /brokers/topics/%s (first: %s)",
                            "znodes", "kind", "topic", "topic", "path"))
