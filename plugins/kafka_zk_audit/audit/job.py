"""The Spark job: snapshots → normalized tables → checks → findings (with history) → audit tables.

One application audits a *batch* of snapshots (one run's fleet, one stored snapshot, a reaudit's history) in
one plan: the snapshot is a key column of every frame (``contract.schemas.KEY``), each cluster's settings and
each snapshot's baseline come in as small keyed tables (``audit.batch``), and every table is written once for
the whole batch, partitioned by snapshot (``<warehouse>/tables/<table>/snapshot_id=<id>/``, ``audit.keyed_io``).
Spark's fixed costs (planning, stages) are therefore paid once per run, not once per snapshot.

It reads ``<warehouse>/snapshots/snapshot_id=<id>/`` (refusing a snapshot without its manifest), writes every
normalized table, the audit tables (``audit_<entity>``) and the findings, the findings last: their
``_SUCCESS`` marks the snapshot as audited, i.e. a baseline for the next run's history checks. It also writes
``runs/<id>/audit.json`` (counts, baseline, new/resolved) per snapshot for the summary.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.audit_tables import build_audit_tables, conform_for_gate
from kafka_zk_audit.audit.batch import Batch, BatchSnapshot, started_ms
from kafka_zk_audit.audit.checks import run_checks
from kafka_zk_audit.audit.checks.common import BASELINE_ID
from kafka_zk_audit.audit.drift import drift_rows
from kafka_zk_audit.audit.findings import finalize_findings
from kafka_zk_audit.audit.keyed_io import (
    LazyFrames,
    collect_all_at_once,
    local_keyed,
    read_keyed,
    read_keyed_local,
    write_all_at_once,
    write_arrow,
    write_collected,
    write_keyed,
    write_rows,
)
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.audit.paired import paired_verdicts, with_paired_findings
from kafka_zk_audit.audit.readiness import SnapshotReadiness, audit_readiness, write_audit_migration
from kafka_zk_audit.audit.session import for_driver_thread, in_driver_threads, is_connect, size_spark_to
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.drift import DRIFT_TABLE
from kafka_zk_audit.contract.schemas import DRIFT, FINDINGS, KEY, SNAPSHOT, TABLES, keyed
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, read_manifest

log = logging.getLogger(__name__)
T = TypeVar("T")

# Tables the history checks compare with the previous audited snapshot.
HISTORY_TABLES = ("partitions", "controller_epoch", "consumer_offsets", "topics", "migration", "controller")
# The suppressed findings of a run (FINDINGS shape), kept only as history: the next run carries their
# first_seen over, so lifting a suppression does not make an old finding new.
SUPPRESSED_HISTORY = "suppressed_findings"


def audit_table_name(entity: str) -> str:
    return f"audit_{entity}"


class PhaseClock:
    """Wall seconds and Spark jobs per phase of one audit, logged at INFO as one ``profile {json}`` line
    (``bench/profile_audit.py`` reads it). On a Spark Connect session (no JVM in this process) the jobs are not
    counted (0)."""

    def __init__(self, spark: SparkSession) -> None:
        # the JVM's tracker: PySpark's copies the ids of every job the session kept (up to 1,000) one JVM round trip
        # each, where the length of the JVM's array is one
        self._tracker = None if is_connect(spark) else spark.sparkContext._jsc.statusTracker()
        self.phases: dict[str, dict[str, float]] = {}

    def _jobs(self) -> int:
        return 0 if self._tracker is None else len(self._tracker.getJobIdsForGroup(None))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        jobs, started = self._jobs(), time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = {"seconds": round(time.monotonic() - started, 3), "jobs": self._jobs() - jobs}

    def timed(self, name: str, beside: str, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in another thread, its wall seconds kept as phase ``name`` marked as run ``beside`` that
        phase (its seconds are within the other's; its jobs are counted with it)."""
        started = time.monotonic()
        try:
            return work(*args)
        finally:
            self.phases[name] = {"seconds": round(time.monotonic() - started, 3), "jobs": 0, "beside": beside}

    def log(self, snapshot_ids: Sequence[str]) -> None:
        log.info("profile %s", json.dumps({"snapshot_ids": list(snapshot_ids), "phases": self.phases}))


def read_snapshots(spark: SparkSession, warehouse: Warehouse, snapshot_ids: Sequence[str]) -> DataFrame:
    """The snapshots' znodes as one keyed frame (``keyed(SNAPSHOT)``)."""
    return read_keyed(spark, f"{warehouse.root}/snapshots", snapshot_ids, SNAPSHOT)


