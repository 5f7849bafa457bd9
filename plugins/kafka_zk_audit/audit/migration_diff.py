"""The migration diff in Spark: both sides' entries of any number of cluster pairs compared in one plan.

The entries are the ones ``snapshot.migration.mapping`` lays out (columns ``ENTRY_COLUMNS``, plus ``pair``: the
cluster the two sides belong to), one frame per side. The rules are those of ``snapshot.migration.compare`` (the
single-pair reference the CLI uses), as one full outer join keyed by (pair, kind, key): an entry on one side only is
missing or extra, on both its value and extra are compared when both have them; a topic missing on one side hides its
partitions and configs; KRaft entries flagged ``mangled`` give one ``migration_diverged_quota_name`` per entity,
``encrypted`` one ``migration_diverged_password_encoded``; the producer id block has its KAFKA-15552 rule. The rows
are findings (contract.schemas CHECK_OUTPUT) with ``pair``. ``diff_frames`` adds, in the same plan, how many
entities of each kind each pair has equal on both sides (rows with ``kind`` and ``equal``): the audit collects both
in one job (``audit.paired``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.migration_checks import CHECK_OF_KIND, ENTRY_FIELDS, INT_ENTRY_FIELDS

ENTRY_COLUMNS = ("pair", *ENTRY_FIELDS)
KEY = ("pair", "kind", "key")
OUTPUT = ("pair", "check_id", "topic", "partition", "group_id", "broker_id", "path", "detail", "explained")
DIFF_OUTPUT = (*OUTPUT, "kind", "equal")
ENTRIES_DDL = ", ".join(["side string"] + [f"{name} {'int' if name in INT_ENTRY_FIELDS else 'string'}"
                                           for name in ENTRY_FIELDS])


def _side(frame: DataFrame, prefix: str) -> DataFrame:
    return frame.select(*KEY, *(F.col(c).alias(f"{prefix}_{c}") for c in ENTRY_COLUMNS if c not in KEY))


def _both(name: str) -> Column:
    return F.coalesce(F.col(f"zk_{name}"), F.col(f"kr_{name}"))


def _evidence(what: Column) -> Column:
    return F.concat_ws(" · ", what, F.concat(F.lit("zk: "), F.coalesce(F.col("zk_evidence"), F.lit("no znode"))),
                       F.concat(F.lit("kraft: "), F.coalesce(F.col("kr_evidence"),
                                                              F.lit("no record at or before the compared offset"))))


def _differs(name: str) -> Column:
    left, right = F.col(f"zk_{name}"), F.col(f"kr_{name}")
    return left.isNotNull() & right.isNotNull() & (left != right)


def _joined(zk: DataFrame, kraft: DataFrame) -> DataFrame:
    kraft = kraft.dropDuplicates(list(KEY))  # an ACL twice (a re-run load) is one
    return _side(zk, "zk").join(_side(kraft, "kr"), list(KEY), "full_outer")


def compare_frames(zk: DataFrame, kraft: DataFrame) -> DataFrame:
    """The findings of every pair (see the module docstring)."""
    return _findings(_joined(zk, kraft))


def _equal_counts(joined: DataFrame) -> DataFrame:
    """Per pair and kind, the entities on both sides that nothing tells apart (the producer id block, a mangled or
    encrypted KRaft form are never counted)."""
    equal = (F.col("zk_evidence").isNotNull() & F.col("kr_evidence").isNotNull() & F.col("kr_flag").isNull()
             & (F.col("kind") != "producer_ids") & ~_differs("value") & ~_differs("extra"))
    return joined.where(equal).groupBy("pair", "kind").agg(F.count(F.lit(1)).alias("equal"))


def diff_frames(zk: DataFrame, kraft: DataFrame) -> DataFrame:
    """The findings of every pair and its equal counts per kind, as one frame of ``DIFF_OUTPUT``: a finding row has
    ``kind`` and ``equal`` null, a count row only ``pair``, ``kind`` and ``equal``."""
    joined = _joined(zk, kraft)
    findings = _findings(joined).select(*OUTPUT, F.lit(None).cast("string").alias("kind"),
                                        F.lit(None).cast("long").alias("equal"))
    nulls = [F.lit(None).cast(kind).alias(name) for name, kind in (
        ("check_id", "string"), ("topic", "string"), ("partition", "int"), ("group_id", "string"),
        ("broker_id", "int"), ("path", "string"), ("detail", "string"), ("explained", "boolean"))]
    counts = _equal_counts(joined).select("pair", *nulls, "kind", "equal")
    return findings.unionByName(counts)


def sides(entries: DataFrame, key: str) -> tuple[DataFrame, DataFrame]:
    """The ZooKeeper and KRaft entries of a keyed entries table (``ENTRIES_DDL`` and the key ``key``, the pair)."""
    frame = entries.withColumnRenamed(key, "pair")
    return tuple(frame.where(F.col("side") == side).select(*ENTRY_COLUMNS)  # type: ignore[return-value]
                 for side in ("zk", "kraft"))


def _findings(joined: DataFrame) -> DataFrame:
    on_one_side = F.col("zk_evidence").isNull() | F.col("kr_evidence").isNull()
    apart = (joined.where((F.col("kind") == "topic") & on_one_side)
             .select(F.col("pair").alias("apart_pair"), F.col("key").alias("apart_topic")).distinct())
    joined = joined.join(apart, (F.col("pair") == F.col("apart_pair")) & (_both("topic") == F.col("apart_topic"))
                         & F.col("kind").isin("partition", "config"), "left_anti")
    kinds = F.create_map(*[F.lit(x) for pair in CHECK_OF_KIND.items() for x in pair])
    mangled, encrypted = F.col("kr_flag") == "mangled", F.col("kr_flag") == "encrypted"
    check_id = (F.when(mangled, F.lit("migration_diverged_quota_name"))
                .when(encrypted, F.lit("migration_diverged_password_encoded"))
                .otherwise(kinds[F.col("kind")]))
    what = (F.when(mangled, F.lit("KRaft holds the entity under a name no client has (KAFKA-16222/16411)"))
            .when(encrypted, F.lit("KRaft holds ZooKeeper's encrypted text (KAFKA-14801)"))
            .when(F.col("kind") == "producer_ids", _producer_ids_what())
            .when(F.col("zk_evidence").isNull(), F.concat(F.col("kind"), F.lit(" in KRaft only")))
            .when(F.col("kr_evidence").isNull(), F.concat(F.col("kind"), F.lit(" missing in KRaft")))
            .when(_differs("value") | _differs("extra"), F.concat(F.col("kind"), F.lit(" differs"))))
    # one quota_name finding per mangled entity, whatever its keys; every other finding is one entry already
    entity = F.when(mangled, F.get_json_object("key", "$[0]")).otherwise(F.col("key"))
    producer_ids = F.col("kind") == "producer_ids"
    findings = (joined.withColumn("what", what).where(F.col("what").isNotNull())
                .withColumn("check_id", check_id).withColumn("entity", entity)
                .dropDuplicates(["pair", "check_id", "kind", "entity"]))
    return findings.select(
        "pair", "check_id", F.when(producer_ids, F.lit(None)).otherwise(_both("topic")).alias("topic"),
        F.when(mangled | encrypted | producer_ids, F.lit(None)).otherwise(_both("partition")).cast("int")
        .alias("partition"), F.lit(None).cast("string").alias("group_id"),
        F.when(mangled | producer_ids, F.lit(None)).otherwise(_both("broker_id")).cast("int").alias("broker_id"),
        F.when(mangled | encrypted, F.col("kr_path")).when(producer_ids, F.col("zk_path")).otherwise(_both("path"))
        .alias("path"), _evidence(F.col("what")).alias("detail"), F.lit(False).alias("explained"))


def _producer_ids_what() -> Column:
    """KAFKA-15552: KRaft's next id past ZooKeeper's block_end; after dual writes (broker −1) equal to block_start.
    Null when equal, or when ZooKeeper has no block."""
    broker = F.get_json_object("zk_value", "$.broker").cast("int")
    start = F.get_json_object("zk_value", "$.start").cast("long")
    end = F.get_json_object("zk_value", "$.end").cast("long")
    next_id = F.get_json_object("kr_value", "$.next").cast("long")
    return (F.when(F.col("zk_value").isNull(), F.lit(None))
            .when(F.col("kr_value").isNull(), F.lit("ZooKeeper's producer id block was not migrated"))
            .when((broker == -1) & (next_id != start),
                  F.concat(F.lit("next producer id "), next_id, F.lit(" ≠ dual-written block_start "), start))
            .when((broker != -1) & (next_id <= end),
                  F.concat(F.lit("next producer id "), next_id, F.lit(" is not past ZooKeeper's block_end "), end,
                           F.lit(" (KAFKA-15552: ids handed out twice)"))))
