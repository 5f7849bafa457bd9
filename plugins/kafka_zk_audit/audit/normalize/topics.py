"""/brokers/topics/<t> and …/partitions/<p>/state into topics, assignments, partition_states, partitions."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.schemas import KEY

from . import json_schemas, kinds
from .common import (
    DECIMAL_INT,
    Parse,
    accepted,
    document_reasons,
    field_of,
    fields_of,
    json_reason,
    name_part,
    origin,
    own,
    scope,
    text_reason,
    to_int,
)

TOPIC_VERSIONS = (1, 2, 3)
STATE_VERSIONS = (1,)


def _topic_version_reason(version_text: Column) -> Column:
    """Kafka ignores a topic's version; a known one may be a number or a string ("1")."""
    version = F.trim(version_text).try_cast("int")
    unknown = version_text.isNotNull() & (version.isNull() | ~version.isin(*TOPIC_VERSIONS))
    return F.when(unknown, F.concat(F.lit("unknown version "), version_text))


def _parse_topics() -> Parse:
    partitions = field_of("partitions")
    not_int = F.filter(
        F.map_keys(partitions), lambda key: ~key.rlike(DECIMAL_INT) | key.try_cast("int").isNull()
    )
    without_replicas = F.filter(
        F.map_keys(partitions), lambda key: F.try_element_at(partitions, key).isNull()
    )
    checks = [
        text_reason(),
        json_reason(json_schemas.TOPIC),
        _topic_version_reason(field_of("version")),
        F.when(
            F.size(not_int) > 0,
            F.concat(
                F.lit("partition key "), F.try_element_at(not_int, F.lit(1)), F.lit(" is not an integer")
            ),
        ),
        F.when(
            F.size(without_replicas) > 0,
            F.concat(
                F.lit("partition "),
                F.try_element_at(without_replicas, F.lit(1)),
                F.lit(" has no replica list"),
            ),
        ),
    ]
    values = [
        own("topic").alias("topic"),
        F.trim(field_of("version")).try_cast("int").alias("version"),
        field_of("topic_id").alias("topic_id"),
        F.size(partitions).alias("partition_count"),
        F.col("czxid"),
        partitions.alias("partitions"),
        field_of("adding_replicas").alias("adding"),
        field_of("removing_replicas").alias("removing"),
    ]
    return Parse((kinds.TOPIC,), "topics", checks, values, json=json_schemas.TOPIC,
                 derived={"topic": name_part(kinds.TOPIC_PATH)})


def _parse_states() -> Parse:
    checks = [
        F.when(own("partition").isNull(), F.lit("partition is not an integer")),
        *document_reasons(json_schemas.PARTITION_STATE, STATE_VERSIONS, version_required=False),
    ]
    values = [
        own("topic").alias("topic"),
        own("partition").alias("partition"),
        *fields_of("version", "leader", "leader_epoch", "isr", "controller_epoch"),
        F.coalesce(field_of("leader_recovery_state"), F.lit(0)).alias("leader_recovery_state"),
        F.col("version").alias("state_version"),
    ]
    derived = {"topic": name_part(kinds.PARTITION_STATE_PATH, 1),
               "partition": to_int(name_part(kinds.PARTITION_STATE_PATH, 2))}
    return Parse((kinds.PARTITION_STATE,), "partition_states", checks, values, json=json_schemas.PARTITION_STATE,
                 derived=derived)


def _assignments_table(topics: DataFrame) -> DataFrame:
    exploded = topics.select(
        "topic", F.explode("partitions").alias("partition_key", "replicas"), "adding", "removing", *origin()
    )
    return exploded.select(
        "topic",
        F.col("partition_key").try_cast("int").alias("partition"),
        "replicas",
        F.try_element_at("adding", F.col("partition_key")).alias("adding_replicas"),
        F.try_element_at("removing", F.col("partition_key")).alias("removing_replicas"),
        *origin(),
    )


STATE_COLUMNS = ("leader", "isr", "leader_epoch", "controller_epoch", "leader_recovery_state", "state_version")
ORIGIN_COLUMNS = ("path", "mzxid", "ctime")


def _origin_as(prefix: str) -> list[Column]:
    """The row's origin columns renamed ``<prefix>_path``, ``<prefix>_mzxid``, ``<prefix>_ctime``."""
    return [F.col(name).alias(f"{prefix}_{name}") for name in ORIGIN_COLUMNS]


def _partitions_table(assignments: DataFrame, states: DataFrame) -> DataFrame:
    """Assignments FULL OUTER JOIN states on (snapshot, topic, partition), the key columns from whichever side
    exists; path/mzxid/ctime from the state, else from the topic."""
    assigned = assignments.select(KEY, "topic", "partition", "replicas", *_origin_as("topic"))
    stated = states.select(KEY, "topic", "partition", *STATE_COLUMNS, *_origin_as("state"))
    joined = assigned.join(stated, on=[KEY, "topic", "partition"], how="full")
    has_state = F.col("state_path").isNotNull()
    return joined.select(
        KEY,
        "topic",
        "partition",
        "replicas",
        *STATE_COLUMNS,
        F.col("topic_path").isNotNull().alias("assigned"),
        has_state.alias("has_state"),
        *[F.when(has_state, F.col(f"state_{name}")).otherwise(F.col(f"topic_{name}")).alias(name)
          for name in ORIGIN_COLUMNS],
    )


def parses() -> list[Parse]:
    """Topic znodes (``topics`` struct) and partition states (``partition_states`` struct)."""
    with scope(kinds.TOPIC):
        topics = _parse_topics()
    with scope(kinds.PARTITION_STATE):
        states = _parse_states()
    return [topics, states]


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """topics, assignments (one row per assigned partition), partition_states and partitions."""
    topics = accepted(parsed, "topics")
    assignments = _assignments_table(topics)
    partition_states = accepted(parsed, "partition_states")
    return {
        "topics": topics.drop("partitions", "adding", "removing"),
        "assignments": assignments,
        "partition_states": partition_states,
        "partitions": _partitions_table(assignments, partition_states),
    }
