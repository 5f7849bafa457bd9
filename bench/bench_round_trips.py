"""The audit's round trips to the driver JVM, with its wall and CPU time: this tree against a baseline, in one run.

    .venv/bin/python bench/bench_round_trips.py --baseline-tree DIR [--rounds 3] [--clusters 10]

Planning an audit is mostly PySpark calls into the driver JVM, each a py4j round trip (a column expression, a cast,
an alias, each column of a select, each JVM object Python releases). A private ZooKeeper on 127.0.0.1 holds
``--clusters`` demo-shaped 3.x clusters (bench/bench_jvm_archive.py's), snapshotted into one warehouse. For each
tree (``--baseline-tree``: a checkout of an older commit, its ``plugins/`` used; then this checkout), one Python
process starts a session (``local[2]``), audits all the snapshots in one batch once to warm the JVM up, then
``--rounds`` more times, each into a fresh copy of the warehouse, counting every py4j command by audit phase. CPU is
the driver JVM's (from /proc) plus the process's own. It prints the median of each tree, their ratios, and whether
both trees wrote the same findings.
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
from typing import Any

from cpu_clock import driver_cpu_clock

REPO = Path(__file__).resolve().parents[1]


def worker(tree: Path, warehouse_root: str, snapshot_ids: list[str], rounds: int, work: Path) -> dict[str, Any]:
    """In a process whose ``kafka_zk_audit`` is ``tree``'s: the counted audits."""
    from contextlib import contextmanager

    import py4j.clientserver
    import pyarrow.parquet as pq

    import kafka_zk_audit.audit.job as job
    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.contract.warehouse import Warehouse

    assert Path(job.__file__).is_relative_to(tree), f"{job.__file__} is not under {tree}"
    calls = [0]
    send = py4j.clientserver.ClientServerConnection.send_command

    def counted(self: Any, command: str) -> Any:
        calls[0] += 1
        return send(self, command)

    py4j.clientserver.ClientServerConnection.send_command = counted
    phases: dict[str, int] = {}
    timed = job.PhaseClock.phase

    @contextmanager
    def phase(self: Any, name: str) -> Any:
        before = calls[0]
        with timed(self, name):
            yield
        phases[name] = phases.get(name, 0) + calls[0] - before

    job.PhaseClock.phase = phase
    spark = get_spark("bench-round-trips", master="local[2]")
    cpu = driver_cpu_clock(spark)

    runs = []
    for attempt in range(rounds + 1):
        copy = work / f"wh-{attempt}"
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir(parents=True)
        shutil.copytree(Path(warehouse_root) / "snapshots", copy / "snapshots")
        phases.clear()
        start_calls, start_cpu, start = calls[0], cpu(), time.monotonic()
        job.run_audit(spark, Warehouse(str(copy)), snapshot_ids, None)
        runs.append({"wall": time.monotonic() - start, "cpu": cpu() - start_cpu, "calls": calls[0] - start_calls,
                     "phases": dict(phases)})
    findings = pq.read_table(copy / "findings", partitioning=None, columns=["snapshot_id", "check_id", "path",
                                                                           "detail"]).to_pylist()
    return {"warm_up": runs[0], "runs": runs[1:], "findings": sorted(json.dumps(f, sort_keys=True) for f in findings)}


def measure(tree: Path, warehouse_root: str, snapshot_ids: list[str], rounds: int, work: Path) -> dict[str, Any]:
    """``worker`` in a fresh Python process with ``tree``'s ``plugins/`` first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "plugins"), str(REPO / "bench")]),
           "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    work.mkdir(parents=True, exist_ok=True)
    out, log = work / "result.json", work / "worker.log"
    with open(log, "w") as stderr:
        subprocess.run([sys.executable, __file__, "--worker", str(tree), warehouse_root, json.dumps(snapshot_ids),
                        str(rounds), str(work), str(out)], env=env, stdout=stderr, stderr=subprocess.STDOUT,
                       check=True, cwd=work)
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-tree", type=Path, help="a checkout of an older commit (required)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tree, root, ids, rounds, work, out = args.worker
        result = worker(Path(tree), root, json.loads(ids), int(rounds), Path(work))
        Path(out).write_text(json.dumps(result))
        return 0
    if args.baseline_tree is None:
        parser.error("--baseline-tree DIR is required: a checkout of the commit to compare with")

    from bench_jvm_archive import fleet_warehouse

    work, warehouse, ids = fleet_warehouse(args.clusters, "kafka-zk-audit-bench-round-trips-")
    print(f"{len(ids)} demo-shaped snapshots, audited in one batch, in-process local[2], warm, {args.rounds} rounds "
          f"per tree; {os.cpu_count()} cores; logs in {work}", flush=True)
    trees = {"baseline": args.baseline_tree.resolve(), "this tree": REPO}
    results = {}
    for label, tree in trees.items():
        results[label] = measure(tree, warehouse.root, ids, args.rounds, work / label.replace(" ", "-"))
        runs = results[label]["runs"]
        print(f"  {label}: " + ", ".join(f"{r['wall']:.1f} s / {r['cpu']:.1f} CPU-s / {r['calls']:,} calls"
                                         for r in runs), flush=True)
    base, this = results["baseline"]["runs"], results["this tree"]["runs"]
    print("\n| per audit (median) | baseline | this tree | ratio |\n|---|---|---|---|")
    for key, label in (("calls", "JVM round trips"), ("wall", "wall s"), ("cpu", "CPU s (JVM + Python)")):
        before, after = statistics.median(r[key] for r in base), statistics.median(r[key] for r in this)
        print(f"| {label} | {before:,.1f} | {after:,.1f} | {after / before:.2f} |")
    for name in base[0]["phases"]:
        before = statistics.median(r["phases"].get(name, 0) for r in base)
        after = statistics.median(r["phases"].get(name, 0) for r in this)
        print(f"| round trips: {name} | {before:,.0f} | {after:,.0f} | {after / max(before, 1):.2f} |")
    same = results["baseline"]["findings"] == results["this tree"]["findings"]
    print(f"\nthe same findings from both trees: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
