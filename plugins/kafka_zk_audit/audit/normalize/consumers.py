"""Old (ZooKeeper) consumer groups: registrations, partition owners and committed offsets.

Besides Kafka's own formats this reads pykafka's: consumer ids ``<host>:<uuid4>`` whose data is the
plain topic name, and owner nodes named ``<leaderBrokerId>-<partition>``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    Parse,
    accepted,
    field_of,
    json_reason,
    lenient_long,
    name_part,
    only_when,
    own,
    scope,
    text_reason,
    to_int,
    to_long,
    version_reason,
)

REGISTRATION_VERSIONS = (1,)
PATTERNS = ("static", "white_list", "black_list")
PYKAFKA_CONSUMER_ID = r"^.+:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\z"
TOPIC_NAME = r"^[a-zA-Z0-9._-]+\z"
PARTITION_NODE = r"^[0-9]+$"
BROKER_PARTITION_NODE = r"^([0-9]+)-([0-9]+)$"
THREAD_ID = r"(?s)^(.*)-([0-9]+)\z"


def _registrations() -> Parse:
    """/consumers/<g>/ids/<id>: Kafka JSON v1 (format "kafka") or pykafka's topic name ("pykafka")."""
    pykafka = own("consumer_id").rlike(PYKAFKA_CONSUMER_ID) & F.col("text").rlike(TOPIC_NAME)
    pattern = field_of("pattern")
    kafka_checks = [
        json_reason(json_schemas.CONSUMER_REGISTRATION),
        version_reason(REGISTRATION_VERSIONS, required=False),
        F.when(~pattern.isin(*PATTERNS), F.concat(F.lit("unknown pattern "), pattern)),
    ]
    checks = [text_reason(), *only_when(~pykafka, kafka_checks)]
    values = [
        own("group_id").alias("group_id"),
        own("consumer_id").alias("consumer_id"),
        F.when(pykafka, F.lit("pykafka")).otherwise(F.lit("kafka")).alias("format"),
        F.when(~pykafka, field_of("version")).alias("version"),
        F.when(~pykafka, pattern).alias("pattern"),
        F.when(pykafka, F.create_map(F.col("text"), F.lit(1)))
        .otherwise(field_of("subscription"))
        .alias("subscription"),
        F.when(~pykafka, lenient_long(field_of("timestamp"))).alias("timestamp"),
        F.col("ephemeral_owner").alias("session"),
    ]
    derived = {"group_id": name_part(kinds.CONSUMER_REGISTRATION_PATH, 1),
               "consumer_id": name_part(kinds.CONSUMER_REGISTRATION_PATH, 2)}
    return Parse((kinds.CONSUMER_REGISTRATION,), "consumer_registrations", checks, values,
                 json=json_schemas.CONSUMER_REGISTRATION, retry_backslashes=True, derived=derived)


def _owners() -> Parse:
    """/consumers/<g>/owners/<t>/<p> or /<broker>-<p>; the data is the owning thread (or consumer) id."""
    node = name_part(kinds.CONSUMER_OWNER_PATH, 3)
    broker_partition = node.rlike(BROKER_PARTITION_NODE)
    derived = {
        "group_id": name_part(kinds.CONSUMER_OWNER_PATH, 1),
        "topic": name_part(kinds.CONSUMER_OWNER_PATH, 2),
        "node_form": F.when(node.rlike(PARTITION_NODE), F.lit("partition"))
        .when(broker_partition, F.lit("broker_partition")),
        "partition": to_int(F.when(broker_partition, F.regexp_extract(node, BROKER_PARTITION_NODE, 2)).otherwise(node)),
    }
    checks = [
        F.when(
            own("node_form").isNull() | own("partition").isNull(),
            F.lit("owner node name is neither <partition> nor <broker>-<partition>"),
        ),
        text_reason(),
    ]
    owner = F.col("text")
    thread_index = F.regexp_extract(owner, THREAD_ID, 2).try_cast("int")
    has_thread = owner.rlike(THREAD_ID) & ~owner.rlike(PYKAFKA_CONSUMER_ID) & thread_index.isNotNull()
    values = [
        *(own(name).alias(name) for name in ("group_id", "topic", "partition", "node_form")),
        owner.alias("owner"),
        F.when(has_thread, F.regexp_extract(owner, THREAD_ID, 1)).otherwise(owner).alias("owner_consumer_id"),
        F.when(has_thread, thread_index).alias("owner_thread_index"),
        F.col("ephemeral_owner").alias("session"),
    ]
    return Parse((kinds.CONSUMER_OWNER,), "consumer_owners", checks, values, derived=derived)


def _offsets() -> Parse:
    """/consumers/<g>/offsets/<t>/<p>: offset only for an optional-minus decimal long, raw text always."""
    derived = {
        "group_id": name_part(kinds.CONSUMER_OFFSET_PATH, 1),
        "topic": name_part(kinds.CONSUMER_OFFSET_PATH, 2),
        "partition": to_int(name_part(kinds.CONSUMER_OFFSET_PATH, 3)),
    }
    checks = [
        F.when(own("partition").isNull(), F.lit("partition is not an integer")),
        text_reason(data_required=False),
    ]
    values = [
        *(own(name).alias(name) for name in ("group_id", "topic", "partition")),
        to_long(F.col("text")).alias("offset"),
        F.col("text").alias("raw"),
        F.col("mtime"),
    ]
    return Parse((kinds.CONSUMER_OFFSET,), "consumer_offsets", checks, values, derived=derived)


def parses() -> list[Parse]:
    """Registrations, owners and offsets, each with a struct named after its table."""
    built = []
    for kind, part in ((kinds.CONSUMER_REGISTRATION, _registrations), (kinds.CONSUMER_OWNER, _owners),
                       (kinds.CONSUMER_OFFSET, _offsets)):
        with scope(kind):
            built.append(part())
    return built


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """consumer_registrations, consumer_owners and consumer_offsets."""
    return {
        "consumer_registrations": accepted(parsed, "consumer_registrations"),
        "consumer_owners": accepted(parsed, "consumer_owners"),
        "consumer_offsets": accepted(parsed, "consumer_offsets"),
    }
