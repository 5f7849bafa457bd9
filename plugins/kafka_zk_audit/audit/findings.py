"""From raw check rows to the contract's findings: severity, suppressions and history.

A finding's identity is (check_id, topic, partition, group_id, broker_id, path), compared null-safely.
Its status is ``new`` (not seen in the previous run), ``ongoing``, or ``explained``: a row the check
itself explains as harmless (e.g. the offsets of a recreated topic going back), reported with severity
``info`` and never flagged for the gate. ``first_seen`` carries over from the previous run.

A suppressed finding is left out of the findings but kept, with its ``first_seen``, in the run's
suppressed history, so that lifting the suppression does not make an old problem look new. A previous
finding that the checks no longer report is resolved; a previously suppressed one that went away is not
counted, since it was never reported.

Keyed: one call finalizes every snapshot of a batch (``audit.batch``). Each snapshot's previous run is its
baseline: in the batch (a reaudit's chain), or stored (``previous_findings``, keyed by the snapshot it is
the baseline of). ``first_seen`` is the first snapshot of the unbroken run of snapshots of the chain in which
the identity was found (suppressed or not), or the stored baseline's ``first_seen`` when that run reaches
back to it: what finalizing one snapshot after the other would give.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_zk_audit.audit.batch import Batch
from kafka_zk_audit.audit.keyed_io import arrow_frame, rows_frame
from kafka_zk_audit.contract.catalogue import FINDING_IDENTITY
from kafka_zk_audit.contract.schemas import FINDINGS, KEY

IDENTITY = FINDING_IDENTITY
REPORTED_STATUSES = ("new", "ongoing", "explained")
SUPPRESSED = "suppressed"
EXPLAINED_SEVERITY = "info"
STATS = ("new", "resolved", "ongoing", "explained", "suppressed")


def _same(left: str, right: str, columns: tuple[str, ...]) -> Column:
    """The frames aliased ``left`` and ``right`` agree on the key and, null-safely, on the columns."""
    condition = F.col(f"{left}.{KEY}") == F.col(f"{right}.{KEY}")
    return reduce(lambda a, b: a & b, (F.col(f"{left}.{c}").eqNullSafe(F.col(f"{right}.{c}")) for c in columns),
                  condition)


def current_identities(raw: DataFrame, batch: Batch) -> DataFrame:
    """One row per (snapshot, identity) of the keyed CHECK_OUTPUT rows ``raw``: merged evidence, explained only when
    every row is, suppressed when a suppression of the snapshot's settings matches."""
    explained_row = F.coalesce(F.col("explained"), F.lit(False))
    return raw.withColumns({"explained": explained_row, "suppressed": batch.suppressed_column()}).groupBy(
        KEY, *IDENTITY).agg(
        F.concat_ws("; ", F.array_sort(F.collect_set("detail"))).alias("detail"),
        F.min("explained").alias("explained"),
        F.max("suppressed").alias("suppressed"),
    )


def _stored_history(previous_findings: DataFrame | None, like: DataFrame) -> DataFrame:
    """The stored baselines' findings and suppressed history, keyed by the snapshot they are the baseline of:
    one row per (snapshot, identity) with its first_seen and whether it was reported (not suppressed)."""
    if previous_findings is None:
        previous = like.where(F.lit(False)).select(
            KEY, *IDENTITY, F.lit(None).cast("string").alias("first_seen"), F.lit(None).cast("string").alias("status"))
    else:
        previous = previous_findings.select(KEY, *IDENTITY, "first_seen", "status")
    return previous.groupBy(KEY, *IDENTITY).agg(
        F.min("first_seen").alias("stored_first_seen"),
        F.max(F.coalesce(F.col("status"), F.lit("new")) != SUPPRESSED).alias("reported"),
    )


