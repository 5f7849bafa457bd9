"""Stored history re-audited: every check over every stored snapshot of a cluster, in one Spark app.

A reaudit reads ``<warehouse>/snapshots/`` only and writes only under ``<warehouse>/reaudits/<reaudit_id>/``::

    findings/snapshot_id=<id>/               the findings of each snapshot (the live findings' schema)
    suppressed_findings/snapshot_id=<id>/    their suppressed history (the same schema, status ``suppressed``)
    timeline/                                one row per snapshot, check and severity: its number of findings
    timeline.html                            checks × snapshots, standalone
    reaudit.json                             what was reaudited, each snapshot's baseline and counts

The snapshots are one batch of the live audit's own function (``audit.job.audit_batch``), which differs only
in its baselines and its output folder: the history checks and the findings' status of snapshot k compare
with the snapshot of the same cluster that ``choose_baseline`` picks among the earlier ones of the reaudit
(the previous one), all in one plan. A history larger than ``BATCH_ZNODES`` znodes is cut, oldest first, into
batches of at most that many (a batch's rows pass through the driver's memory in places: the sorts of its
partitioned writes, the findings' collect), run one after the other in the same app; the first snapshot of a
batch then compares with its baseline as the previous batch wrote it into the reaudit's folder, so the result
is the same as one batch's. The live findings, tables and baselines are never read nor written. The
normalized tables are written to ``tables/`` of the reaudit and read back for the checks, as the live audit
does, and removed at the end. Should the batch fail, the snapshots are reaudited one by one: one that cannot
be is logged and skipped, and the next one of its cluster compares with the last one that could.
"""

from __future__ import annotations

import html
import logging
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from kafka_zk_audit.audit.batch import Batch, BatchSnapshot
from kafka_zk_audit.audit.job import audit_batch
from kafka_zk_audit.audit.keyed_io import read_keyed
from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS
from kafka_zk_audit.contract.schemas import FINDINGS, KEY, TABLES
from kafka_zk_audit.contract.settings import AuditConfig, load_config, parse_duration
from kafka_zk_audit.contract.warehouse import Warehouse, choose_baseline, ensemble_identity

log = logging.getLogger(__name__)
# The znodes of one batch (see the module docstring). Measured on the default 1 GB driver of ``local[2]``: ten
# 100k-znode snapshots of a changing cluster in one batch ran out of memory, three per batch did not.
BATCH_ZNODES = 300_000

REAUDITS = "reaudits"
TIMELINE = StructType([
    StructField("snapshot_id", StringType()), StructField("cluster", StringType()),
    StructField("started_at", StringType()), StructField("check_id", StringType()),
    StructField("severity", StringType()), StructField("count", LongType()),
])
REAUDIT_ID_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
SEVERITY_ORDER = ("critical", "error", "warning", "info")


# -- which snapshots -----------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredSnapshot:
    """A complete snapshot of the warehouse: its id and manifest."""

    snapshot_id: str
    manifest: Mapping[str, Any]

    @property
    def cluster(self) -> str:
        return cluster_label(self.manifest)

    @property
    def started_at(self) -> datetime:
        return _aware(datetime.fromisoformat(str(self.manifest["started_at"])))


