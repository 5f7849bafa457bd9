"""Where one DAG run of the demo-shaped cluster goes, task by task, beside a bare spark-submit app in the same run.

    .venv/bin/python bench/bench_dag_tasks.py [--runs 2]

A private ZooKeeper on 127.0.0.1 holds the demo-shaped cluster (``bench/bench_all.py``'s ``DEMO``). Then, ``--runs``
times, alternated: a bare ``spark-submit`` app (``bench/bench_audit_counts.py``'s: a session, a three-row DataFrame,
its count) and one ``airflow dags test`` of the DAG on a new warehouse (``bench_all.dag_run``), with each task's time
from Airflow's metadata DB. What is neither the snapshot nor the audit app is the run's overhead: ``airflow dags
test``'s start before the first task, the gaps between tasks, and the tasks that are not data work. Prints the
medians and the ratio of the run to the bare app.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bench_all
from bench_audit_counts import BARE_APP, submit

from kafka_zk_audit_testing.simulator import Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-dag-tasks-"))
    bare_app = work / "bare_app.py"
    bare_app.write_text(BARE_APP)
    server = ZooKeeperServer(work / "zk", port=free_port()).start()
    runs, bare = [], []
    try:
        server.ensure_chroot("/demo")
        sim = Simulator(hosts=f"{server.hosts}/demo")
        sim.write(bench_all.DEMO)
        sim.close()
        print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; logs in {work}", flush=True)
        for attempt in range(args.runs):
            bare.append(submit(bare_app, [], work / f"bare-{attempt}.log"))
            run_work = work / f"run-{attempt}"
            run_work.mkdir()
            began = time.monotonic()
            run = bench_all.dag_run(server, run_work)
            run["wall"] = time.monotonic() - began
            runs.append(run)
            tasks = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in run["tasks"])
            print(f"  run {attempt + 1}: bare app {bare[-1]['wall']:.1f} s; DAG run {run['wall']:.1f} s: {tasks}",
                  flush=True)
    finally:
        server.stop()
    bare_wall = statistics.median(b["wall"] for b in bare)
    wall = statistics.median(r["wall"] for r in runs)
    by_task: dict[str, list[float]] = {}
    for run in runs:
        for name, seconds in run["tasks"]:
            by_task.setdefault(name, []).append(seconds)
    print(f"\nOne DAG run of the demo-shaped cluster (airflow dags test), medians of {args.runs}, alternated with a "
          "bare spark-submit app:\n")
    print("| part | seconds | / bare app |\n|---|---|---|")
    print(f"| bare spark-submit app | {bare_wall:.1f} | 1.00 |")
    print(f"| whole DAG run | {wall:.1f} | {wall / bare_wall:.2f} |")
    in_tasks = 0.0
    for name, values in by_task.items():
        seconds = statistics.median(values)
        in_tasks += seconds
        print(f"| task {name} | {seconds:.1f} | {seconds / bare_wall:.2f} |")
    outside = wall - in_tasks
    print(f"| outside the tasks (dags test's start, gaps) | {outside:.1f} | {outside / bare_wall:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
