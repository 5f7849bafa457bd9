"""From raw check rows to the contract's findings: severity, suppressions and history (new / ongoing).

A finding's identity is (check_id, topic, partition, group_id, broker_id, path), compared null-safely.
``first_seen`` carries over from the previous run's findings; a previous identity that the checks no
longer report is resolved. A suppressed finding is dropped (and counted); it is not "resolved", since
the checks still see it.
"""

from __future__ import annotations

from functools import reduce
from itertools import chain

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.schemas import FINDINGS
from kafka_zk_audit.contract.settings import AuditConfig, Suppression, glob_to_regex

IDENTITY = ("check_id", "topic", "partition", "group_id", "broker_id", "path")


def severity_column(config: AuditConfig) -> Column:
    """Each row's severity: the configured override, else the catalogue default."""
    mapping = F.create_map(*chain.from_iterable((F.lit(c), F.lit(config.severity_of(c))) for c in CHECK_IDS))
    return F.element_at(mapping, F.col("check_id"))


def _matches(suppression: Suppression) -> Column:
    condition = F.col("check_id") == suppression.check_id
    if suppression.topic is not None:
        condition &= F.coalesce(F.col("topic").rlike(glob_to_regex(suppression.topic)), F.lit(False))
    if suppression.group_id is not None:
        condition &= F.coalesce(F.col("group_id").rlike(glob_to_regex(suppression.group_id)), F.lit(False))
    if suppression.broker_id is not None:
        condition &= F.coalesce(F.col("broker_id") == suppression.broker_id, F.lit(False))
    return condition


def suppressed_column(config: AuditConfig) -> Column:
    """True for rows that a configured suppression matches."""
    if not config.suppressions:
        return F.lit(False)
    return reduce(lambda a, b: a | b, (_matches(s) for s in config.suppressions))


def _identity_join(left: DataFrame, right: DataFrame, prefix: str) -> Column:
    return reduce(lambda a, b: a & b, (left[c].eqNullSafe(right[f"{prefix}{c}"]) for c in IDENTITY))


def finalize_findings(
    raw: DataFrame,
    snapshot_id: str,
    previous_findings: DataFrame | None,
    config: AuditConfig,
) -> tuple[DataFrame, dict[str, int]]:
    """Findings in the FINDINGS shape, plus {"new", "resolved", "ongoing", "suppressed"} counts.

    The checks run once: their rows are cached while the counts are taken, and the returned findings
    stay persisted (they are few and are read again for writing, alerts and the gate); ``unpersist()``
    them when done.
    """
    # One row per identity: two checks rows with the same subject merge their evidence.
    current = (
        raw.groupBy(*IDENTITY)
        .agg(F.concat_ws("; ", F.array_sort(F.collect_set("detail"))).alias("detail"))
        .withColumn("suppressed", suppressed_column(config))
    )
    if previous_findings is None:  # the first run: nothing was seen before
        previous = raw.where(F.lit(False)).select(*IDENTITY, F.lit(None).cast("string").alias("first_seen"))
    else:
        previous = previous_findings.select(*IDENTITY, "first_seen")
    previous = previous.groupBy(*IDENTITY).agg(F.min("first_seen").alias("first_seen"))
    previous = previous.select(*[F.col(c).alias(f"previous_{c}") for c in previous.columns]).withColumn(
        "seen_before", F.lit(True)
    )

    both = current.withColumn("seen_now", F.lit(True)).join(
        previous, _identity_join(current, previous, "previous_"), "full"
    )
    seen_now = F.coalesce(F.col("seen_now"), F.lit(False))
    seen_before = F.coalesce(F.col("seen_before"), F.lit(False))
    suppressed = seen_now & F.coalesce(F.col("suppressed"), F.lit(False))
    outcome = (
        F.when(suppressed, F.lit("suppressed"))
        .when(seen_now & seen_before, F.lit("ongoing"))
        .when(seen_now, F.lit("new"))
        .otherwise(F.lit("resolved"))
    )
    annotated = both.withColumn("outcome", outcome).persist(StorageLevel.MEMORY_AND_DISK)
    counts = {row["outcome"]: int(row["rows"]) for row in annotated.groupBy("outcome").agg(
        F.count(F.lit(1)).alias("rows")).collect()}
    stats = {key: counts.get(key, 0) for key in ("new", "resolved", "ongoing", "suppressed")}

    findings = (
        annotated.where(F.col("outcome").isin("new", "ongoing"))
        .select(
            F.lit(snapshot_id).alias("snapshot_id"),
            *IDENTITY,
            "detail",
            F.coalesce(F.col("previous_first_seen"), F.lit(snapshot_id)).alias("first_seen"),
            F.col("outcome").alias("status"),
        )
        .withColumn("severity", severity_column(config))
        .select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in FINDINGS.fields])
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    findings.count()  # materialize the findings so the annotated rows can be released
    annotated.unpersist()
    return findings, stats
