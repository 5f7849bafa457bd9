"""Does a long-lived Spark Connect server make the event-driven audit faster than a cold spark-submit app?

    .venv/bin/python bench/bench_connect.py [--rounds 3] [--topics 8 --partitions 4 --brokers 3] [--write-docs]

A private ZooKeeper on 127.0.0.1 holds one simulated 3.x cluster (``bench/profile_audit.py``'s), snapshotted into a
warehouse. The package's Spark Connect server (``kafka_zk_audit.audit.connect.ConnectServer``, what
``kafka-zk-audit connect-server start`` runs) is started once, as the long-lived component is, and its start is timed
until it answers a Spark Connect ping. One audit through it warms its JVM up (the first event after the server
starts). Then, ``--rounds`` times, alternated: the cold audit app (spark-submit, as the DAG's default audit task runs
it) and an audit through the warm server from a fresh Python process running what the event DAG's Connect audit task
runs (``connect_session`` + ``audit_snapshots``: the imports, a new session, the audit), each on a fresh warehouse,
wall and CPU of the processes this bench starts (the server's CPU read from /proc). The figures of both paths are
compared, with their findings. ``--write-docs`` replaces the block between ``<!-- bench_connect:begin -->`` and
``<!-- bench_connect:end -->`` in docs/performance.md with the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_audit_counts import app_env, children_cpu, fresh_warehouse, snapshotted, submit
from cpu_clock import stat_cpu

REPO = Path(__file__).resolve().parents[1]
PERFORMANCE = REPO / "docs" / "performance.md"
BLOCK_BEGIN, BLOCK_END = "<!-- bench_connect:begin -->", "<!-- bench_connect:end -->"


def process_cpu(pid: int) -> float:
    """CPU seconds so far of a running process and its finished, waited-for children (from /proc)."""
    return stat_cpu(Path(f"/proc/{pid}/stat").read_text(), children=True)


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if int(proc.name) == pid or _descends(int(proc.name), pid, parent):
                total += process_cpu(int(proc.name))
        except (OSError, ValueError):
            continue
    return total


def _descends(pid: int, ancestor: int, parent: int) -> bool:
    seen = 0
    while parent > 1 and seen < 20:
        if parent == ancestor:
            return True
        try:
            parent = int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            return False
        seen += 1
    return False


def start_server(work: Path) -> tuple[Any, float]:
    """The package's Connect server on a free loopback port; returns it and the seconds until it answered a ping."""
    from kafka_zk_audit.audit.connect import ConnectServer
    from kafka_zk_audit_testing.zk_server import free_port

    began = time.monotonic()
    server = ConnectServer(work / "connect-server", port=free_port()).start()
    return server, time.monotonic() - began


def client(url: str, root: str, snapshot_id: str) -> int:
    """One audit through the Connect server at ``url`` (run in a fresh process), as the event DAG's Connect audit
    task runs it: prints its findings count."""
    from kafka_zk_audit.audit.job import audit_snapshots
    from kafka_zk_audit.audit.session import connect_session
    from kafka_zk_audit.contract.warehouse import Warehouse

    with connect_session(url) as spark:
        results, failed = audit_snapshots(spark, Warehouse(root), [snapshot_id], None)
    if failed:
        return 1
    print("bench-connect " + json.dumps({sid: r["findings"] for sid, r in results.items()}), flush=True)
    return 0