def read_tables(spark: SparkSession, warehouse: Warehouse, names: Sequence[str],
                snapshot_ids: Sequence[str]) -> Mapping[str, DataFrame]:
    """Normalized tables of the snapshots, as written (keyed, with their contract schemas), each read when first
    used."""
    return LazyFrames({name: partial(read_keyed, spark, warehouse.table_dir(name), snapshot_ids, TABLES[name])
                       for name in names})


def plan_batch(warehouse: Warehouse, snapshot_ids: Sequence[str], config_path: str | None) -> Batch:
    """A live run's batch: each snapshot with its cluster's settings and, as baseline, the previous audited
    snapshot of its ensemble and chroot (``Warehouse.baselines``)."""
    settings = load_config(config_path)
    baselines = warehouse.baselines(snapshot_ids)
    snapshots = []
    for sid in snapshot_ids:
        manifest = read_manifest(warehouse, sid)
        cluster = manifest.get("cluster") or ""
        snapshots.append(BatchSnapshot(sid, cluster, settings.for_cluster(cluster), started_ms(manifest),
                                       baselines[sid], manifest))
    return Batch(tuple(snapshots))


def _rekeyed(frame: DataFrame, batch: Batch) -> DataFrame:
    """Baselines' rows keyed by the snapshot they are the baseline of, with their own id as ``baseline_snapshot_id``
    (a row of a baseline of two snapshots is there twice)."""
    rest = [c for c in frame.columns if c != KEY]
    # one select: its expressions read the input's key, so the exploded followers may take the key's name
    return frame.select(F.explode(batch.followers_column(in_batch_only=False)).alias(KEY), *rest,
                        F.col(KEY).alias(BASELINE_ID))


def load_baselines(spark: SparkSession, store: Warehouse, batch: Batch, tables: Mapping[str, DataFrame],
                   local: bool = False) -> tuple[dict[str, DataFrame] | None, DataFrame | None]:
    """The history tables of every snapshot's baseline (from the batch's own tables, or stored), keyed by the
    snapshot they are the baseline of; and the stored baselines' findings with their suppressed history, keyed
    the same way. (None, None) when no snapshot has a baseline. ``local``: stored files are read on the driver
    into local relations (a small batch)."""
    read = partial(read_keyed_local, spark, store) if local else partial(read_keyed, spark)
    pairs = [(s.snapshot_id, s.baseline_id) for s in batch.snapshots if s.baseline_id]
    if not pairs:
        return None, None
    ids = set(batch.ids)
    stored = sorted({b for _, b in pairs if b not in ids})
    inside = sorted({b for _, b in pairs if b in ids})
    previous: dict[str, DataFrame] = {}
    for name in HISTORY_TABLES:
        parts = []
        if inside:
            parts.append(tables[name].where(F.col(KEY).isin(inside)))
        if stored:
            parts.append(read(store.table_dir(name), stored, TABLES[name]))
        union = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        previous[name] = _rekeyed(union, batch)
    findings = None
    if stored:
        findings = read(store.findings_dir(), stored, FINDINGS)
        with_suppressed = [sid for sid in stored
                           if store.exists(f"{store.table_dir(SUPPRESSED_HISTORY, sid)}/_SUCCESS")]
        if with_suppressed:
            findings = findings.unionByName(read(store.table_dir(SUPPRESSED_HISTORY), with_suppressed, FINDINGS))
        findings = _rekeyed(findings, batch).drop(BASELINE_ID)
    return previous, findings


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


def _with_cluster(frame: DataFrame, batch: Batch) -> DataFrame:
    """The frame with its snapshot's cluster as last column (every written table of the audit carries it)."""
    if "cluster" in frame.columns:
        return frame
    return frame.withColumn("cluster", batch.cluster_column())


def _write_with_spark(spark: SparkSession, frames: Mapping[str, DataFrame], batch: Batch, out: Warehouse) -> None:
    """A large batch's tables, each written by a Spark job as ``<table>/snapshot_id=<id>/`` with its cluster: two
    driver threads, so that one table's job runs while the other's files are committed and listed."""
    in_driver_threads(spark, lambda item: write_keyed(_with_cluster(item[1], batch), out, out.table_dir(item[0]),
                                                      batch.ids), list(frames.items()))


