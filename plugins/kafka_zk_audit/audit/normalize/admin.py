"""Admin markers (delete_topics, reassign_partitions, preferred_replica_election), producer-id block."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

from . import json_schemas, kinds
from .common import (
    JsonSpec,
    Parse,
    accepted,
    document_reasons,
    field_of,
    json_reason,
    name_part,
    origin,
    scope,
    text_reason,
    to_long,
)

PRODUCER_ID_BLOCK_VERSIONS = (1,)
# One marker entry: topic, partition and (reassignments only) replicas.
ENTRIES = ArrayType(
    StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("replicas", ArrayType(IntegerType())),
        ]
    )
)
MARKERS = "admin_markers"


def _delete_markers() -> Parse:
    """/admin/delete_topics/<t>: one entry, the topic from the name; the data (empty or null) is not read."""
    entry = F.struct(
        name_part(kinds.DELETE_TOPIC_PATH).alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.lit(None).cast(ArrayType(IntegerType())).alias("replicas"),
    )
    values = [F.lit("delete_topic").alias("marker"), F.array(entry).cast(ENTRIES).alias("entries")]
    return Parse((kinds.DELETE_TOPIC,), MARKERS, [F.lit(None).cast("string")], values)


def _partition_list(kind: str, marker: str, json_spec: JsonSpec) -> Parse:
    """Reassignment or preferred election: the entries of "partitions" ("version" is ignored)."""
    entries = field_of("partitions")
    checks = [
        text_reason(),
        json_reason(json_spec),
        F.when(
            F.exists(entries, lambda e: e["topic"].isNull() | e["partition"].isNull()),
            F.lit("partition entry without topic or partition"),
        ),
    ]
    with_replicas = kind == kinds.REASSIGNMENT
    if with_replicas:
        no_replicas = F.exists(entries, lambda e: e["replicas"].isNull())
        checks.append(F.when(no_replicas, F.lit("partition entry without replicas")))
    as_entries = F.transform(
        entries,
        lambda e: F.struct(
            e["topic"].alias("topic"),
            e["partition"].alias("partition"),
            (e["replicas"] if with_replicas else F.lit(None).cast(ArrayType(IntegerType()))).alias(
                "replicas"
            ),
        ),
    )
    values = [F.lit(marker).alias("marker"), as_entries.cast(ENTRIES).alias("entries")]
    return Parse((kind,), MARKERS, checks, values, json=json_spec)


def _producer_id_block() -> Parse:
    """{"version":1,"broker":…,"block_start":"<long>","block_end":"<long>"}; empty data means no block yet."""
    block_start, block_end = to_long(field_of("block_start")), to_long(field_of("block_end"))
    checks = [
        *document_reasons(json_schemas.PRODUCER_ID_BLOCK, PRODUCER_ID_BLOCK_VERSIONS, version_required=False),
        F.when(
            field_of("block_start").isNotNull() & block_start.isNull(), F.lit("block_start is not an integer")
        ),
        F.when(field_of("block_end").isNotNull() & block_end.isNull(), F.lit("block_end is not an integer")),
    ]
    values = [
        field_of("version").alias("version"),
        field_of("broker").alias("broker_id"),
        block_start.alias("block_start"),
        block_end.alias("block_end"),
    ]
    has_data = F.col("bad_utf8") | (F.coalesce(F.col("text"), F.lit("")) != "")
    return Parse((kinds.PRODUCER_ID_BLOCK,), "producer_id_block", checks, values,
                 json=json_schemas.PRODUCER_ID_BLOCK, include=has_data)


def parses() -> list[Parse]:
    """Delete markers, reassignment and preferred election (``admin_markers`` struct), producer-id block."""
    built = []
    with scope(kinds.DELETE_TOPIC):
        built.append(_delete_markers())
    with scope(kinds.REASSIGNMENT):
        built.append(_partition_list(kinds.REASSIGNMENT, "reassignment", json_schemas.REASSIGNMENT))
    with scope(kinds.PREFERRED_ELECTION):
        built.append(_partition_list(kinds.PREFERRED_ELECTION, "preferred_election",
                                     json_schemas.PREFERRED_ELECTION))
    with scope(kinds.PRODUCER_ID_BLOCK):
        built.append(_producer_id_block())
    return built


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """admin_markers (one row per marker entry) and producer_id_block."""
    markers = accepted(parsed, MARKERS)
    exploded = markers.select("marker", F.explode("entries").alias("entry"), *origin())
    return {
        "admin_markers": exploded.select(
            F.col("marker").alias("kind"), "entry.topic", "entry.partition", "entry.replicas", *origin()
        ),
        "producer_id_block": accepted(parsed, "producer_id_block"),
    }
