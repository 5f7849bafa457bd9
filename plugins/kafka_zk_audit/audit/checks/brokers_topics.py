"""Broker and topic checks: registrations, endpoints, topic configs and leftovers of deleted topics."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import say, to_output
from kafka_zk_audit.audit.unions import union_all
from kafka_zk_audit.contract.schemas import KEY


def broker_registration_not_ephemeral(brokers: DataFrame) -> DataFrame:
    """A /brokers/ids/<id> registration is ephemeral (ephemeralOwner != 0)."""
    persistent = ~F.coalesce(F.col("is_ephemeral"), F.col("session") != 0, F.lit(True))
    rows = brokers.where(persistent)
    return to_output(
        rows, "broker_registration_not_ephemeral", broker_id="broker_id", path="path",
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


def broker_endpoint_conflict(brokers: DataFrame) -> DataFrame:
    """No two brokers advertise the same host:port endpoint (one finding per broker involved)."""
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
    rows = clashes.groupBy(KEY, "broker_id", "path").agg(F.array_sort(F.collect_list("clash")).alias("clashes"))
    return to_output(
        rows, "broker_endpoint_conflict", broker_id="broker_id", path="path",
        detail=say("endpoint %s", F.array_join("clashes", "; endpoint ")),
    )


def topic_config_missing(topics: DataFrame, configs: DataFrame) -> DataFrame:
    """Every topic has a /config/topics/<t> znode."""
    topic_configs = configs.where(F.col("entity_type") == "topics").select(KEY, F.col("entity_name").alias("topic"))
    rows = topics.join(topic_configs, [KEY, "topic"], "left_anti")
    return to_output(
        rows, "topic_config_missing", topic="topic", path="path",
        detail=say("topic %s has no /config/topics/%s znode", "topic", "topic"),
    )


def deleted_topic_remnants(
    topics: DataFrame,
    configs: DataFrame,
    partition_states: DataFrame,
    consumer_owners: DataFrame,
    consumer_offsets: DataFrame,
) -> DataFrame:
    """No config, partition state, owner or offset znode names a topic without /brokers/topics/<t>."""
    sources = {
        "config znode": configs.where(F.col("entity_type") == "topics").select(
            KEY, F.col("entity_name").alias("topic"), "path"
        ),
        "partition state znode(s)": partition_states.select(KEY, "topic", "path"),
        "consumer owner znode(s)": consumer_owners.select(KEY, "topic", "path"),
        "consumer offset znode(s)": consumer_offsets.select(KEY, "topic", "path"),
    }
    leftovers = union_all([rows.withColumn("kind", F.lit(kind)) for kind, rows in sources.items()])
    rows = (
        leftovers.where(F.col("topic").isNotNull())
        .join(topics.select(KEY, "topic"), [KEY, "topic"], "left_anti")
        .groupBy(KEY, "topic", "kind")
        .agg(F.count(F.lit(1)).alias("znodes"), F.min("path").alias("path"))
    )
    return to_output(
        rows, "deleted_topic_remnants", topic="topic", path="path",
        detail=say("%s %s left for topic %s, which has no /brokers/topics/%s (first: %s)",
                   "znodes", "kind", "topic", "topic", "path"),
    )
