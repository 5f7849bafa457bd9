"""Reaudit throughput: N stored snapshots of one simulated cluster re-audited in one Spark app.

    .venv/bin/python bench/bench_reaudit.py [--snapshots 30] [--topics 2300] [--partitions 20]
                                            [--masters local,standalone]

It starts a private ZooKeeper on 127.0.0.1, writes a 3.x cluster with the simulator (2,300 topics of 20
partitions: about 100,000 znodes), and takes --snapshots real snapshots of it, letting time pass between
them (controller moves, leader elections, offsets growing). Then it runs ``kafka-zk-audit reaudit`` over
them on ``local[2]`` and on a Spark standalone master with two workers of one core each (both on
loopback), and prints wall time (command start to exit, JVM start-up included), the app's own time, and
snapshots/s and znodes/s for each. Target: 30 snapshots of 100k znodes in under 3 minutes on local[2].
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.spark_cluster import standalone_cluster
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

CLI = Path(sys.executable).parent / "kafka-zk-audit"
CLUSTER = "bench"


def store_snapshots(server: ZooKeeperServer, warehouse: Warehouse, count: int, topics: int, partitions: int) -> int:
    """Write the cluster and take ``count`` snapshots of it, time passing between them; returns znodes each."""
    chroot = "/bench"
    server.ensure_chroot(chroot)
    spec = ClusterSpec(era="3.x", brokers=30, racks=3, topics=topics, partitions=partitions, replication_factor=3,
                       groups=10, consumers_per_group=2, threads_per_consumer=2, seed=1)
    sim = Simulator(hosts=server.hosts + chroot)
    znodes = 0
    try:
        sim.write(spec)
        client = KazooClient(hosts=server.hosts + chroot, timeout=30)
        client.start(timeout=30)
        try:
            for index in range(count):
                if index:
                    sim.advance()
                started = time.monotonic()
                manifest = write_snapshot(client, ZkSettings(hosts=server.hosts, chroot=chroot), warehouse,
                                          new_snapshot_id(suffix=f"{CLUSTER}-{index:03d}"),
                                          SnapshotOptions(reads_per_second=0), cluster=CLUSTER)
                znodes = manifest["znodes"]
                print(f"  snapshot {index + 1}/{count}: {znodes:,} znodes in {time.monotonic() - started:.1f}s",
                      flush=True)
        finally:
            client.stop()
            client.close()
    finally:
        sim.close()
    return znodes


def run_reaudit(warehouse: Warehouse, master: str, log: Path) -> dict:
    """``kafka-zk-audit reaudit --json`` on ``master``; its summary with the wall time."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    start = time.monotonic()
    with log.open("w") as err:
        proc = subprocess.run([str(CLI), "reaudit", "--warehouse", warehouse.root, "--cluster", CLUSTER,
                               "--spark-master", master, "--json"], env=env, stdout=subprocess.PIPE, stderr=err,
                              text=True)
    wall = time.monotonic() - start
    if proc.returncode:
        raise SystemExit(f"the reaudit on {master} failed (exit {proc.returncode}); see {log}")
    return {**json.loads(proc.stdout), "wall": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshots", type=int, default=30)
    parser.add_argument("--topics", type=int, default=2300)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--masters", default="local,standalone", help="local (local[2]) and/or standalone")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-reaudit-"))
    warehouse = Warehouse(str(work / "wh"))
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=4096, c1_only=False).start()
    try:
        print(f"storing {args.snapshots} snapshots of {args.topics} topics × {args.partitions} partitions ...",
              flush=True)
        znodes = store_snapshots(server, warehouse, args.snapshots, args.topics, args.partitions)
    finally:
        server.stop()
    results = {}
    for name in args.masters.split(","):
        print(f"reaudit on {name} ...", flush=True)
        if name == "local":
            results["local[2]"] = run_reaudit(warehouse, "local[2]", work / "reaudit-local.log")
        elif name == "standalone":
            with standalone_cluster(work / "spark", cores=1, memory="2g", workers=2) as master:
                results["standalone, 2 workers × 1 core"] = run_reaudit(warehouse, master,
                                                                         work / "reaudit-standalone.log")
        else:
            raise SystemExit(f"unknown master {name!r}")
    timelines = {name: sorted(json.dumps(s["checks"], sort_keys=True) for s in r["snapshots"])
                 for name, r in results.items()}
    if len({json.dumps(t) for t in timelines.values()}) > 1:
        raise SystemExit("the masters disagree on the findings")
    print(f"\nreaudit of {args.snapshots} snapshots of {znodes:,} znodes ({os.cpu_count()} cores), same findings "
          "on every master:")
    print(f"  {'master':<32}{'wall s':>9}{'app s':>8}{'snapshots/s':>13}{'znodes/s':>11}{'s/snapshot':>12}")
    for name, r in results.items():
        total = sum(s["znodes"] for s in r["snapshots"])
        print(f"  {name:<32}{r['wall']:>9.1f}{r['seconds']:>8.1f}{len(r['snapshots']) / r['wall']:>13.3f}"
              f"{total / r['wall']:>11,.0f}{r['wall'] / len(r['snapshots']):>12.2f}")
    per_snapshot = [s["seconds"] for r in results.values() for s in r["snapshots"][1:]]
    if per_snapshot:
        print(f"  in the app, per snapshot after the first: {min(per_snapshot):.1f}–{max(per_snapshot):.1f} s")
    local = results.get("local[2]")
    if local and args.snapshots >= 30 and znodes >= 95_000:
        verdict = "met" if local["wall"] < 180 else "NOT met"
        print(f"  target (30 × 100k znodes in < 3 min on local[2]): {verdict} ({local['wall']:.0f} s)")
    print(f"work folder: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
