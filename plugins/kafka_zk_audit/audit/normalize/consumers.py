"""Old (ZooKeeper) consumer groups: registrations, partition owners and committed offsets.

Besides Kafka's own formats this reads pykafka's: consumer ids ``<host>:<uuid4>`` whose data is the
plain topic name, and owner nodes named ``<leaderBrokerId>-<partition>``.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    accepted,
    field_of,
    json_reason,
    lenient_long,
    name_part,
    only_when,
    parse_result,
    text_reason,
    to_int,
    to_long,
    version_reason,
    with_json,
    with_reason,
)

REGISTRATION_VERSIONS = (1,)
PATTERNS = ("static", "white_list", "black_list")
PYKAFKA_CONSUMER_ID = r"^.+:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\z"
TOPIC_NAME = r"^[a-zA-Z0-9._-]+\z"
PARTITION_NODE = r"^[0-9]+$"
BROKER_PARTITION_NODE = r"^([0-9]+)-([0-9]+)$"
THREAD_ID = r"(?s)^(.*)-([0-9]+)\z"


def _registrations(znodes: DataFrame) -> DataFrame:
    """/consumers/<g>/ids/<id>: Kafka JSON v1 (format "kafka") or pykafka's topic name ("pykafka")."""
    rows = znodes.filter(F.col("kind") == kinds.CONSUMER_REGISTRATION).select(
        "*",
        name_part(kinds.CONSUMER_REGISTRATION_PATH, 1).alias("group_id"),
        name_part(kinds.CONSUMER_REGISTRATION_PATH, 2).alias("consumer_id"),
    )
    rows = with_json(rows, json_schemas.CONSUMER_REGISTRATION, retry_backslashes=True)
    pykafka = F.col("consumer_id").rlike(PYKAFKA_CONSUMER_ID) & F.col("text").rlike(TOPIC_NAME)
    pattern = field_of("pattern")
    kafka_checks = [
        json_reason(json_schemas.CONSUMER_REGISTRATION),
        version_reason(REGISTRATION_VERSIONS, required=False),
        F.when(~pattern.isin(*PATTERNS), F.concat(F.lit("unknown pattern "), pattern)),
    ]
    rows = with_reason(rows, [text_reason(), *only_when(~pykafka, kafka_checks)])
    return parse_result(
        rows,
        "consumer_registrations",
        "group_id",
        "consumer_id",
        F.when(pykafka, F.lit("pykafka")).otherwise(F.lit("kafka")).alias("format"),
        F.when(~pykafka, field_of("version")).alias("version"),
        F.when(~pykafka, pattern).alias("pattern"),
        F.when(pykafka, F.create_map(F.col("text"), F.lit(1)))
        .otherwise(field_of("subscription"))
        .alias("subscription"),
        F.when(~pykafka, lenient_long(field_of("timestamp"))).alias("timestamp"),
        F.col("ephemeral_owner").alias("session"),
    )


def _owners(znodes: DataFrame) -> DataFrame:
    """/consumers/<g>/owners/<t>/<p> or /<broker>-<p>; the data is the owning thread (or consumer) id."""
    node = name_part(kinds.CONSUMER_OWNER_PATH, 3)
    broker_partition = node.rlike(BROKER_PARTITION_NODE)
    rows = znodes.filter(F.col("kind") == kinds.CONSUMER_OWNER).select(
        "*",
        name_part(kinds.CONSUMER_OWNER_PATH, 1).alias("group_id"),
        name_part(kinds.CONSUMER_OWNER_PATH, 2).alias("topic"),
        F.when(node.rlike(PARTITION_NODE), F.lit("partition"))
        .when(broker_partition, F.lit("broker_partition"))
        .alias("node_form"),
        to_int(
            F.when(broker_partition, F.regexp_extract(node, BROKER_PARTITION_NODE, 2)).otherwise(node)
        ).alias("partition"),
    )
    checks = [
        F.when(
            F.col("node_form").isNull() | F.col("partition").isNull(),
            F.lit("owner node name is neither <partition> nor <broker>-<partition>"),
        ),
        text_reason(),
    ]
    rows = with_reason(rows, checks)
    owner = F.col("text")
    thread_index = F.regexp_extract(owner, THREAD_ID, 2).try_cast("int")
    has_thread = owner.rlike(THREAD_ID) & ~owner.rlike(PYKAFKA_CONSUMER_ID) & thread_index.isNotNull()
    return parse_result(
        rows,
        "consumer_owners",
        "group_id",
        "topic",
        "partition",
        "node_form",
        owner.alias("owner"),
        F.when(has_thread, F.regexp_extract(owner, THREAD_ID, 1)).otherwise(owner).alias("owner_consumer_id"),
        F.when(has_thread, thread_index).alias("owner_thread_index"),
        F.col("ephemeral_owner").alias("session"),
    )


def _offsets(znodes: DataFrame) -> DataFrame:
    """/consumers/<g>/offsets/<t>/<p>: offset only for an optional-minus decimal long, raw text always."""
    rows = znodes.filter(F.col("kind") == kinds.CONSUMER_OFFSET).select(
        "*",
        name_part(kinds.CONSUMER_OFFSET_PATH, 1).alias("group_id"),
        name_part(kinds.CONSUMER_OFFSET_PATH, 2).alias("topic"),
        to_int(name_part(kinds.CONSUMER_OFFSET_PATH, 3)).alias("partition"),
    )
    checks = [
        F.when(F.col("partition").isNull(), F.lit("partition is not an integer")),
        text_reason(data_required=False),
    ]
    rows = with_reason(rows, checks)
    return parse_result(
        rows,
        "consumer_offsets",
        "group_id",
        "topic",
        "partition",
        to_long(F.col("text")).alias("offset"),
        F.col("text").alias("raw"),
        "mtime",
    )


def parse(znodes: DataFrame) -> list[DataFrame]:
    """Registrations, owners and offsets, each with a struct named after its table."""
    return [_registrations(znodes), _owners(znodes), _offsets(znodes)]


def tables(parsed: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """consumer_registrations, consumer_owners and consumer_offsets."""
    return {
        "consumer_registrations": accepted(parsed, "consumer_registrations"),
        "consumer_owners": accepted(parsed, "consumer_owners"),
        "consumer_offsets": accepted(parsed, "consumer_offsets"),
    }
