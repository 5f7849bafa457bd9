"""Would a long-lived Spark Connect server make the event-driven audit faster than a cold spark-submit app?

    .venv/bin/python bench/bench_connect.py [--rounds 3] [--topics 8 --partitions 4 --brokers 3]

A private ZooKeeper on 127.0.0.1 holds one simulated 3.x cluster (``bench/profile_audit.py``'s), snapshotted into a
warehouse. A Spark Connect server (``org.apache.spark.sql.connect.service.SparkConnectServer`` through
spark-submit, ``local[*]``, the audit task's --conf) is started once, as a long-lived component would be, and its
start is timed until its port answers. One audit through it warms its JVM up (the first event after the server
starts). Then, ``--rounds`` times, alternated: the cold audit app (spark-submit, as the DAG's audit task runs it) and
an audit through the warm server from a fresh Python process (imports, the session, the audit: what an event-driven
audit task would run), each on a fresh warehouse, wall and CPU of the processes this bench starts (the server's CPU
read from /proc). The figures of both paths are compared, with their findings.

The audit code reaches the classic session's JVM in two places, neither needed for the audit's result: the phase
clock's job counter and the collected tables' task count. The client stubs both (the measurement only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_audit_counts import app_env, children_cpu, fresh_warehouse, snapshotted, submit

REPO = Path(__file__).resolve().parents[1]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def process_cpu(pid: int) -> float:
    """CPU seconds so far of a running process and its finished, waited-for children (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


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


def start_server(port: int, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """The Connect server through spark-submit; returns it and the seconds until its port answered."""
    from kafka_zk_audit.audit.session import submit_conf

    confs = [item for key, value in {**submit_conf(), "spark.connect.grpc.binding.port": str(port),
                                     "spark.connect.grpc.binding.address": "127.0.0.1"}.items()
             for item in ("--conf", f"{key}={value}")]
    args = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[*]", *confs, "--class",
            SERVER_CLASS, "spark-internal"]
    began = time.monotonic()
    server = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=app_env(),
                              start_new_session=True)
    while time.monotonic() - began < 180:
        if server.poll() is not None:
            raise SystemExit(f"the Connect server exited ({server.returncode}); see {log}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return server, time.monotonic() - began
        time.sleep(0.2)
    raise SystemExit(f"the Connect server did not answer in 180 s; see {log}")


def client(url: str, root: str, snapshot_id: str) -> int:
    """One audit through the Connect server at ``url`` (run in a fresh process): prints its findings count."""
    from pyspark.sql import SparkSession

    import kafka_zk_audit.audit.job as job
    import kafka_zk_audit.audit.keyed_io as keyed_io
    from kafka_zk_audit.contract.warehouse import Warehouse

    job.PhaseClock.__init__ = lambda self, spark: setattr(self, "phases", {})  # type: ignore[method-assign]
    job.PhaseClock._jobs = lambda self: 0  # type: ignore[method-assign]
    connect_session = type(SparkSession.builder.remote(url).getOrCreate())
    connect_session.sparkContext = property(lambda self: type("Context", (), {"defaultParallelism": 2})())
    spark = SparkSession.builder.remote(url).getOrCreate()
    assert keyed_io.collect_all_at_once
    results = job.run_audit(spark, Warehouse(root), [snapshot_id], None)
    print("bench-connect " + json.dumps({sid: r["findings"] for sid, r in results.items()}), flush=True)
    return 0


def run_client(url: str, root: str, snapshot_id: str, log: Path) -> dict[str, Any]:
    launched, cpu = time.monotonic(), children_cpu()
    with log.open("wb") as out:
        code = subprocess.run([sys.executable, __file__, "--client", url, root, snapshot_id], stdout=out,
                              stderr=subprocess.STDOUT, env={**app_env(), "SPARK_CONNECT_MODE_ENABLED": "1"}).returncode
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
    args = parser.parse_args()
    if args.client:
        return client(*args.client)


    from kafka_zk_audit_testing.zk_server import free_port

    work, warehouse, snapshot_id = snapshotted("connect", args)
    snapshots = Path(warehouse.snapshot_dir(snapshot_id)).parent
    print(f"snapshot {snapshot_id}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; logs in {work}", flush=True)
    port = free_port()
    server, started = start_server(port, work / "server.log")
    url = f"sc://127.0.0.1:{port}"
    cold, warm = [], []
    try:
        server_cpu = tree_cpu(server.pid)
        print(f"  Connect server up in {started:.1f} s ({server_cpu:.1f} CPU-s)", flush=True)
        first = run_client(url, fresh_warehouse(work, snapshots, "connect-first"), snapshot_id, work / "first.log")
        print(f"  first audit through the server: {first['wall']:.1f} s", flush=True)
        for attempt in range(args.rounds):
            root = fresh_warehouse(work, snapshots, f"cold-{attempt}")
            app = REPO / "spark_apps" / "audit_snapshot.py"
            cold.append(submit(app, ["--warehouse", root, "--snapshot-id", snapshot_id], work / f"cold-{attempt}.log"))
            before = tree_cpu(server.pid)
            run = run_client(url, fresh_warehouse(work, snapshots, f"warm-{attempt}"), snapshot_id,
                             work / f"warm-{attempt}.log")
            run["cpu"] += tree_cpu(server.pid) - before
            warm.append(run)
            print(f"  round {attempt + 1}: cold spark-submit {cold[-1]['wall']:.1f} s / {cold[-1]['cpu']:.1f} CPU-s, "
                  f"warm Connect server {run['wall']:.1f} s / {run['cpu']:.1f} CPU-s", flush=True)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    findings = json.loads(Path(work / "cold-0" / "runs" / snapshot_id / "audit.json").read_text())["findings"]
    same = all(run["findings"] == {snapshot_id: findings} for run in [first, *warm])
    cold_wall, warm_wall = statistics.median(r["wall"] for r in cold), statistics.median(r["wall"] for r in warm)
    cold_cpu, warm_cpu = statistics.median(r["cpu"] for r in cold), statistics.median(r["cpu"] for r in warm)
    print(f"\n| audit of one small snapshot, medians of {args.rounds} alternated | wall | CPU (client + server) |"
          "\n|---|---|---|")
    print(f"| cold spark-submit app | {cold_wall:.1f} s | {cold_cpu:.1f} s |")
    print(f"| fresh client on a warm Connect server | {warm_wall:.1f} s ({warm_wall / cold_wall:.2f}×) | "
          f"{warm_cpu:.1f} s ({warm_cpu / cold_cpu:.2f}×) |")
    print(f"| Connect server start (once), first audit through it | {started:.1f} s, {first['wall']:.1f} s | – |")
    print(f"\nthe same findings on both paths: {same}")
    shutil.rmtree(work / "zk", ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
