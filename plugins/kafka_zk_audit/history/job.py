"""A history from ZooKeeper's own files: what happened between runs, in one Spark app.

Reads the transaction logs (and the snapshot + logs before them, for the base state) and writes only under
``<warehouse>/history/<history_id>/``::

    changes/               the change table (history.changes.CHANGES), base rows included
    intervals/             the intervals at least ``min_interval`` long (history.intervals.INTERVAL_COLUMNS)
    controller_timeline/   one row per /controller holder, with the gap before it
    leadership/            one row per partition state (leader, leader_epoch, isr, from/to)
    timeline.html          the page: failovers, intervals per check, leadership changes
    history.json           the summary, written last

The floor (``--min-interval``, default 1s; the DAG's history task and ``kafka-zk-audit history`` pass the setting
``history.min_interval``) turns shorter intervals (a controller failover of a few ms, a rebalance) into counts per
check instead of rows.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.keyed_io import arrow_frame
from kafka_zk_audit.audit.session import size_spark_to
from kafka_zk_audit.contract.settings import parse_duration
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.history.changes import LOG_ERROR, base_rows, with_session_deletes, write_changes
from kafka_zk_audit.history.intervals import (
    DEFAULT_MIN_INTERVAL_MS,
    all_intervals,
    controller_failovers,
    leadership_history,
    split_by_floor,
)
from kafka_zk_audit.report.history_index import link_history_in_data_docs, write_history_index
from kafka_zk_audit.report.page_style import PageLinks, cell, esc, links_for, page, severity_badge, table

log = logging.getLogger(__name__)


def new_history_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>`` (the reaudit id's form): ids sort in time order, two never share one."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def history_dir(warehouse: Warehouse, history_id: str) -> str:
    return warehouse.history_dir(history_id)


def _iso(value: Any) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value is not None else None


def _base(spark: SparkSession, files_dir: str, log_dir: str | None, first_zxid: int, chroot: str,
          key: bytes | None, first_time_ms: int | None) -> tuple[DataFrame | None, dict[str, Any]]:
    """The base rows at ``first_zxid - 1`` and what was rebuilt; (None, why) when the files cannot give it."""
    from kafka_zk_audit.snapshot.files.replay import rebuild_tree

    try:
        tree = rebuild_tree(files_dir, log_dir, at_zxid=first_zxid - 1)
    except Exception as exc:  # no usable snapshot before the window: intervals open at its start stay unknown
        log.warning("no base state before zxid %s: %s", first_zxid, exc)
        return None, {"zxid": None, "error": f"{type(exc).__name__}: {exc}"[:400]}
    if tree.time_ms is None:
        tree.time_ms = first_time_ms
    rows = base_rows(spark, tree, chroot, key, at_zxid=first_zxid - 1)
    return rows, {"zxid": first_zxid - 1, "snapshot": tree.snapshot_file.rsplit("/", 1)[-1],
                  "digest_verified": tree.digest_verified, "format": tree.format}


def local_frame(spark: SparkSession, warehouse: Warehouse, directory: str, schema: Any) -> DataFrame:
    """A small Parquet table the job wrote, read by pyarrow into a local relation of ``schema`` (Spark's read)."""
    import pyarrow.dataset as ds

    table = ds.dataset(warehouse.fs_path(directory), filesystem=warehouse.fs, format="parquet").to_table()
    return arrow_frame(spark, table.select(schema.names), schema)


def run_history(spark: SparkSession, warehouse: Warehouse, files_dir: str, *, log_dir: str | None = None,
                chroot: str = "", history_id: str | None = None, cluster: str | None = None,
                min_interval_ms: int = DEFAULT_MIN_INTERVAL_MS, from_zxid: int | None = None,
                to_zxid: int | None = None, origin: str | None = None) -> dict[str, Any]:
    """Build the history of the logs in ``log_dir`` (default ``files_dir``); returns the summary it wrote.
    ``origin``: where the files were fetched from, named in the summary instead of the staging folder."""
    from kafka_zk_audit.snapshot.secrets import warehouse_key

    started = time.monotonic()
    history_id = history_id or new_history_id()
    root = history_dir(warehouse, history_id)
    key = warehouse_key(warehouse)
    chroot = chroot.rstrip("/")
    decoded = write_changes(spark, log_dir or files_dir, f"{root}/_decoded", chroot=chroot, first_zxid=from_zxid,
                            last_zxid=to_zxid, key=key)
    decode_seconds = time.monotonic() - started
    errors = [{"file": r["path"], "after_zxid": r["zxid"], "error": bytes(r["data"]).decode(errors="replace")}
              for r in decoded.where(F.col("op") == LOG_ERROR).collect()]
    changes = decoded.where(F.col("op") != LOG_ERROR)
    span = changes.agg(F.min("zxid").alias("first"), F.max("zxid").alias("last"), F.min("time").alias("t0"),
                       F.max("time").alias("t1"), F.countDistinct("zxid").alias("txns"),
                       F.count(F.lit(1)).alias("rows")).first()
    small = size_spark_to(spark, int(span["rows"] or 0))
    base_info: dict[str, Any] = {"zxid": None}
    if span["first"] is not None:
        first_ms = int(span["t0"].timestamp() * 1000)
        base, base_info = _base(spark, files_dir, log_dir, span["first"], chroot, key, first_ms)
        if base is not None:
            changes = changes.unionByName(base)
    with_session_deletes(changes).write.mode("overwrite").parquet(f"{root}/changes")
    warehouse.remove(f"{root}/_decoded")
    changes = spark.read.parquet(f"{root}/changes")
    if small:  # the driver reads the few rows into a local relation: no file scan for each use of the table
        changes = local_frame(spark, warehouse, f"{root}/changes", changes.schema)
    found, tables = all_intervals(changes)
    found = found.persist()
    listed, short = split_by_floor(found, min_interval_ms)
    listed.orderBy("start_zxid", "check_id").coalesce(1).write.mode("overwrite").parquet(f"{root}/intervals")
    failovers = controller_failovers(tables)
    failovers.coalesce(1).write.mode("overwrite").parquet(f"{root}/controller_timeline")
    leadership_history(tables).write.mode("overwrite").parquet(f"{root}/leadership")
    listed_rows = [r.asDict() for r in spark.read.parquet(f"{root}/intervals").orderBy("start_zxid").collect()]
    failover_rows = [r.asDict() for r in spark.read.parquet(f"{root}/controller_timeline")
                     .orderBy("from_zxid").collect()]
    leadership_changes = [r.asDict() for r in spark.read.parquet(f"{root}/leadership")
                          .orderBy("from_zxid").limit(500).collect()]
    counts: dict[str, dict[str, int]] = {}
    for row in listed_rows:
        counts.setdefault(row["check_id"], {"listed": 0, "short": 0})["listed"] += 1
    for row in short.collect():
        counts.setdefault(row["check_id"], {"listed": 0, "short": 0})["short"] = row["short"]
    found.unpersist()
    seconds = round(time.monotonic() - started, 2)
    txns = int(span["txns"] or 0)
    summary = {
        "history_id": history_id, "cluster": cluster, "warehouse": warehouse.root, "path": root,
        "files": origin or files_dir, "log_dir": None if origin else log_dir or files_dir, "chroot": chroot or "/",
        "first_zxid": span["first"], "last_zxid": span["last"],
        "first_time": _iso(span["t0"]), "last_time": _iso(span["t1"]),
        "base": base_info, "txns": txns, "changes": int(span["rows"] or 0),
        "min_interval_ms": min_interval_ms, "checks": dict(sorted(counts.items())),
        "controller_failovers": len(failover_rows), "log_errors": errors,
        "decode_seconds": round(decode_seconds, 2), "seconds": seconds,
        "txns_per_second": round(txns / decode_seconds, 1) if decode_seconds else None,
        "page": f"{root}/timeline.html",
    }

    def render(links: PageLinks) -> str:
        return timeline_page(summary, listed_rows, failover_rows, leadership_changes, links)

    warehouse.write_text(summary["page"], render(links_for(warehouse, summary["page"])))
    warehouse.write_json(f"{root}/history.json", summary)
    publish_in_data_docs(warehouse, summary, render)
    return summary


def publish_in_data_docs(warehouse: Warehouse, summary: Mapping[str, Any],
                         render: Callable[[PageLinks], str]) -> str:
    """The history's page (``render``ed with the links of where it is written) inside the Data Docs site too
    (``<data_docs>/history/<id>.html``), an index of every history of the warehouse there, newest first, and a link
    to it at the top of the site's index page (when the site exists; the DAG's summary task adds it again after each
    gate rebuilt the index). Returns the index's URL."""
    url = warehouse.history_page(summary["history_id"])
    warehouse.write_text(url, render(links_for(warehouse, url)))
    index = write_history_index(warehouse)
    link_history_in_data_docs(warehouse)
    return index


def _ms(value: Any) -> str:
    return "" if value is None else f"{value / 1000:.3f} s"


def timeline_page(summary: Mapping[str, Any], intervals: Sequence[Mapping[str, Any]],
                  failovers: Sequence[Mapping[str, Any]], leadership: Sequence[Mapping[str, Any]],
                  links: PageLinks | None = None) -> str:
    """A page with the Data Docs' look (:mod:`kafka_zk_audit.report.page_style`; plain without ``links`` to the
    vendored assets): controller failovers, the intervals of each check, leadership changes."""
    checks = (f"<tr>{cell(check)}{cell(n['listed'])}{cell(n['short'])}</tr>" for check, n in summary["checks"].items())
    failover_rows = (
        f"<tr>{cell(f['broker_id'])}{cell(f['epoch'])}{cell(f['from_zxid'])}{cell(_iso(f['from_time']))}"
        f"{cell(f['to_zxid'])}{cell(_iso(f['to_time']))}{cell(_ms(f['gap_ms']))}</tr>" for f in failovers)
    interval_rows = []
    for row in intervals:
        subject = " ".join(str(v) for v in (row["group_id"], row["topic"], row["partition"], row["broker_id"])
                           if v is not None) or row["path"]
        interval_rows.append(
            f"<tr>{cell(row['severity'], html_value=severity_badge(row['severity']))}{cell(row['check_id'])}"
            f"{cell(subject, wrap=True)}{cell(row['start_zxid'])}{cell(row['end_zxid'] or 'open')}"
            f"{cell(_iso(row['start_time']))}{cell(_ms(row['duration_ms']))}{cell(row['detail'], wrap=True)}</tr>")
    leadership_rows = (
        f"<tr>{cell(str(r['topic']) + '-' + str(r['partition']), wrap=True)}{cell(r['leader'])}"
        f"{cell(r['leader_epoch'])}{cell(r['isr'], wrap=True)}{cell(r['from_zxid'])}{cell(r['to_zxid'])}</tr>"
        for r in leadership)
    body = (
        f"<p class=\"kza-meta\">{summary['txns']:,} txns, zxid {esc(summary['first_zxid'])} to "
        f"{esc(summary['last_zxid'])} ({esc(summary['first_time'])} to {esc(summary['last_time'])}), chroot "
        f"<code>{esc(summary['chroot'])}</code>; intervals shorter than {_ms(summary['min_interval_ms'])} are "
        "counted, not listed.</p>"
        '<h2 class="kza-section">Checks</h2>' + table(("check", "listed", "shorter"), checks, search=False)
        + '<h2 class="kza-section">Controller failovers</h2>'
        + table(("broker", "epoch", "from zxid", "from", "to zxid", "to", "gap before"), failover_rows)
        + '<h2 class="kza-section">Intervals</h2>'
        + table(("severity", "check", "subject", "from zxid", "to zxid", "from", "lasted", "evidence"), interval_rows)
        + '<h2 class="kza-section">Leadership changes</h2>'
        + table(("partition", "leader", "leader_epoch", "isr", "from zxid", "to zxid"), leadership_rows))
    return page(f"History {summary['history_id']}", body, links)


def main(argv: list[str] | None = None, *, stop_session: bool = True) -> int:
    """spark-submit entry: ``--warehouse W --files DIR [--log-dir DIR] [--cluster NAME] [--chroot /x]
    [--history-id ID] [--min-interval 1s] [--from-zxid N] [--to-zxid N]``. Exit 0 when history.json was
    written, 1 when a log could not be read to its end. ``stop_session=False`` leaves the session to the driver JVM
    (``kafka_zk_audit.audit.job.main``)."""
    import argparse

    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.snapshot.files.sources import parse_at_zxid

    parser = argparse.ArgumentParser(description="kafka-zk-audit: the history of ZooKeeper's transaction logs")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--files", required=True, help="ZooKeeper's dataDir (snapshots, and logs unless --log-dir)")
    parser.add_argument("--log-dir", default=None, help="ZooKeeper's dataLogDir when apart from --files")
    parser.add_argument("--origin", default=None, help="where --files were fetched from (named in history.json)")
    parser.add_argument("--cluster", default=None)
    parser.add_argument("--chroot", default="", help="Kafka's chroot; paths are written relative to it")
    parser.add_argument("--history-id", default=None, help="default: a new one (YYYYMMDDTHHMMSSZ-<hex>)")
    parser.add_argument("--min-interval", default="1s",
                        help="shorter intervals are counted, not listed (the setting history.min_interval)")
    parser.add_argument("--from-zxid", default=None, help="first zxid (decimal or 0x hex)")
    parser.add_argument("--to-zxid", default=None, help="last zxid (decimal or 0x hex)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    min_interval_ms = int(parse_duration(args.min_interval, "--min-interval", "the command line").total_seconds()
                          * 1000)
    spark = get_spark(f"kafka-zk-audit history {args.history_id or ''}".strip(), shuffle_partitions=4)
    try:
        summary = run_history(spark, Warehouse(args.warehouse), args.files, log_dir=args.log_dir,
                              chroot=args.chroot, history_id=args.history_id, cluster=args.cluster,
                              min_interval_ms=min_interval_ms, from_zxid=parse_at_zxid(args.from_zxid),
                              to_zxid=parse_at_zxid(args.to_zxid), origin=args.origin)
    finally:
        if stop_session:
            spark.stop()
    log.info("history %s: %d txns in %.1fs (%.0f txns/s decoded); %s", summary["history_id"], summary["txns"],
             summary["seconds"], summary["txns_per_second"] or 0, summary["page"])
    return 1 if summary["log_errors"] else 0
