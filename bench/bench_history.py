"""The change-table build of a history (ZooKeeper's transaction logs → the ``changes`` Parquet table) on local[2].

    .venv/bin/python bench/bench_history.py [--txns 222000] [--topics 500] [--quick] [--files DIR] [--keep]

1. Starts a private ZooKeeper on 127.0.0.1 (snapCount 10,000,000: no snapshot, no log roll, so the txns land in one
   preallocated 64 MiB log, the case that cannot be split by file), writes a simulated 3.x cluster under ``/large``
   (``--topics`` × 20 partitions, ``bench_snapshot.write_cluster``), then ``--txns`` txns the way a
   running Kafka cluster writes them (``bench_offline.churn``: partition-state setData, ISR-change notifications),
   half of the partition-state writes as the controller's multi (a check on /controller_epoch, then the setData),
   and stops the server.
2. In its own process, one Spark session on local[2]: ``history.changes.write_changes`` over the server's logs
   with the chroot (logs → the change table in Parquet, what ``history.job.run_history`` does first), three
   times in the same session (the first run pays for the JVM's and the Python workers' start; the best of the
   other two is the warm figure); then, as the baseline, the same rows decoded one txn at a time
   (``txnlog.iter_txns``, what the decoder did before the column-wise one) and written by Spark's own writer
   (``build_changes(...).write.parquet``, what it did before the pyarrow parts); txns/s of each.

Prints the txns and rows, the seconds and txns/s of both runs, and the load average at the start and the end (the
machine may be shared; nothing is asserted). ``--quick`` writes 20,000 txns over 100 topics. ``--files DIR`` skips
step 1 and reads an existing ZooKeeper data dir (chroot ``/large``). ``--keep`` keeps the work folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_offline
import bench_snapshot

from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

CLUSTER = "large"
PARTITIONS = 20
RUNS = 3


def write_logs(work: Path, txns: int, topics: int) -> tuple[Path, float]:
    """A private ZooKeeper's data dir holding a simulated cluster and ``txns`` churn txns; seconds of the churn."""
    server = ZooKeeperServer(work / "zk", port=free_port(),
                             extra_config=("snapCount=10000000", "autopurge.purgeInterval=0"), c1_only=False).start()
    try:
        hosts, sim, _ = bench_snapshot.write_cluster(server, CLUSTER, topics, PARTITIONS)
        churn_seconds = bench_offline.churn(hosts, txns, controller_multis=True)
        sim.close()
    finally:
        server.stop()
    return server.data_dir / "data", churn_seconds


def build_child(job: dict) -> dict:
    """``write_changes`` ``RUNS`` times in one local[2] session, then the baseline: seconds, txns and rows."""
    from pyspark.sql import functions as F

    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.history import changes

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers (mapInArrow) import the package
    spark = get_spark("kafka-zk-audit bench history", master="local[2]", shuffle_partitions=2)

    def measured(label: str, build: Any) -> dict:
        target = f"{job['work']}/changes-{label}"
        start = time.monotonic()
        build(target)
        seconds = time.monotonic() - start
        counts = spark.read.parquet(target).agg(F.countDistinct("zxid").alias("txns"),
                                                F.count(F.lit(1)).alias("rows")).first()
        return {"label": label, "seconds": seconds, "txns": counts["txns"], "rows": counts["rows"],
                "txns_per_s": counts["txns"] / seconds}

    runs = []
    try:
        for run in range(RUNS):
            runs.append(measured(f"run {run + 1}", lambda target: changes.write_changes(
                spark, job["data_dir"], target, chroot=f"/{CLUSTER}")))
        runs.append(measured("baseline", lambda target: one_txn_at_a_time(spark, job["data_dir"], target)))
    finally:
        spark.stop()
    return {"runs": runs}


def one_txn_at_a_time(spark: Any, data_dir: str, target: str) -> None:
    """The baseline: every txn decoded by ``txnlog.iter_txns`` into Python rows, written by Spark's writer."""
    from unittest import mock

    from kafka_zk_audit.history import changes

    with mock.patch.object(changes, "decode_log", _decode_log_per_txn):
        changes.build_changes(spark, data_dir, chroot=f"/{CLUSTER}").write.mode("overwrite").parquet(target)


