"""The audit Spark app's time by tree size, with baselines from the same run.

    .venv/bin/python bench/bench_audit.py [--sizes 20,2300] [--large 25000] [--partitions 20]

For each size (topics of a simulated 3.x cluster with --partitions partitions each) it starts from a
private ZooKeeper on 127.0.0.1, writes the cluster with the simulator, takes a snapshot (multiRead)
and runs ``spark_apps/audit_snapshot.py`` with spark-submit (``local[*]``), as the DAG's audit task
does. It prints wall time (spark-submit start to exit, JVM start-up included), the app's own figure and
the marginal cost per znode over the smallest tree. ``--large`` adds one more size (about 1,000,000
znodes with the default 25,000 topics). The cost of many snapshots in one app is bench/bench_fleet.py's.
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

from kafka_zk_audit.audit.session import submit_conf
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parents[1]
SPARK_APP = REPO / "spark_apps" / "audit_snapshot.py"


def snapshot_cluster(server: ZooKeeperServer, name: str, topics: int, partitions: int, warehouse: Warehouse) -> str:
    """Write a simulated cluster under /<name> and snapshot it; returns the snapshot id."""
    server.ensure_chroot(f"/{name}")
    spec = ClusterSpec(era="3.x", brokers=30, racks=3, topics=topics, partitions=partitions, replication_factor=3,
                       groups=10, consumers_per_group=2, threads_per_consumer=2, seed=1)
    sim = Simulator(hosts=f"{server.hosts}/{name}")
    try:
        sim.write(spec)
        client = KazooClient(hosts=f"{server.hosts}/{name}", timeout=30)
        client.start(timeout=30)
        try:
            snapshot_id = new_snapshot_id(suffix=name)
            write_snapshot(client, ZkSettings(hosts=server.hosts, chroot=f"/{name}"), warehouse, snapshot_id,
                           SnapshotOptions())
        finally:
            client.stop()
            client.close()
    finally:
        sim.close()
    return snapshot_id


def run_app(warehouse: Warehouse, snapshot_id: str, log_dir: Path) -> dict:
    """spark-submit the audit app once; returns wall seconds and the app's audit.json figures."""
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    confs = [item for key, value in submit_conf().items() for item in ("--conf", f"{key}={value}")]
    args = [str(spark_submit), "--master", "local[*]", *confs, str(SPARK_APP),
            "--warehouse", warehouse.root, "--snapshot-id", snapshot_id]
    log = log_dir / f"{snapshot_id}.log"
    start = time.monotonic()
    with log.open("wb") as out:
        code = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    wall = time.monotonic() - start
    if code != 0:
        raise SystemExit(f"the audit app failed (exit {code}); see {log}")
    figures = json.loads(Path(warehouse.run_dir(snapshot_id), "audit.json").read_text())
    return {"wall": wall, "app": figures["seconds"], "findings": figures["findings"], "checks": figures["checks"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20,2300", help="topic counts run both ways (comma-separated)")
    parser.add_argument("--large", type=int, default=0, help="topics of one more size, run as shipped only")
    parser.add_argument("--partitions", type=int, default=20)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-audit-"))
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=6144, c1_only=False).start()
    rows = []
    try:
        sizes = [int(t) for t in args.sizes.split(",") if t] + ([args.large] if args.large else [])
        for topics in sizes:
            warehouse = Warehouse(str(work / f"wh-{topics}"))
            snapshot_id = snapshot_cluster(server, f"t{topics}", topics, args.partitions, warehouse)
            znodes = json.loads(Path(warehouse.manifest_path(snapshot_id)).read_text())["znodes"]
            print(f"{topics} topics: {znodes:,} znodes; auditing ...", flush=True)
            rows.append((topics, znodes, run_app(warehouse, snapshot_id, work)))
    finally:
        server.stop()
    smallest = rows[0]
    print(f"\naudit Spark app (spark-submit local[*], {os.cpu_count()} cores):")
    print(f"  {'znodes':>10}{'wall s':>9}{'app s':>8}{'µs/znode over smallest':>25}")
    for _topics, znodes, shipped in rows:
        marginal = ""
        if znodes > smallest[1]:
            marginal = f"{(shipped['wall'] - smallest[2]['wall']) / (znodes - smallest[1]) * 1e6:.0f}"
        print(f"  {znodes:>10,}{shipped['wall']:>9.1f}{shipped['app']:>8.1f}{marginal:>25}")
    print(f"\nlogs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