def cluster_label(manifest: Mapping[str, Any]) -> str:
    """The cluster of a snapshot as the timeline names it: its fleet name, else its ensemble and chroot
    (what ``ensemble_identity`` groups by, so two unnamed ensembles never share a row)."""
    name = manifest.get("cluster")
    if name and name != "default":
        return str(name)
    return ensemble_identity(manifest) or str(name or "unknown")


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_moment(value: str, now: datetime | None = None) -> datetime:
    """``2026-11-01`` / ``2026-11-01T06:00:00Z`` (UTC when no zone is given), or a duration before now (``7d``)."""
    text = value.strip()
    try:
        return _aware(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    try:
        return (now or datetime.now(UTC)) - parse_duration(text, "since/until", "the command line")
    except ValueError:
        raise ValueError(f"{value!r} is neither a date (2026-11-01, 2026-11-01T06:00:00Z) nor a duration "
                         "before now (90m, 12h, 7d)") from None


def new_reaudit_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>``: ids sort in time order and two reaudits never share one."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def reaudit_dir(warehouse: Warehouse, reaudit_id: str) -> str:
    if not REAUDIT_ID_RE.match(reaudit_id):
        raise ValueError(f"reaudit id {reaudit_id!r} may hold letters, digits, '_', '.' and '-' only")
    return f"{warehouse.root}/{REAUDITS}/{reaudit_id}"


def has_raw_data(warehouse: Warehouse, snapshot_id: str, manifest: Mapping[str, Any]) -> bool:
    """True when every Parquet file the manifest lists is still there."""
    files = manifest.get("files") or []
    return bool(files) and all(warehouse.exists(f"{warehouse.snapshot_dir(snapshot_id)}/{f}") for f in files)


def select_snapshots(
    warehouse: Warehouse,
    clusters: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[StoredSnapshot]:
    """The complete snapshots with their data, of the given clusters (fleet name or ensemble identity;
    all when none), started in [since, until], oldest first."""
    wanted = set(clusters)
    chosen = []
    for snapshot_id in warehouse.complete_snapshots():
        manifest = warehouse.read_json(warehouse.manifest_path(snapshot_id))
        snapshot = StoredSnapshot(snapshot_id, manifest)
        if wanted and not wanted & {snapshot.cluster, str(manifest.get("cluster"))}:
            continue
        if (since and snapshot.started_at < since) or (until and snapshot.started_at > until):
            continue
        if not has_raw_data(warehouse, snapshot_id, manifest):
            log.warning("snapshot %s has lost data files (retention?): not reaudited", snapshot_id)
            continue
        chosen.append(snapshot)
    return sorted(chosen, key=lambda s: (s.started_at, s.snapshot_id))


# -- one snapshot -------------------------------------------------------------------------------
def timeline_rows(snapshot: StoredSnapshot, counts: Mapping[tuple[str, str], int],
                  config: AuditConfig) -> list[dict[str, Any]]:
    """One row per check and severity of a snapshot's findings; a check without any has one row with
    count 0 at its configured severity, so that every snapshot has every check."""
    rows = []
    for check_id in CHECK_IDS:
        found = {severity: n for (check, severity), n in counts.items() if check == check_id and n}
        for severity, n in sorted(found.items()) or [(config.severity_of(check_id), 0)]:
            rows.append({"snapshot_id": snapshot.snapshot_id, "cluster": snapshot.cluster,
                         "started_at": snapshot.started_at.isoformat(), "check_id": check_id,
                         "severity": severity, "count": int(n)})
    return rows


def _batch(snapshots: Sequence[StoredSnapshot], config_path: str | None) -> Batch:
    """The reaudit's batch: oldest first, each snapshot's baseline the previous one of its cluster in the batch."""
    settings = load_config(config_path)
    done: list[tuple[str, Mapping[str, Any]]] = []
    members = []
    for snapshot in snapshots:
        cluster = snapshot.manifest.get("cluster") or ""
        members.append(BatchSnapshot(snapshot.snapshot_id, cluster, settings.for_cluster(cluster),
                                     int(snapshot.started_at.timestamp() * 1000),
                                     choose_baseline(snapshot.snapshot_id, snapshot.manifest, done), snapshot.manifest))
        done.append((snapshot.snapshot_id, snapshot.manifest))
    return Batch(tuple(members))


def _one_by_one(spark: SparkSession, warehouse: Warehouse, work: Warehouse, snapshots: Sequence[StoredSnapshot],
                config_path: str | None) -> tuple[dict[str, dict[str, Any]], dict[str, str | None], list[dict]]:
    """After the batch failed: each snapshot alone, oldest first, against the last one of its cluster that could
    be reaudited; one that cannot is logged and skipped."""
    settings = load_config(config_path)
    done: list[tuple[str, Mapping[str, Any]]] = []
    results, baselines, failed = {}, {}, []
    for snapshot in snapshots:
        cluster = snapshot.manifest.get("cluster") or ""
        baseline = choose_baseline(snapshot.snapshot_id, snapshot.manifest, done)
        member = BatchSnapshot(snapshot.snapshot_id, cluster, settings.for_cluster(cluster),
                               int(snapshot.started_at.timestamp() * 1000), baseline, snapshot.manifest)
        try:
            results.update(audit_batch(spark, warehouse, Batch((member,)), output=work, for_gate=False))
            baselines[snapshot.snapshot_id] = baseline
            done.append((snapshot.snapshot_id, snapshot.manifest))
        except Exception as exc:  # bad data in one snapshot never stops the others
            log.exception("the reaudit of snapshot %s failed; going on with the others", snapshot.snapshot_id)
            failed.append({"snapshot_id": snapshot.snapshot_id, "cluster": snapshot.cluster,
                           "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:400]})
    return results, baselines, failed


def split_batch(batch: Batch, budget: int) -> list[Batch]:
    """The batch cut, in its order, into batches of at most ``budget`` znodes (a larger snapshot alone)."""
    parts: list[list[BatchSnapshot]] = [[]]
    size = 0
    for member in batch.snapshots:
        if parts[-1] and size + member.znodes > budget:
            parts.append([])
            size = 0
        parts[-1].append(member)
        size += member.znodes
    return [Batch(tuple(part)) for part in parts if part]


# -- the whole reaudit --------------------------------------------------------------------------
def run_reaudit(spark: SparkSession, warehouse: Warehouse, reaudit_id: str, snapshots: Iterable[StoredSnapshot],
                config_path: str | None, batch_znodes: int = BATCH_ZNODES) -> dict[str, Any]:
    """Reaudit the snapshots in batches of at most ``batch_znodes`` znodes (should one fail, all one by one, oldest
    first); write the timeline, its page and ``reaudit.json``; returns the latter."""
    started = time.monotonic()
    root = reaudit_dir(warehouse, reaudit_id)
    work = Warehouse(root)
    ordered = sorted(snapshots, key=lambda s: (s.started_at, s.snapshot_id))
    batch = _batch(ordered, config_path)
    failed: list[dict] = []
    try:
        figures = {}
        parts = split_batch(batch, batch_znodes)
        for number, part in enumerate(parts, 1):
            if len(parts) > 1:
                log.info("batch %d of %d: %d snapshot(s), %s znodes", number, len(parts), len(part.snapshots),
                         f"{sum(s.znodes for s in part.snapshots):,}")
            figures.update(audit_batch(spark, warehouse, part, output=work, for_gate=False))
        baselines = {s.snapshot_id: s.baseline_id for s in batch.snapshots}
    except Exception:
        log.exception("the reaudit of the %d snapshot(s) together failed; reauditing them one by one", len(ordered))
        figures, baselines, failed = _one_by_one(spark, warehouse, work, ordered, config_path)
    done = [s for s in ordered if s.snapshot_id in figures]
    counts: dict[str, dict[tuple[str, str], int]] = {s.snapshot_id: {} for s in done}
    if done:
        findings = read_keyed(spark, work.findings_dir(), [s.snapshot_id for s in done], FINDINGS)
        for row in findings.groupBy(KEY, "check_id", "severity").agg(F.count(F.lit(1)).alias("n")).collect():
            counts[row[KEY]][(row["check_id"], row["severity"])] = int(row["n"])
    results, timeline = [], []
    for snapshot in done:
        sid, figure = snapshot.snapshot_id, figures[snapshot.snapshot_id]
        config = batch[sid].config
        results.append({
            "snapshot_id": sid,
            "cluster": snapshot.cluster,
            "started_at": snapshot.started_at.isoformat(),
            "baseline_snapshot_id": baselines[sid],
            "znodes": int(snapshot.manifest.get("znodes") or 0),
            "findings": figure["findings"],
            "new_findings": figure["new_findings"],
            "resolved_findings": figure["resolved_findings"],
            "suppressed_findings": figure["suppressed_findings"],
            "explained_findings": figure["explained_findings"],
            "checks": {check_id: n for check_id, n in figure["checks"].items() if n},
            "seconds": figure["seconds"],
        })
        timeline += timeline_rows(snapshot, counts[sid], config)
    spark.createDataFrame(timeline, TIMELINE).coalesce(1).write.mode("overwrite").parquet(f"{root}/timeline")
    for name in TABLES:  # the normalized tables served the checks only
        work.remove(work.table_dir(name))
    seconds = round(time.monotonic() - started, 2)
    znodes = sum(r["znodes"] for r in results)
    summary = {
        "reaudit_id": reaudit_id,
        "warehouse": warehouse.root,
        "path": root,
        "clusters": sorted({r["cluster"] for r in results}),
        "snapshots": results,
        "failed": failed,
        "znodes": znodes,
        "seconds": seconds,
        "snapshots_per_second": round(len(results) / seconds, 3) if seconds else None,
        "znodes_per_second": round(znodes / seconds, 1) if seconds else None,
        "timeline": f"{root}/timeline",
        "page": f"{root}/timeline.html",
    }
    work.write_text(summary["page"], timeline_page(summary, timeline))
    work.write_json(f"{root}/reaudit.json", summary)
    return summary


def _rank(severity: str) -> int:
    return SEVERITY_ORDER.index(severity) if severity in SEVERITY_ORDER else len(SEVERITY_ORDER)


def timeline_page(summary: Mapping[str, Any], timeline: Sequence[Mapping[str, Any]]) -> str:
    """A standalone HTML page: per cluster, checks × snapshots with the number of findings."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>kafka-zk-audit reaudit {esc(summary['reaudit_id'])}</title><style>",
        "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:13px}",
        "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}th.check,td.check{text-align:left}",
        "td.zero{color:#bbb}td.critical{background:#f4a6a6}td.error{background:#f8c9a0}",
        "td.warning{background:#fbe7a1}td.info{background:#d8e8f8}</style></head><body>",
        f"<h1>Reaudit {esc(summary['reaudit_id'])}</h1>",
        f"<p>{len(summary['snapshots'])} snapshot(s) of {esc(summary['warehouse'])} reaudited in "
        f"{summary['seconds']} s; {len(summary['failed'])} could not be.</p>",
    ]
    by_snapshot = {r["snapshot_id"]: r for r in summary["snapshots"]}
    for cluster in summary["clusters"]:
        snapshots = [r for r in summary["snapshots"] if r["cluster"] == cluster]
        counts: dict[tuple[str, str], int] = {}
        worst: dict[tuple[str, str], str] = {}
        for row in timeline:
            if row["cluster"] == cluster and row["count"]:
                key = (row["check_id"], row["snapshot_id"])
                counts[key] = counts.get(key, 0) + row["count"]
                if key not in worst or _rank(row["severity"]) < _rank(worst[key]):
                    worst[key] = row["severity"]
        parts.append(f"<h2>{esc(cluster)}</h2><table><tr><th class='check'>check</th>")
        parts += [f"<th title='{esc(r['snapshot_id'])}'>{esc(r['started_at'][:19].replace('T', ' '))}</th>"
                  for r in snapshots]
        parts.append("</tr>")
        for label, key in (("findings", "findings"), ("new", "new_findings"), ("resolved", "resolved_findings")):
            parts.append(f"<tr><th class='check'>{label}</th>"
                         + "".join(f"<th>{by_snapshot[r['snapshot_id']][key]}</th>" for r in snapshots) + "</tr>")
        for check_id in CHECK_IDS:
            cells = []
            for r in snapshots:
                n = counts.get((check_id, r["snapshot_id"]), 0)
                css = worst.get((check_id, r["snapshot_id"]), "zero") if n else "zero"
                cells.append(f"<td class='{css}'>{n}</td>")
            parts.append(f"<tr><td class='check' title='{esc(BY_ID[check_id].meaning)}'>{esc(check_id)}</td>"
                         + "".join(cells) + "</tr>")
        parts.append("</table>")
    if summary["failed"]:
        parts.append("<h2>Not reaudited</h2><ul>")
        parts += [f"<li>{esc(f['snapshot_id'])}: {esc(f['error'])}</li>" for f in summary["failed"]]
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None, *, stop_session: bool = True) -> int:
    """spark-submit entry: ``--warehouse W --reaudit-id ID [--cluster NAME ...] [--since T] [--until T]
    [--config FILE]``. Exit 0 when every chosen snapshot was reaudited, 1 when any failed, 2 when none
    was chosen. ``stop_session=False`` leaves the session to the driver JVM (``job.main``)."""
    import argparse

    from kafka_zk_audit.audit.session import get_spark

    parser = argparse.ArgumentParser(description="kafka-zk-audit: reaudit the stored snapshots of a warehouse")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--reaudit-id", default=None, help="default: a new one (YYYYMMDDTHHMMSSZ-<hex>)")
    parser.add_argument("--cluster", action="append", default=[], help="fleet name or ensemble; repeatable")
    parser.add_argument("--since", default=None, help="started at or after (date, time or duration before now)")
    parser.add_argument("--until", default=None, help="started at or before (date, time or duration before now)")
    parser.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    parser.add_argument("--batch-znodes", type=int, default=BATCH_ZNODES,
                        help="at most this many znodes per Spark batch (a longer history: several, in order)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    warehouse = Warehouse(args.warehouse)
    snapshots = select_snapshots(warehouse, args.cluster, args.since and parse_moment(args.since),
                                 args.until and parse_moment(args.until))
    if not snapshots:
        log.error("no stored snapshot of %s matches", warehouse.root)
        return 2
    reaudit_id = args.reaudit_id or new_reaudit_id()
    spark = get_spark(f"kafka-zk-audit reaudit {reaudit_id}")
    try:
        summary = run_reaudit(spark, warehouse, reaudit_id, snapshots, args.config or None, args.batch_znodes)
    finally:
        if stop_session:
            spark.stop()
    log.info("reaudit %s: %d snapshot(s) in %.1fs (%.2f snapshots/s, %.0f znodes/s); %d failed; %s",
             reaudit_id, len(summary["snapshots"]), summary["seconds"], summary["snapshots_per_second"] or 0,
             summary["znodes_per_second"] or 0, len(summary["failed"]), summary["page"])
    return 1 if summary["failed"] else 0