def audit_batch(spark: SparkSession, warehouse: Warehouse, batch: Batch, *, output: Warehouse | None = None,
                target_version: str | None = None, for_gate: bool = True) -> dict[str, dict[str, Any]]:
    """Audit every snapshot of the batch in one plan; returns, per snapshot id, the figures of its
    ``runs/<id>/audit.json``.

    Snapshots are read from ``warehouse``; tables, findings and figures go to ``output`` (default: the same),
    where stored baselines are read too (a reaudit writes to its own folder). ``for_gate``: also the drift row,
    the readiness report and the audit tables the gate validates (a reaudit skips them). Every phase's wall time
    and Spark jobs are logged (``PhaseClock``). ``target_version`` overrides each cluster's
    ``migration.target_version`` for the readiness report.
    """
    started = time.monotonic()
    out = output or warehouse
    ids = batch.ids
    clock = PhaseClock(spark)
    with clock.phase("plan"):
        znodes = sum(s.znodes for s in batch.snapshots)
        small = size_spark_to(spark, znodes)
        if out.is_local:  # list a batch's folders on the driver: a Spark job to list a hundred local paths is slower
            spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, 2 * len(ids))))
        snapshot = read_snapshots(spark, warehouse, ids)
        tables = normalize(snapshot, conformed=not small)  # a small batch's collect conforms its rows
        params = batch.params(spark)
    log.info("auditing %d snapshot(s), %d znodes: %s", len(ids), znodes, ", ".join(
        f"{s.snapshot_id} ({s.cluster or 'default'}; baseline {s.baseline_id or 'none'})" for s in batch.snapshots))

    with clock.phase("read+normalize+write"):
        clusters = {"cluster": {s.snapshot_id: s.cluster for s in batch.snapshots}}
        if small:  # a job or two for every table: the rows fit the driver
            tables.materialize()  # collected by two jobs at once: each reads the parse, done once before them
            collected = collect_all_at_once(tables, {name: keyed(TABLES[name]) for name in tables})
            row_counts = write_collected(collected, out, {name: out.table_dir(name) for name in tables}, ids,
                                         clusters)
        else:
            tables.materialize()  # the parse done once, before the jobs that read it at once
            _write_with_spark(spark, tables, batch, out)
    with clock.phase("reread+count"):
        # The checks start from the tables as written, not from the whole normalizer lineage, which makes planning
        # and running them several times faster: a small batch's rows, which the driver collected to write them, as
        # local relations (no file to scan, and the branches that read an empty table are pruned from the plan:
        # about 3.5 times faster again); a large batch's tables read back from their Parquet files.
        tables.release()
        if small:
            tables = LazyFrames({name: partial(local_keyed, spark, collected[name], TABLES[name]) for name in TABLES})
        else:
            tables = read_tables(spark, out, list(TABLES), ids)
            row_counts = {sid: {name: parquet_rows(out, out.table_dir(name, sid)) for name in TABLES} for sid in ids}
        previous_tables, previous_findings = load_baselines(spark, out, batch, tables, local=small)
        # the tables without a row in any snapshot: their checks find nothing and are not planned
        empty = frozenset(name for name in TABLES if all(row_counts[sid].get(name) == 0 for sid in ids))
    if for_gate:
        with clock.phase("drift"):
            drift = drift_rows(tables, batch, row_counts)
            write_rows(out, out.table_dir(DRIFT_TABLE), {row["snapshot_id"]: [row] for row in drift}, DRIFT)

    with clock.phase("checks+findings"):
        verdicts = paired_verdicts(spark, warehouse, ids)  # the paired snapshots' migration diffs, one plan
        # the readiness report needs neither the checks nor the findings: a second driver thread plans and runs it
        # while this one does the checks (the driver's JVM analyses both at once; each Python thread has its own)
        beside = ThreadPoolExecutor(1, thread_name_prefix="readiness") if for_gate else None
        pending = None if beside is None else beside.submit(
            for_driver_thread(spark, clock.timed), "readiness", "checks+findings", _readiness, spark, out, batch,
            tables, snapshot, target_version, verdicts, empty)
        try:
            raw = with_paired_findings(spark, run_checks(tables, previous_tables, params, empty=empty), verdicts)
            finalized = finalize_findings(raw, batch, previous_findings)
            findings = finalized.findings
        finally:
            if beside is not None:
                beside.shutdown(wait=True)

    readiness: dict[str, dict[str, Any]] = {}
    if pending is not None:
        with clock.phase("readiness (after the checks)"):
            readiness = pending.result()

    if for_gate:
        with clock.phase("audit tables"):
            audit = {audit_table_name(entity): conform_for_gate(df)
                     for entity, df in build_audit_tables(tables, findings, params.keys()).items()}
            if small:
                write_all_at_once(audit, out, {name: out.table_dir(name) for name in audit}, ids, clusters)
            else:
                _write_with_spark(spark, audit, batch, out)

    with clock.phase("findings write"):
        finding_rows = finalized.findings_rows
        write_arrow(out, out.table_dir(SUPPRESSED_HISTORY), finalized.suppressed_rows, ids)
        write_arrow(out, out.findings_dir(), finding_rows, ids)  # last: marks the snapshots audited
        counts: dict[str, dict[tuple[str, str], int]] = {sid: {} for sid in ids}
        for row in finding_rows.group_by([KEY, "check_id", "severity"]).aggregate([([], "count_all")]).to_pylist():
            counts[row[KEY]][(row["check_id"], row["severity"])] = int(row["count_all"])
    seconds = round(time.monotonic() - started, 1)
    results = {}
    for snapshot_in in batch.snapshots:
        sid = snapshot_in.snapshot_id
        result = audit_figures(snapshot_in, finalized.stats[sid], counts[sid], row_counts[sid], readiness.get(sid),
                               seconds)
        out.write_json(f"{out.run_dir(sid)}/audit.json", result)
        results[sid] = result
        log.info("%s: findings: %d (%d new, %d resolved); per check: %s", sid, result["findings"],
                 result["new_findings"], result["resolved_findings"], {k: v for k, v in result["checks"].items() if v})
    clock.log(ids)
    log.info("audited %d snapshot(s) in %.1fs", len(ids), seconds)
    return results


