"""Admin markers (delete_topics, reassign_partitions, preferred_replica_election), producer-id block."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

from . import json_schemas, kinds
from .common import (
    REASON,
    JsonSpec,
    accepted,
    document_reasons,
    field_of,
    json_reason,
    name_part,
    origin,
    parse_result,
    text_reason,
    to_long,
    with_json,
    with_reason,
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


def _delete_markers(znodes: DataFrame) -> DataFrame:
    """/admin/delete_topics/<t>: one entry, the topic from the name; the data (empty or null) is not read."""
    rows = znodes.filter(F.col("kind") == kinds.DELETE_TOPIC).withColumn(REASON, F.lit(None).cast("string"))
    entry = F.struct(
        name_part(kinds.DELETE_TOPIC_PATH).alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.lit(None).cast(ArrayType(IntegerType())).alias("replicas"),
    )
    return parse_result(
        rows, MARKERS, F.lit("delete_topic").alias("marker"), F.array(entry).cast(ENTRIES).alias("entries")
    )


def _partition_list(znodes: DataFrame, kind: str, marker: str, json_spec: JsonSpec) -> DataFrame:
    """Reassignment or preferred election: the entries of "partitions" ("version" is ignored)."""
    rows = with_json(znodes.filter(F.col("kind") == kind), json_spec)
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
    return parse_result(
        with_reason(rows, checks),
        MARKERS,
        F.lit(marker).alias("marker"),
        as_entries.cast(ENTRIES).alias("entries"),
    )


def _producer_id_block(znodes: DataFrame) -> DataFrame:
    """{"version":1,"broker":…,"block_start":"<long>","block_end":"<long>"}; empty data means no block yet."""
    rows = znodes.filter(F.col("kind") == kinds.PRODUCER_ID_BLOCK)
    rows = with_json(
        rows.filter(F.col("bad_utf8") | (F.coalesce(F.col("text"), F.lit("")) != "")),
        json_schemas.PRODUCER_ID_BLOCK,
    )
    block_start, block_end = to_long(field_of("block_start")), to_long(field_of("block_end"))
    checks = [
        *document_reasons(json_schemas.PRODUCER_ID_BLOCK, PRODUCER_ID_BLOCK_VERSIONS, version_required=False),
        F.when(
            field_of("block_start").isNotNull() & block_start.isNull(), F.lit("block_start is not an integer")
        ),
        F.when(field_of("block_end").isNotNull() & block_end.isNull(), F.lit("block_end is not an integer")),
    ]
    rows = with_reason(rows, checks)
    return parse_result(
        rows,
        "producer_id_block",
        field_of("version").alias("version"),
        field_of("broker").alias("broker_id"),
        block_start.alias("block_start"),
        block_end.alias("block_end"),
    )


def parse(znodes: DataFrame) -> list[DataFrame]:
    """Delete markers, reassignment and preferred election (``admin_markers`` struct), producer-id block."""
    return [
        _delete_markers(znodes),
        _partition_list(znodes, kinds.REASSIGNMENT, "reassignment", json_schemas.REASSIGNMENT),
        _partition_list(
            znodes, kinds.PREFERRED_ELECTION, "preferred_election", json_schemas.PREFERRED_ELECTION
        ),
        _producer_id_block(znodes),
    ]


def tables(parsed: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """admin_markers (one row per marker entry) and producer_id_block."""
    markers = accepted(parsed, MARKERS)
    exploded = markers.select("marker", F.explode("entries").alias("entry"), *origin())
    return {
        "admin_markers": exploded.select(
            F.col("marker").alias("kind"), "entry.topic", "entry.partition", "entry.replicas", *origin()
        ),
        "producer_id_block": accepted(parsed, "producer_id_block"),
    }
