"""The Spark job: snapshot → normalized tables → checks → findings (with history) → audit tables.

One application does it all, because Spark's fixed costs dominate at Kafka-tree sizes. It reads
``<warehouse>/snapshots/snapshot_id=<id>/`` (refusing a snapshot without its manifest), writes
every normalized table, the audit tables (``audit_<entity>``) and the findings, the findings last:
their ``_SUCCESS`` marks the snapshot as audited, i.e. a baseline for the next run's history
checks. It also writes ``runs/<id>/audit.json`` (counts, baseline, new/resolved) for the summary.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.audit_tables import build_audit_tables, conform_for_gate
from kafka_zk_audit.audit.checks import run_checks
from kafka_zk_audit.audit.drift import DRIFT_TABLE, drift_row
from kafka_zk_audit.audit.findings import finalize_findings
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.audit.readiness import audit_readiness, write_audit_migration
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.schemas import FINDINGS, SNAPSHOT, TABLES
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, read_manifest

log = logging.getLogger(__name__)

# Tables the history checks compare with the previous audited snapshot.
HISTORY_TABLES = ("partitions", "controller_epoch", "consumer_offsets", "topics", "migration", "controller")
# The suppressed findings of a run (FINDINGS shape), kept only as history: the next run carries their
# first_seen over, so lifting a suppression does not make an old finding new.
SUPPRESSED_HISTORY = "suppressed_findings"


def audit_table_name(entity: str) -> str:
    return f"audit_{entity}"


class PhaseClock:
    """Wall seconds and Spark jobs per phase of one audit, logged at INFO as one ``profile {json}`` line
    (``bench/profile_audit.py`` reads it)."""

    def __init__(self, spark: SparkSession) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self.phases: dict[str, dict[str, float]] = {}

    def _jobs(self) -> int:
        return len(self._tracker.getJobIdsForGroup())

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        jobs, started = self._jobs(), time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = {"seconds": round(time.monotonic() - started, 3), "jobs": self._jobs() - jobs}

    def log(self, snapshot_id: str) -> None:
        log.info("profile %s", json.dumps({"snapshot_id": snapshot_id, "phases": self.phases}))


SMALL_SNAPSHOT_ZNODES = 200_000


def size_spark_to(spark: SparkSession, znodes: int) -> bool:
    """Spark's fixed costs dominate small trees: skip code generation and adaptive re-planning
    there, and size shuffles to the data (about one partition per 100,000 znodes).
    Returns whether the snapshot counts as small."""
    small = znodes < SMALL_SNAPSHOT_ZNODES
    spark.conf.set("spark.sql.codegen.wholeStage", str(not small).lower())
    spark.conf.set("spark.sql.adaptive.enabled", str(not small).lower())
    spark.conf.set("spark.sql.shuffle.partitions", str(max(2, min(200, znodes // 100_000))))
    return small


def read_table(spark: SparkSession, warehouse: Warehouse, table: str, snapshot_id: str) -> DataFrame:
    """A normalized table of a snapshot, as written (with its contract schema)."""
    return spark.read.schema(TABLES[table]).parquet(warehouse.table_dir(table, snapshot_id))


def load_baseline(spark: SparkSession, warehouse: Warehouse, baseline_id: str | None) -> tuple[dict, DataFrame | None]:
    """A baseline's history tables and its findings with its suppressed history ({} and None without one)."""
    if baseline_id is None:
        return {}, None
    tables = {name: read_table(spark, warehouse, name, baseline_id) for name in HISTORY_TABLES}
    findings = spark.read.schema(FINDINGS).parquet(warehouse.findings_dir(baseline_id))
    suppressed_dir = warehouse.table_dir(SUPPRESSED_HISTORY, baseline_id)
    if warehouse.exists(f"{suppressed_dir}/_SUCCESS"):
        findings = findings.unionByName(spark.read.schema(FINDINGS).parquet(suppressed_dir))
    return tables, findings


def load_previous(
    spark: SparkSession, warehouse: Warehouse, snapshot_id: str
) -> tuple[str | None, dict, DataFrame | None]:
    """The previous audited snapshot of the same ensemble and chroot (see ``Warehouse.previous_audited``):
    its id and :func:`load_baseline` of it (or None, {}, None)."""
    previous_id = warehouse.previous_audited(snapshot_id)
    return (previous_id, *load_baseline(spark, warehouse, previous_id))


