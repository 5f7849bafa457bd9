"""The migration diff in Spark: both sides' entries of any number of cluster pairs compared in one plan.

The entries are the ones ``snapshot.migration.mapping`` lays out (columns ``ENTRY_COLUMNS``, plus ``pair``: the
cluster the two sides belong to), one frame per side, each entry once per (pair, kind, key) (the snapshot task keeps
the first of a KRaft entity written twice). The rules are those of ``snapshot.migration.compare`` (the single-pair
reference the CLI uses). ``diff`` runs them in two jobs whatever the number of pairs:

1. ``sorted_out``: one plan over every pair, a full outer join keyed by (pair, kind, key) of the columns that decide
   (value, extra, flag: the evidence stays in the files), giving per pair and kind the entities equal on both sides,
   and the keys of the others (on one side only, a value or extra that differs, a KRaft entry flagged ``mangled`` or
   ``encrypted``, the producer id block): few, unless the pairs diverge;
2. ``candidates``: only when there are such keys, both sides' whole entries of those keys (a join with the keys, no
   shuffle of the entries), each a candidate finding with its check id and both sides' evidence (the producer id
   block's KAFKA-15552 rule decides whether it is one).

``settle`` then applies, to the few collected candidates, the two rules that span entries: a topic on one side only
hides its partitions and configs, and a mangled entity is one finding whatever its keys (the first by key). No
Python per entry and nothing per pair: the cost grows with the entries, not with the pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from kafka_zk_audit.audit.keyed_io import rows_frame
from kafka_zk_audit.contract.migration_checks import CHECK_OF_KIND, ENTRY_FIELDS, INT_ENTRY_FIELDS

ENTRY_COLUMNS = ("pair", *ENTRY_FIELDS)
KEY = ("pair", "kind", "key")
OUTPUT = ("pair", "check_id", "topic", "partition", "group_id", "broker_id", "path", "detail", "explained")
CANDIDATE_OUTPUT = (*OUTPUT, "kind", "key", "entity", "one_sided")
ENTRIES_DDL = ", ".join(f"{name} {'int' if name in INT_ENTRY_FIELDS else 'string'}" for name in ENTRY_FIELDS)


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


def sorted_out(zk: DataFrame, kraft: DataFrame) -> DataFrame:
    """Job 1 (see the module docstring): rows ``(pair, kind, key, equal)``, a count of equal entities (``key``
    null) or the key of one that is not (``equal`` null)."""
    left = zk.select(*KEY, F.col("value").alias("zk_value"), F.col("extra").alias("zk_extra"),
                     F.lit(True).alias("zk_here"))
    right = kraft.select(*KEY, F.col("value").alias("kr_value"), F.col("extra").alias("kr_extra"),
                         F.col("flag").alias("kr_flag"), F.lit(True).alias("kr_here"))
    joined = left.join(right, list(KEY), "full_outer")
    equal = (F.col("zk_here").isNotNull() & F.col("kr_here").isNotNull() & F.col("kr_flag").isNull()
             & (F.col("kind") != "producer_ids") & ~_differs("value") & ~_differs("extra"))
    counts = joined.where(equal).groupBy("pair", "kind").agg(F.count(F.lit(1)).alias("equal"))
    others = joined.where(~equal).select(*KEY, F.lit(None).cast("long").alias("equal"))
    return counts.select("pair", "kind", F.lit(None).cast("string").alias("key"), "equal").unionByName(others)


def candidates(zk: DataFrame, kraft: DataFrame, keys: DataFrame) -> DataFrame:
    """Job 2: the candidate findings of ``keys`` (``CANDIDATE_OUTPUT``), from both sides' whole entries."""
    left, right = (side.join(keys, list(KEY), "left_semi") for side in (zk, kraft))
    return _candidates(_side(left, "zk").join(_side(right, "kr"), list(KEY), "full_outer"))


def diff(zk: DataFrame, kraft: DataFrame) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """Every pair's findings (CHECK_OUTPUT fields) and equal counts by kind (see the module docstring)."""
    equal: dict[str, dict[str, int]] = {}
    keys = []
    for row in sorted_out(zk, kraft).collect():
        if row["key"] is None:
            equal.setdefault(row["pair"], {})[row["kind"]] = int(row["equal"])
        else:
            keys.append((row["pair"], row["kind"], row["key"]))
    if not keys:
        return {}, equal
    keys_frame = rows_frame(zk.sparkSession, keys, StructType([StructField(name, StringType())
                                                               for name in ("pair", "kind", "key")]))
    return settle(candidates(zk, kraft, keys_frame).collect()), equal


def settle(rows: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """The collected candidates as each pair's findings (CHECK_OUTPUT fields, in key order): partitions and configs
    of a topic on one side only dropped, one finding per mangled entity."""
    findings: dict[str, list[dict[str, Any]]] = {}
    rows = sorted(rows, key=lambda r: (r["pair"], r["kind"], r["key"]))
    apart = {(row["pair"], row["key"]) for row in rows if row["kind"] == "topic" and row["one_sided"]}
    seen: set[tuple[str, str, str, str]] = set()
    for row in rows:
        if row["kind"] in ("partition", "config") and (row["pair"], row["topic"]) in apart:
            continue
        entity = (row["pair"], row["check_id"], row["kind"], row["entity"])
        if entity in seen:
            continue
        seen.add(entity)
        findings.setdefault(row["pair"], []).append({name: row[name] for name in OUTPUT if name != "pair"})
    return findings


def compare_rows(zk: DataFrame, kraft: DataFrame) -> list[dict[str, Any]]:
    """Every pair's findings (OUTPUT fields), the plan collected in one job and settled."""
    findings, _ = diff(zk, kraft)
    return [{"pair": pair, **finding} for pair, rows in findings.items() for finding in rows]


def _candidates(joined: DataFrame) -> DataFrame:
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
    # one quota_name finding per mangled entity, whatever its keys (settle); every other finding is one entry
    entity = F.when(mangled, F.get_json_object("key", "$[0]")).otherwise(F.col("key"))
    producer_ids = F.col("kind") == "producer_ids"
    one_sided = F.col("zk_evidence").isNull() | F.col("kr_evidence").isNull()
    found = joined.withColumn("what", what).where(F.col("what").isNotNull())
    return found.select(
        "pair", "kind", "key", check_id.alias("check_id"), entity.alias("entity"), one_sided.alias("one_sided"),
        F.when(producer_ids, F.lit(None)).otherwise(_both("topic")).alias("topic"),
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
