"""Snapshot throughput and client memory on a real ZooKeeper, with baselines from the same run.

    .venv/bin/python bench/bench_snapshot.py [--topics 25000] [--partitions 20] [--small-topics 2300]

1. Starts a private ZooKeeper on 127.0.0.1 and writes a simulated Kafka cluster (~1,000,000 znodes
   with the defaults) with the simulator, reporting the write rate.
2. On a small cluster (~100,000 znodes) it reads the whole tree with each reader, each in its own
   process (so the reported peak RSS is that reader's): the naive synchronous walk (get_children +
   get per znode; stopped after --naive-seconds), the pipelined single-operation walk (kazoo async,
   the fallback for servers < 3.6) and the multiRead walk, and prints rates and ratios.
3. On the large cluster it runs the multiRead snapshot and prints rate and peak RSS, to show that
   client memory stays flat as the tree grows.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

CHILD = r"""
import json, resource, sys, time
from kazoo.client import KazooClient
mode, hosts, warehouse, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
client = KazooClient(hosts=hosts, timeout=30)
client.start()
start = time.monotonic()
if mode == "naive":
    count, stack = 0, ["/"]
    while stack and time.monotonic() - start < seconds:
        path = stack.pop()
        client.get(path)
        count += 1
        for child in client.get_children(path):
            stack.append(("" if path == "/" else path) + "/" + child)
    znodes = count
else:
    from kafka_zk_audit.snapshot.walker import SnapshotOptions, write_snapshot
    from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
    from kafka_zk_audit.snapshot.connection import ZkSettings, split_hosts_and_chroot
    h, c = split_hosts_and_chroot(hosts)
    manifest = write_snapshot(client, ZkSettings(hosts=h, chroot=c), Warehouse(warehouse),
                              new_snapshot_id(suffix=mode), SnapshotOptions(read_mode=mode))
    znodes = manifest["znodes"]
elapsed = time.monotonic() - start
client.stop()
print(json.dumps({"mode": mode, "znodes": znodes, "seconds": elapsed,
                  "rate": znodes / elapsed, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def read_in_child(mode: str, hosts: str, warehouse: Path, seconds: float = 0.0) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, hosts, str(warehouse), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_cluster(hosts: str, spec: ClusterSpec) -> tuple[Simulator, float]:
    sim = Simulator(hosts=hosts)
    start = time.monotonic()
    sim.write(spec)
    elapsed = time.monotonic() - start
    return sim, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=25000, help="topics of the large cluster")
    parser.add_argument("--small-topics", type=int, default=2300, help="topics of the small cluster")
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--naive-seconds", type=float, default=20.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-"))
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=6144).start()
    rows = []
    try:

        def cluster(name: str, topics: int) -> tuple[str, Simulator, float]:
            hosts = f"{server.hosts}/{name}"
            spec = ClusterSpec(
                era="3.x",
                brokers=30,
                racks=3,
                topics=topics,
                partitions=args.partitions,
                replication_factor=3,
                groups=10,
                consumers_per_group=2,
                threads_per_consumer=2,
                seed=1,
            )
            setup = KazooClient(hosts=server.hosts)
            setup.start()
            setup.ensure_path(f"/{name}")
            setup.stop()
            sim, seconds = write_cluster(hosts, spec)
            return hosts, sim, seconds

        small_hosts, small_sim, _ = cluster("small", args.small_topics)
        small = {
            mode: read_in_child(mode, small_hosts, work / "wh", args.naive_seconds if mode == "naive" else 0)
            for mode in ("naive", "single", "multi")
        }
        small_sim.close()
        large_hosts, large_sim, write_seconds = cluster("large", args.topics)
        large = read_in_child("multi", large_hosts, work / "wh")
        large_sim.close()
        print(
            f"\nwrite (simulator, large cluster): {large['znodes']:,} znodes in {write_seconds:.1f}s "
            f"= {large['znodes'] / write_seconds:,.0f} creates/s"
        )
        print(f"\nread, small cluster ({small['multi']['znodes']:,} znodes), each reader in its own process:")
        base = small["naive"]["rate"]
        print(f"  {'reader':<44}{'znodes':>10}{'seconds':>9}{'znodes/s':>11}{'x naive':>9}{'peak RSS':>10}")
        labels = {
            "naive": "naive synchronous walk (baseline)",
            "single": "pipelined single-op walk (kazoo async)",
            "multi": "multiRead walk (this project's default)",
        }
        for mode, row in small.items():
            rows.append(row)
            print(
                f"  {labels[mode]:<44}{row['znodes']:>10,}{row['seconds']:>9.1f}{row['rate']:>11,.0f}"
                f"{row['rate'] / base:>9.1f}{row['peak_rss_mb']:>8.0f}MB"
            )
        print(
            f"\nread, large cluster: {large['znodes']:,} znodes in {large['seconds']:.1f}s = "
            f"{large['rate']:,.0f} znodes/s ({large['rate'] / base:.0f}x naive), "
            f"peak RSS {large['peak_rss_mb']:.0f} MB "
            f"(small cluster: {small['multi']['peak_rss_mb']:.0f} MB for {small['multi']['znodes']:,} znodes)"
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
