"""A session that hosts many audits: the apps' C1-only driver JIT against the full tiered JIT, in the same run.

    .venv/bin/python bench/bench_session_jit.py [--audits 8] [--clusters 1]

A private ZooKeeper on 127.0.0.1 holds ``--clusters`` demo-shaped 3.x clusters (bench/bench_all.py's), snapshotted
into one warehouse. Then, for each JIT, a new Python process starts its own Spark session (``get_spark``, local[2],
as the tests' shared session is started) and audits those snapshots ``--audits`` times in a row, each time on a fresh
copy of the warehouse (``job.run_audit``, the audit app's code, in process):

1. ``app``: ``long_lived=False``, the driver options spark-submit gives the apps (``-XX:TieredStopAtLevel=1``, C1
   only): the baseline;
2. ``long_lived``: ``long_lived=True`` (``LONG_LIVED_DRIVER_JAVA_OPTIONS``: the JVM's full tiered JIT, C2 included).

It prints the wall and CPU seconds (the Python process and its JVM) of every audit, the totals, the medians of the
second half (the warm audits) and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_jvm_archive import fleet_warehouse
from cpu_clock import driver_cpu_clock


def child(args: argparse.Namespace) -> int:
    """One session (``args.child``: ``app`` or ``long_lived``) auditing the snapshots ``args.audits`` times: one JSON
    line of wall and CPU seconds per audit."""
    from kafka_zk_audit.audit.job import run_audit
    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.contract.warehouse import Warehouse

    spark = get_spark("bench-session-jit", master="local[2]", shuffle_partitions=2, driver_memory="2g",
                      long_lived=args.child == "long_lived")
    cpu_clock = driver_cpu_clock(spark)
    ids = args.snapshot_ids.split(",")
    work = Path(args.work)
    for number in range(args.audits):
        copy = work / f"{args.child}-{number}"
        shutil.copytree(args.warehouse, copy)
        start, cpu = time.monotonic(), cpu_clock()
        run_audit(spark, Warehouse(str(copy)), ids, None)
        wall = time.monotonic() - start
        cpu = cpu_clock() - cpu
        print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)
        shutil.rmtree(copy)
    spark.stop()
    return 0


def session(mode: str, args: argparse.Namespace, warehouse: str, ids: list[str], work: Path) -> list[dict]:
    """The audits of one session in a new process: their wall and CPU seconds."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    command = [sys.executable, __file__, "--child", mode, "--audits", str(args.audits), "--warehouse", warehouse,
               "--snapshot-ids", ",".join(ids), "--work", str(work)]
    log = work / f"{mode}.log"
    with log.open("w") as err:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the {mode} session failed (exit {done.returncode}); see {log}")
    rounds = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for number, audit in enumerate(rounds, 1):
        print(f"  {mode:>10} audit {number}: wall {audit['wall']:.1f} s, CPU {audit['cpu']:.1f} s", flush=True)
    return rounds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--audits", type=int, default=8)
    parser.add_argument("--clusters", type=int, default=1)
    parser.add_argument("--child", choices=("app", "long_lived"))
    parser.add_argument("--warehouse")
    parser.add_argument("--snapshot-ids")
    parser.add_argument("--work")
    args = parser.parse_args()
    if args.child:
        return child(args)
    work, warehouse, ids = fleet_warehouse(args.clusters, "kafka-zk-audit-bench-jit-")
    print(f"{len(ids)} demo-shaped snapshot(s), {args.audits} audits in each of two sessions (local[2], "
          f"{os.cpu_count()} cores)", flush=True)
    runs = {mode: session(mode, args, warehouse.root, ids, work) for mode in ("app", "long_lived")}
    warm = args.audits // 2
    print("\n| one session, all audits | C1 only (the apps' options) | full tiered (long_lived) | ratio |")
    print("|---|---|---|---|")
    for what, label in (("wall", "wall s, total"), ("cpu", "CPU s, total")):
        before, after = (sum(a[what] for a in runs[mode]) for mode in ("app", "long_lived"))
        print(f"| {label} | {before:.1f} | {after:.1f} | {after / before:.2f} |")
    for what, label in (("wall", f"wall s, median of audits {warm + 1}-{args.audits}"),
                        ("cpu", f"CPU s, median of audits {warm + 1}-{args.audits}")):
        before, after = (statistics.median(a[what] for a in runs[mode][warm:]) for mode in ("app", "long_lived"))
        print(f"| {label} | {before:.1f} | {after:.1f} | {after / before:.2f} |")
    print(f"\nlogs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