def audit_figures(snapshot: BatchSnapshot, stats: Mapping[str, int], counts: Mapping[tuple[str, str], int],
                  table_rows: Mapping[str, int], report: Mapping[str, Any] | None, seconds: float) -> dict[str, Any]:
    """A snapshot's ``runs/<id>/audit.json``: its findings by check and severity ((check, severity) -> count), the
    new / resolved / suppressed / explained counts, its tables' rows and its readiness verdict."""
    by_check: dict[str, int] = {}
    by_severity: dict[str, int] = {}
    for (check_id, severity), n in counts.items():
        by_check[check_id] = by_check.get(check_id, 0) + n
        by_severity[severity] = by_severity.get(severity, 0) + n
    result = {
        "snapshot_id": snapshot.snapshot_id,
        "baseline_snapshot_id": snapshot.baseline_id,
        "checks": {check_id: int(by_check.get(check_id, 0)) for check_id in CHECK_IDS},
        "severities": by_severity,
        "findings": int(sum(by_check.values())),
        "new_findings": int(stats["new"]),
        "resolved_findings": int(stats["resolved"]),
        "suppressed_findings": int(stats.get("suppressed", 0)),
        "explained_findings": int(stats.get("explained", 0)),
        "table_rows": dict(table_rows),
        "readiness": None if report is None else {
            "target_version": report["target_version"], "verdict": report["verdict"],
            "phase": report["phase"]["phase"], "counts": report["counts"]},
        "seconds": seconds,
    }
    return result


