"""From raw check rows to the contract's findings: severity, suppressions and history.

A finding's identity is (check_id, topic, partition, group_id, broker_id, path), compared null-safely.
Its status is ``new`` (not seen in the previous run), ``ongoing``, or ``explained``: a row the check
itself explains as harmless (e.g. the offsets of a recreated topic going back), reported with severity
``info`` and never flagged for the gate. ``first_seen`` carries over from the previous run.

A suppressed finding is left out of the findings but kept, with its ``first_seen``, in the run's
suppressed history, so that lifting the suppression does not make an old problem look new. A previous
finding that the checks no longer report is resolved; a previously suppressed one that went away is not
counted, since it was never reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from itertools import chain

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.schemas import FINDINGS
from kafka_zk_audit.contract.settings import AuditConfig, Suppression, glob_to_regex

IDENTITY = ("check_id", "topic", "partition", "group_id", "broker_id", "path")
REPORTED_STATUSES = ("new", "ongoing", "explained")
SUPPRESSED = "suppressed"
EXPLAINED_SEVERITY = "info"
STATS = ("new", "resolved", "ongoing", "explained", "suppressed")


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


@dataclass(frozen=True)
class FinalizedFindings:
    """One run's findings (status new / ongoing / explained), its suppressed history and the counts.

    Both frames are persisted (they are few and read again for writing, alerts and the gate):
    ``unpersist()`` them when done.
    """

    findings: DataFrame
    suppressed: DataFrame
    stats: dict[str, int]

    def unpersist(self) -> None:
        self.findings.unpersist()
        self.suppressed.unpersist()


def _previous_history(raw: DataFrame, previous_findings: DataFrame | None) -> DataFrame:
    """One row per previous identity: its first_seen and whether it was reported (not suppressed)."""
    if previous_findings is None:  # the first run: nothing was seen before
        previous = raw.where(F.lit(False)).select(
            *IDENTITY, F.lit(None).cast("string").alias("first_seen"), F.lit(None).cast("string").alias("status")
        )
    else:
        previous = previous_findings.select(*IDENTITY, "first_seen", "status")
    previous = previous.groupBy(*IDENTITY).agg(
        F.min("first_seen").alias("first_seen"),
        F.max(F.coalesce(F.col("status"), F.lit("new")) != SUPPRESSED).alias("reported"),
    )
    return previous.select(*[F.col(c).alias(f"previous_{c}") for c in previous.columns]).withColumn(
        "seen_before", F.lit(True)
    )


def finalize_findings(
    raw: DataFrame,
    snapshot_id: str,
    previous_findings: DataFrame | None,
    config: AuditConfig,
) -> FinalizedFindings:
    """Findings in the FINDINGS shape, the suppressed history, and {new, resolved, ongoing, explained,
    suppressed} counts.

    ``previous_findings`` is the previous run's findings and suppressed history together (FINDINGS
    shape). The checks run once: their rows are cached while the counts are taken.
    """
    # One row per identity: two check rows with the same subject merge their evidence; the identity is
    # explained only when every row of it is.
    explained_row = F.coalesce(F.col("explained"), F.lit(False)) if "explained" in raw.columns else F.lit(False)
    current = (
        raw.withColumn("explained", explained_row)
        .groupBy(*IDENTITY)
        .agg(
            F.concat_ws("; ", F.array_sort(F.collect_set("detail"))).alias("detail"),
            F.min("explained").alias("explained"),
        )
        .withColumn("suppressed", suppressed_column(config))
    )
    previous = _previous_history(raw, previous_findings)
    both = current.withColumn("seen_now", F.lit(True)).join(
        previous, _identity_join(current, previous, "previous_"), "full"
    )
    seen_now = F.coalesce(F.col("seen_now"), F.lit(False))
    seen_before = F.coalesce(F.col("seen_before"), F.lit(False))
    outcome = (
        F.when(seen_now & F.coalesce(F.col("suppressed"), F.lit(False)), F.lit(SUPPRESSED))
        .when(seen_now & F.col("explained"), F.lit("explained"))
        .when(seen_now & seen_before, F.lit("ongoing"))
        .when(seen_now, F.lit("new"))
        .when(F.coalesce(F.col("previous_reported"), F.lit(False)), F.lit("resolved"))
        .otherwise(F.lit("gone"))  # suppressed before, not seen now: never reported, not counted
    )
    annotated = both.withColumn("outcome", outcome).persist(StorageLevel.MEMORY_AND_DISK)
    counts = {row["outcome"]: int(row["rows"]) for row in annotated.groupBy("outcome").agg(
        F.count(F.lit(1)).alias("rows")).collect()}
    stats = {key: counts.get(key, 0) for key in STATS}

    def shaped(rows: DataFrame) -> DataFrame:
        severity = F.when(F.col("outcome") == "explained", F.lit(EXPLAINED_SEVERITY)).otherwise(
            severity_column(config)
        )
        return (
            rows.select(
                F.lit(snapshot_id).alias("snapshot_id"),
                *IDENTITY,
                "detail",
                F.coalesce(F.col("previous_first_seen"), F.lit(snapshot_id)).alias("first_seen"),
                F.col("outcome").alias("status"),
                "outcome",
            )
            .withColumn("severity", severity)
            .select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in FINDINGS.fields])
            .persist(StorageLevel.MEMORY_AND_DISK)
        )

    findings = shaped(annotated.where(F.col("outcome").isin(*REPORTED_STATUSES)))
    suppressed = shaped(annotated.where(F.col("outcome") == SUPPRESSED))
    findings.count()  # materialize both so the annotated rows can be released
    suppressed.count()
    annotated.unpersist()
    return FinalizedFindings(findings, suppressed, stats)