def run_client(url: str, root: str, snapshot_id: str, log: Path) -> dict[str, Any]:
    launched, cpu = time.monotonic(), children_cpu()
    with log.open("wb") as out:
        code = subprocess.run([sys.executable, __file__, "--client", url, root, snapshot_id], stdout=out,
                              stderr=subprocess.STDOUT, env=app_env()).returncode
    if code != 0:
        raise SystemExit(f"the Connect client failed (exit {code}); see {log}")
    found = next(line for line in log.read_text().splitlines() if line.startswith("bench-connect "))
    return {"wall": time.monotonic() - launched, "cpu": children_cpu() - cpu,
            "findings": json.loads(found.split(" ", 1)[1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--client", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--write-docs", action="store_true",
                        help="replace the bench_connect block of docs/performance.md with this run's table")
    args = parser.parse_args()
    if args.client:
        return client(*args.client)

    work, warehouse, snapshot_id = snapshotted("connect", args)
    snapshots = Path(warehouse.snapshot_dir(snapshot_id)).parent
    load = os.getloadavg()[0]
    print(f"snapshot {snapshot_id}; {os.cpu_count()} cores, load {load:.1f}; logs in {work}", flush=True)
    server, started = start_server(work)
    cold, warm = [], []
    try:
        server_cpu = tree_cpu(server.pid)
        print(f"  Connect server up in {started:.1f} s ({server_cpu:.1f} CPU-s)", flush=True)
        first = run_client(server.url, fresh_warehouse(work, snapshots, "connect-first"), snapshot_id,
                           work / "first.log")
        print(f"  first audit through the server: {first['wall']:.1f} s", flush=True)
        for attempt in range(args.rounds):
            root = fresh_warehouse(work, snapshots, f"cold-{attempt}")
            app = REPO / "spark_apps" / "audit_snapshot.py"
            cold.append(submit(app, ["--warehouse", root, "--snapshot-id", snapshot_id], work / f"cold-{attempt}.log"))
            before = tree_cpu(server.pid)
            run = run_client(server.url, fresh_warehouse(work, snapshots, f"warm-{attempt}"), snapshot_id,
                             work / f"warm-{attempt}.log")
            run["cpu"] += tree_cpu(server.pid) - before
            warm.append(run)
            print(f"  round {attempt + 1}: cold spark-submit {cold[-1]['wall']:.1f} s / {cold[-1]['cpu']:.1f} CPU-s, "
                  f"warm Connect server {run['wall']:.1f} s / {run['cpu']:.1f} CPU-s", flush=True)
    finally:
        server.stop()
    findings = json.loads(Path(work / "cold-0" / "runs" / snapshot_id / "audit.json").read_text())["findings"]
    same = all(run["findings"] == {snapshot_id: findings} for run in [first, *warm])
    table = figures_table(cold, warm, started, first, args.rounds)
    print("\n" + table)
    print(f"\nthe same findings on both paths: {same}")
    if args.write_docs and same:
        where = (f"Measured by `bench/bench_connect.py --rounds {args.rounds}` on {datetime.date.today()} at commit "
                 f"`{commit()}`, {os.cpu_count()} cores, load average {load:.1f} at its start")
        replace_block(PERFORMANCE, f"{where}; the same findings on both paths ({findings} findings).\n\n{table}\n")
    shutil.rmtree(work / "zk", ignore_errors=True)
    return 0 if same else 1


def figures_table(cold: list[dict[str, Any]], warm: list[dict[str, Any]], started: float, first: dict[str, Any],
                  rounds: int) -> str:
    cold_wall, warm_wall = statistics.median(r["wall"] for r in cold), statistics.median(r["wall"] for r in warm)
    cold_cpu, warm_cpu = statistics.median(r["cpu"] for r in cold), statistics.median(r["cpu"] for r in warm)
    return "\n".join([
        f"| audit of one small snapshot, medians of {rounds} alternated | wall | CPU (client + server) |",
        "|---|---|---|",
        f"| cold spark-submit app (the default audit task) | {cold_wall:.1f} s | {cold_cpu:.1f} s |",
        f"| fresh client on a warm Connect server (the event DAG's Connect audit task) | {warm_wall:.1f} s "
        f"(**{warm_wall / cold_wall:.2f}×**) | {warm_cpu:.1f} s ({warm_cpu / cold_cpu:.2f}×) |",
        f"| Connect server start until it answers a ping (once); the first audit through it | {started:.1f} s; "
        f"{first['wall']:.1f} s | – |",
    ])


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def replace_block(path: Path, text: str) -> None:
    content = path.read_text()
    begin, end = content.index(BLOCK_BEGIN) + len(BLOCK_BEGIN), content.index(BLOCK_END)
    path.write_text(content[:begin] + "\n" + text + content[end:])


if __name__ == "__main__":
    sys.exit(main())