def _decode_log_per_txn(content: Any, name: str, chroot: str, first_zxid: Any, last_zxid: Any, scrub: Any = None,
                        start_zxid: Any = None) -> Any:
    """``changes.decode_log`` as it was before the column-wise decoder: every txn decoded by ``iter_txns`` and
    turned into rows in Python (no window, no errors, no secret paths: the bench's logs)."""
    import pyarrow as pa

    from kafka_zk_audit.history.changes import _DECODED, _slow_rows
    from kafka_zk_audit.history.txncolumns import ROW_FIELDS
    from kafka_zk_audit.snapshot.files.txnlog import iter_txns

    append = _slow_rows(chroot.rstrip("/"))
    columns: dict[str, list] = {field: [] for field in (*ROW_FIELDS, "record")}
    for record, txn in enumerate(iter_txns(content)):
        append(txn, record, columns)
        if len(columns["zxid"]) >= 65_536:
            yield pa.RecordBatch.from_arrays([pa.array(columns[f.name], f.type) for f in _DECODED], schema=_DECODED)
            columns = {field: [] for field in columns}
    if columns["zxid"]:
        yield pa.RecordBatch.from_arrays([pa.array(columns[f.name], f.type) for f in _DECODED], schema=_DECODED)


def run_child(job: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the build failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(work: Path, txns: int, topics: int = 500, data_dir: Path | None = None) -> dict:
    """Write ``txns`` txns into a private ZooKeeper under ``work`` (unless ``data_dir`` is given), then time the
    change-table build twice in one local[2] session; the figures."""
    from kafka_zk_audit.snapshot.files.txnlog import log_files

    load_start = os.getloadavg()[0]
    churn_seconds = None
    if data_dir is None:
        data_dir, churn_seconds = write_logs(work, txns, topics)
    logs = log_files(data_dir)
    built = run_child({"data_dir": str(data_dir), "work": str(work)})
    warm = min(built["runs"][1:RUNS], key=lambda run: run["seconds"])
    baseline = built["runs"][RUNS]
    return {"txns_written": txns if churn_seconds is not None else None, "churn_seconds": churn_seconds,
            "log_files": len(logs), "log_mib": sum(path.stat().st_size for path in logs) / 2**20,
            "runs": built["runs"], "warm_txns_per_s": warm["txns_per_s"],
            "cold_txns_per_s": built["runs"][0]["txns_per_s"], "baseline_txns_per_s": baseline["txns_per_s"],
            "speedup": warm["txns_per_s"] / baseline["txns_per_s"],
            "load_average": [round(load_start, 1), round(os.getloadavg()[0], 1)]}


def report(figures: dict) -> None:
    written = (f"{figures['txns_written']:,} txns written in {figures['churn_seconds']:.1f}s; "
               if figures["churn_seconds"] is not None else "")
    print(f"\n{written}{figures['log_files']} log file(s), {figures['log_mib']:.0f} MiB; load average "
          f"{figures['load_average'][0]} → {figures['load_average'][1]} (2 cores)")
    print(f"  {'logs → change table (local[2], Parquet)':<52}{'txns':>10}{'rows':>10}{'seconds':>9}{'txns/s':>10}")
    labels = {"run 1": "run 1 (JVM and Python workers starting)", "baseline": "baseline: per-txn decode, Spark writer"}
    for run in figures["runs"]:
        label = labels.get(run["label"], f"{run['label']} (warm)")
        print(f"  {label:<52}{run['txns']:>10,}{run['rows']:>10,}{run['seconds']:>9.2f}{run['txns_per_s']:>10,.0f}")
    print(f"  warm: {figures['warm_txns_per_s']:,.0f} txns/s (target ≥ 200,000), {figures['speedup']:.1f}× the "
          "baseline in the same session")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(build_child(json.loads(sys.argv[2]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--txns", type=int, default=222_000, help="single-op txns written after the cluster")
    parser.add_argument("--topics", type=int, default=500, help="topics of the simulated cluster (× 20 partitions)")
    parser.add_argument("--quick", action="store_true", help="20,000 txns over 100 topics")
    parser.add_argument("--files", type=Path, default=None, help="an existing ZooKeeper data dir (chroot /large)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (ZooKeeper's files, the tables)")
    args = parser.parse_args()
    if args.quick:
        args.txns, args.topics = 20_000, 100
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-history-"))
    try:
        report(measure(work, args.txns, args.topics, args.files))
    finally:
        if args.keep:
            print(f"  files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