def _readiness(spark: SparkSession, warehouse: Warehouse, batch: Batch, tables: Mapping[str, DataFrame],
               snapshot: DataFrame, target_version: str | None,
               verdicts: Mapping[str, Mapping[str, Any]], empty: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The readiness reports of the snapshots whose settings ask for one (``migration.readiness``) and that read
    ZooKeeper (a KRaft cluster has no migration ahead); the others, and all when it cannot be computed, get an
    empty ``audit_migration`` table (no gate on readiness). ``empty``: the tables without a row."""
    wanted = {s.snapshot_id: SnapshotReadiness(s.manifest, s.config, target_version)
              for s in batch.snapshots if s.config.migration.readiness and s.manifest.get("source") != "kraft"}
    skipped = [sid for sid in batch.ids if sid not in wanted]
    reports: dict[str, dict[str, Any]] = {}
    if wanted:
        try:
            reports = audit_readiness(spark, warehouse, wanted, tables, snapshot, verdicts, empty)
        except Exception:  # the health audit goes on: readiness is a report beside it
            log.exception("the ZK -> KRaft readiness report of %s could not be computed (the audit goes on "
                          "without it; please report this with the log)", ", ".join(wanted))
            skipped = batch.ids
    if skipped:
        write_audit_migration(warehouse, {sid: batch[sid].cluster for sid in skipped})
    return reports


def run_audit(spark: SparkSession, warehouse: Warehouse, snapshot_ids: str | Sequence[str], config_path: str | None,
              target_version: str | None = None) -> dict[str, dict[str, Any]]:
    """Audit stored snapshots of the warehouse as one batch (each with its previous audited snapshot as
    baseline); returns each one's ``audit.json`` figures by snapshot id."""
    ids = [snapshot_ids] if isinstance(snapshot_ids, str) else list(snapshot_ids)
    return audit_batch(spark, warehouse, plan_batch(warehouse, ids, config_path), target_version=target_version)



def audit_each_alone(spark: SparkSession, warehouse: Warehouse, batch: Batch,
                    target_version: str | None) -> list[str]:
    """After a batch failed: each snapshot alone, so that one snapshot's problem never costs the others their
    audit. Returns the ids that failed alone too."""
    failed = []
    for snapshot in batch.snapshots:
        try:
            audit_batch(spark, warehouse, Batch((snapshot,)), target_version=target_version)
        except Exception:
            log.exception("the audit of snapshot %s failed; going on with the others", snapshot.snapshot_id)
            failed.append(snapshot.snapshot_id)
    return failed


def readable_snapshots(warehouse: Warehouse, snapshot_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(those with a manifest, those without): a snapshot that cannot be audited is logged, the others go on."""
    ready, failed = [], []
    for snapshot_id in snapshot_ids:
        try:
            read_manifest(warehouse, snapshot_id)
            ready.append(snapshot_id)
        except Exception as exc:
            log.error("snapshot %s cannot be audited: %s; going on with the others", snapshot_id, exc)
            failed.append(snapshot_id)
    return ready, failed


def audit_snapshots(spark: SparkSession, warehouse: Warehouse, snapshot_ids: Sequence[str],
                    config_path: str | None, target_version: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The audit app's work on a given session (the app's own, or a Spark Connect server's): every snapshot with a
    manifest audited in one batch, each alone should the batch fail. Returns the figures by snapshot id and the ids
    that could not be audited."""
    ready, failed = readable_snapshots(warehouse, snapshot_ids)
    results: dict[str, Any] = {}
    if ready:
        batch = plan_batch(warehouse, ready, config_path)
        try:
            results = audit_batch(spark, warehouse, batch, target_version=target_version)
        except Exception:
            log.exception("the audit of the %d snapshot(s) together failed; auditing each alone", len(ready))
            failed += audit_each_alone(spark, warehouse, batch, target_version)
    return results, failed


def main(argv: list[str] | None = None, *, stop_session: bool = True) -> int:
    """spark-submit entry: ``--warehouse DIR --snapshot-ids ID[,ID...] [--config FILE] [--target-version V]``.

    Every snapshot is audited in one batch, each with its cluster's settings. A snapshot that cannot be (no
    manifest) is logged and the others go on; should the batch fail, each snapshot is audited alone. Exit 1
    when any failed (the gate then validates the others), 2 when there was nothing to audit.

    ``stop_session=False``: the process ends right after (``spark_apps``' entries end it with
    ``contract.process.end_process``), so the session is left to the driver JVM, whose shutdown hook stops the
    SparkContext; PySpark's own stop waits up to a second for its accumulator server (0.89 s measured). The JVM
    objects the app's Python proxies reach are then released at the exit too (``keep_jvm_objects_to_exit``).
    """
    import argparse

    from kafka_zk_audit.audit.jvm_handles import keep_jvm_objects_to_exit
    from kafka_zk_audit.audit.session import get_spark

    parser = argparse.ArgumentParser(description="kafka-zk-audit: audit snapshots of the warehouse")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--snapshot-ids", "--snapshot-id", dest="snapshot_ids", action="append", required=True,
                        help="snapshot ids, comma-separated or repeated")
    parser.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    parser.add_argument("--target-version", default=None,
                        help='Kafka version to plan the ZK -> KRaft migration with, e.g. "3.9" or "3.5.1" '
                             "(default: the settings' migration.target_version)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.target_version:
        from kafka_zk_audit.contract.readiness import parse_target

        try:
            parse_target(args.target_version)
        except ValueError as exc:
            log.error("--target-version %r: %s", args.target_version, exc)
            return 2
    snapshot_ids = list(dict.fromkeys(s.strip() for value in args.snapshot_ids for s in value.split(",") if s.strip()))
    if not snapshot_ids:
        log.error("no snapshot to audit: every snapshot task of the run failed (see their logs)")
        return 2
    warehouse = Warehouse(args.warehouse)
    ready, failed = readable_snapshots(warehouse, snapshot_ids)
    if ready:
        main_started = time.time()
        spark = get_spark(f"kafka-zk-audit {','.join(ready)}"[:200])
        if not stop_session:
            keep_jvm_objects_to_exit(spark)
        log.info("profile %s", json.dumps({"main_started": main_started,
                                           "session_seconds": round(time.time() - main_started, 3)}))
        try:
            failed += audit_snapshots(spark, warehouse, ready, args.config or None, args.target_version)[1]
        finally:
            if stop_session:
                spark.stop()
    if failed:
        log.error("the audit of %d of %d snapshot(s) failed: %s", len(failed), len(snapshot_ids), ", ".join(failed))
        return 1
    return 0