def _first_seen(current: DataFrame, batch: Batch, stored: DataFrame) -> DataFrame:
    """(snapshot, identity, first_seen): the start of the identity's unbroken run along the snapshot's chain, or
    the stored baseline's first_seen when the run starts at the chain's first snapshot and the baseline had it."""
    placed = current.select(KEY, *IDENTITY, batch.chain_column().alias("chain"),
                            batch.position_column().alias("position"))
    along = Window.partitionBy("chain", *IDENTITY).orderBy("position")
    run_start = F.coalesce(F.lag("position").over(along) != F.col("position") - 1, F.lit(True))
    runs = placed.withColumn("run", F.sum(run_start.cast("int")).over(
        along.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    in_run = Window.partitionBy("chain", *IDENTITY, "run").orderBy("position")
    started = runs.withColumn("run_start", F.first(KEY).over(in_run.rowsBetween(Window.unboundedPreceding,
                                                                                    Window.currentRow)))
    carried = stored.select(F.col(KEY).alias("_s_run_start"), *[F.col(c).alias(f"_s_{c}") for c in IDENTITY],
                            "stored_first_seen")
    condition = reduce(lambda a, b: a & b, (F.col(c).eqNullSafe(F.col(f"_s_{c}")) for c in IDENTITY),
                       F.col("run_start") == F.col("_s_run_start"))
    joined = started.join(carried, condition, "left")
    return joined.select(KEY, *IDENTITY, F.coalesce(F.col("stored_first_seen"), F.col("run_start")).alias("first_seen"))


def _previous(current: DataFrame, batch: Batch, stored: DataFrame) -> DataFrame:
    """Per (snapshot, identity) of its previous run: whether it was reported, and ``seen_before`` (true). From the
    baseline in the batch (its current rows re-keyed to the snapshots it is the baseline of) or the stored one."""
    # one select: its expressions read the input's key, so the exploded followers may take the key's name
    rekeyed = current.select(F.explode(batch.followers_column()).alias(KEY), *IDENTITY,
                             (~F.col("suppressed")).alias("reported"))
    both = rekeyed.unionByName(stored.select(KEY, *IDENTITY, "reported"))
    return both.groupBy(KEY, *IDENTITY).agg(F.max("reported").alias("reported"), F.lit(True).alias("seen_before"))


@dataclass(frozen=True)
class FinalizedFindings:
    """A batch's findings (status new / ongoing / explained), its suppressed history and, per snapshot, the counts.

    The rows are collected once (they are few): ``findings_rows`` and ``suppressed_rows`` are Arrow tables of the
    FINDINGS shape, and ``findings`` / ``suppressed`` the same rows as small DataFrames with a short plan, for the
    audit tables and the tests.
    """

    findings: DataFrame
    suppressed: DataFrame
    findings_rows: Any
    suppressed_rows: Any
    stats: dict[str, dict[str, int]]


def finalize_findings(raw: DataFrame, batch: Batch, previous_findings: DataFrame | None) -> FinalizedFindings:
    """Findings in the FINDINGS shape, the suppressed history, and per snapshot id the {new, resolved, ongoing,
    explained, suppressed} counts, from two Spark jobs: the checks' rows, checkpointed, then every outcome.

    ``raw`` is the keyed check rows of the batch; ``previous_findings`` the stored baselines' findings and
    suppressed history (FINDINGS shape), keyed by the snapshot they are the baseline of.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    spark = raw.sparkSession
    # the checks run here, once: what follows plans on their rows, not on the checks' whole plan; in one partition
    # that the planner knows is one (the rows are collected below): no shuffle for its joins with the history
    current = current_identities(raw, batch).localCheckpoint(eager=True).coalesce(1)
    stored = _stored_history(previous_findings, current)
    first_seen = _first_seen(current, batch, stored)
    previous = _previous(current, batch, stored)
    now = current.alias("c").join(first_seen.alias("f"), _same("c", "f", IDENTITY), "left").select(
        "c.*", F.col("f.first_seen").alias("first_seen"), F.lit(True).alias("seen_now"))
    both = now.alias("n").join(previous.alias("p"), _same("n", "p", IDENTITY), "full").select(
        F.coalesce(F.col(f"n.{KEY}"), F.col(f"p.{KEY}")).alias(KEY),
        *[F.coalesce(F.col(f"n.{c}"), F.col(f"p.{c}")).alias(c) for c in IDENTITY],
        "n.detail", "n.explained", "n.suppressed", "n.first_seen", "n.seen_now", "p.reported", "p.seen_before",
    )
    seen_now = F.coalesce(F.col("seen_now"), F.lit(False))
    seen_before = F.coalesce(F.col("seen_before"), F.lit(False))
    outcome = (
        F.when(seen_now & F.coalesce(F.col("suppressed"), F.lit(False)), F.lit(SUPPRESSED))
        .when(seen_now & F.col("explained"), F.lit("explained"))
        .when(seen_now & seen_before, F.lit("ongoing"))
        .when(seen_now, F.lit("new"))
        .when(F.coalesce(F.col("reported"), F.lit(False)), F.lit("resolved"))
        .otherwise(F.lit("gone"))  # suppressed before, not seen now: never reported, not counted
    )
    severity = F.when(F.col("status") == "explained", F.lit(EXPLAINED_SEVERITY)).otherwise(batch.severity_column())
    computed = {"severity": severity, "cluster": batch.cluster_column()}  # severity reads the status
    shaped = both.withColumn("status", outcome).select(
        *[computed.get(f.name, F.col(f.name)).cast(f.dataType).alias(f.name) for f in FINDINGS.fields])
    rows = shaped.toArrow()  # every identity of every snapshot with its outcome
    stats: dict[str, dict[str, int]] = {sid: dict.fromkeys(STATS, 0) for sid in batch.ids}
    for row in rows.group_by([KEY, "status"]).aggregate([([], "count_all")]).to_pylist():
        if row["status"] in STATS and row[KEY] in stats:
            stats[row[KEY]][row["status"]] = int(row["count_all"])
    schema = rows.schema
    findings_rows = rows.filter(pc.is_in(rows["status"], pa.array(REPORTED_STATUSES))).cast(schema)
    suppressed_rows = rows.filter(pc.equal(rows["status"], SUPPRESSED)).cast(schema)
    return FinalizedFindings(_frame(spark, findings_rows), _frame(spark, suppressed_rows), findings_rows,
                             suppressed_rows, stats)


def _frame(spark: Any, rows: Any) -> DataFrame:
    """Arrow rows of the FINDINGS shape as a DataFrame with exactly the FINDINGS schema."""
    if rows.num_rows == 0:
        return rows_frame(spark, [], FINDINGS)
    return arrow_frame(spark, rows, FINDINGS)