def parquet_rows(warehouse: Warehouse, directory: str) -> int:
    """The rows of a Parquet table the job wrote, from its files' footers (no Spark job)."""
    import pyarrow.parquet as pq

    fs = warehouse.fs
    total = 0
    for path in fs.ls(warehouse.fs_path(directory), detail=False):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(".parquet") and not name.startswith(("_", ".")):
            with fs.open(path, "rb") as handle:
                total += pq.ParquetFile(handle).metadata.num_rows
    return total


def run_audit(spark: SparkSession, warehouse: Warehouse, snapshot_id: str, config_path: str | None,
              reread_tables: bool = True, target_version: str | None = None) -> dict[str, Any]:
    """Audit one snapshot; returns the figures written to ``runs/<id>/audit.json``.

    ``reread_tables=False`` runs the checks on the normalizer's frames instead of the written tables
    (the benchmark's baseline; same results, slower planning). Every phase's wall time and Spark jobs
    are logged (``PhaseClock``). ``target_version`` overrides the settings' ``migration.target_version``
    for the readiness report (``runs/<id>/readiness.json``, written unless ``migration.readiness`` is off).
    """
    started = time.monotonic()
    clock = PhaseClock(spark)
    with clock.phase("plan"):
        manifest = read_manifest(warehouse, snapshot_id)
        cfg = load_config(config_path).for_cluster(manifest.get("cluster") or "")
        now_ms = int(datetime.fromisoformat(manifest["started_at"]).timestamp() * 1000)
        small = size_spark_to(spark, int(manifest["znodes"]))
        snapshot = spark.read.schema(SNAPSHOT).parquet(warehouse.snapshot_dir(snapshot_id))
        tables = normalize(snapshot)
        previous_id, previous_tables, previous_findings = load_previous(spark, warehouse, snapshot_id)
    log.info("auditing snapshot %s (%s znodes); baseline: %s", snapshot_id, manifest["znodes"],
             previous_id or "none (first snapshot)")

    with clock.phase("read+normalize+write"):
        for name, df in tables.items():
            (df.coalesce(1) if small else df).write.mode("overwrite").parquet(warehouse.table_dir(name, snapshot_id))
    with clock.phase("reread+count"):
        # The checks read the written tables back: their plans start at a few Parquet files instead of
        # the whole normalizer lineage, which makes planning and running them several times faster.
        if reread_tables:
            tables.release()
            tables = {name: read_table(spark, warehouse, name, snapshot_id) for name in TABLES}
        row_counts = {name: parquet_rows(warehouse, warehouse.table_dir(name, snapshot_id)) for name in TABLES}
    log.info("normalized tables written: %s", ", ".join(f"{k}={v}" for k, v in row_counts.items()))
    with clock.phase("drift"):
        drift_row(spark, tables, manifest, previous_id, row_counts).coalesce(1).write.mode("overwrite").parquet(
            warehouse.table_dir(DRIFT_TABLE, snapshot_id)
        )

    with clock.phase("checks+findings"):
        # The checks run once, when the findings' history join first needs their rows.
        raw = run_checks(tables, previous_tables or None, cfg, now_ms)
        finalized = finalize_findings(raw, snapshot_id, previous_findings, cfg)
        findings, stats = finalized.findings, finalized.stats

    readiness = None
    if cfg.migration.readiness:
        with clock.phase("readiness"):
            try:
                readiness = audit_readiness(spark, warehouse, snapshot_id, manifest, tables, snapshot, cfg,
                                            target_version)
            except Exception:  # the health audit goes on: readiness is a report beside it
                log.exception("the ZK -> KRaft readiness report of %s could not be computed (the audit goes on "
                              "without it; please report this with the log)", snapshot_id)
                write_audit_migration(spark, warehouse, snapshot_id, [], gate=False)
    else:
        write_audit_migration(spark, warehouse, snapshot_id, [], gate=False)

    with clock.phase("audit tables"):
        for entity, df in build_audit_tables(tables, findings).items():
            (conform_for_gate(df).coalesce(1) if small else conform_for_gate(df)).write.mode("overwrite").parquet(
                warehouse.table_dir(audit_table_name(entity), snapshot_id)
            )

    with clock.phase("findings write"):
        finalized.suppressed.coalesce(1).write.mode("overwrite").parquet(
            warehouse.table_dir(SUPPRESSED_HISTORY, snapshot_id)
        )
        findings.coalesce(1).write.mode("overwrite").parquet(warehouse.findings_dir(snapshot_id))
        counts: dict[str, int] = {}
        by_severity: dict[str, int] = {}
        for row in findings.groupBy("check_id", "severity").agg(F.count("*").alias("n")).collect():
            counts[row["check_id"]] = counts.get(row["check_id"], 0) + row["n"]
            by_severity[row["severity"]] = by_severity.get(row["severity"], 0) + row["n"]
    result = {
        "snapshot_id": snapshot_id,
        "baseline_snapshot_id": previous_id,
        "checks": {check_id: int(counts.get(check_id, 0)) for check_id in CHECK_IDS},
        "severities": by_severity,
        "findings": int(sum(counts.values())),
        "new_findings": int(stats["new"]),
        "resolved_findings": int(stats["resolved"]),
        "suppressed_findings": int(stats.get("suppressed", 0)),
        "explained_findings": int(stats.get("explained", 0)),
        "table_rows": row_counts,
        "readiness": None if readiness is None else {
            "target_version": readiness["target_version"], "verdict": readiness["verdict"],
            "phase": readiness["phase"]["phase"], "counts": readiness["counts"]},
        "seconds": round(time.monotonic() - started, 1),
    }
    warehouse.write_json(f"{warehouse.run_dir(snapshot_id)}/audit.json", result)
    finalized.unpersist()
    if not reread_tables:
        tables.release()
    clock.log(snapshot_id)
    log.info("findings: %d (%d new, %d resolved) in %.1fs; per check: %s", result["findings"],
             result["new_findings"], result["resolved_findings"], result["seconds"],
             {k: v for k, v in result["checks"].items() if v})
    return result


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry: ``--warehouse DIR --snapshot-ids ID[,ID...] [--config FILE] [--target-version V]``.

    Every snapshot is audited in the one Spark session, each with its cluster's settings; one that fails
    is logged and the others go on. Exit 1 when any failed (the gate then validates the others), 2 when
    there was nothing to audit.
    """
    import argparse

    from kafka_zk_audit.audit.session import get_spark

    parser = argparse.ArgumentParser(description="kafka-zk-audit: audit snapshots of the warehouse")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--snapshot-ids", "--snapshot-id", dest="snapshot_ids", action="append", required=True,
                        help="snapshot ids, comma-separated or repeated")
    parser.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    parser.add_argument("--target-version", default=None,
                        help='Kafka version to plan the ZK -> KRaft migration with, e.g. "3.9" or "3.5.1" '
                             "(default: the settings' migration.target_version)")
    parser.add_argument("--no-reread", action="store_true",
                        help="run the checks on the normalizer's frames, not the written tables (benchmark baseline)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.target_version:
        from kafka_zk_audit.contract.readiness import parse_target

        try:
            parse_target(args.target_version)
        except ValueError as exc:
            log.error("--target-version %r: %s", args.target_version, exc)
            return 2
    snapshot_ids = [s for value in args.snapshot_ids for s in value.split(",") if s.strip()]
    if not snapshot_ids:
        log.error("no snapshot to audit: every snapshot task of the run failed (see their logs)")
        return 2
    main_started = time.time()
    spark = get_spark(f"kafka-zk-audit {','.join(snapshot_ids)}"[:200])
    log.info("profile %s", json.dumps({"main_started": main_started,
                                       "session_seconds": round(time.time() - main_started, 3)}))
    failed = []
    try:
        for snapshot_id in snapshot_ids:
            try:
                run_audit(spark, Warehouse(args.warehouse), snapshot_id.strip(), args.config or None,
                          reread_tables=not args.no_reread, target_version=args.target_version)
            except Exception:
                log.exception("the audit of snapshot %s failed; going on with the others", snapshot_id)
                failed.append(snapshot_id)
    finally:
        spark.stop()
    if failed:
        log.error("the audit of %d of %d snapshot(s) failed: %s", len(failed), len(snapshot_ids), ", ".join(failed))
        return 1
    return 0
