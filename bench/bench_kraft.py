"""The KRaft source against its targets, with its baselines from the same run.

    .venv/bin/python bench/bench_kraft.py [--records 1000000] [--partitions 100000] [--topics 40] [--repeat 3]
                                          [--quick] [--json FILE]

1. The real metadata dirs of ``../shared/real-data/kraft``: records decoded (the pre-release records that released
   Kafka never writes are reported, not guessed: SOURCES.md names 18), and every batch of every ``.log`` and
   ``.checkpoint`` decoded then encoded again: how many come back byte-identical.
2. A generated metadata log of ``--records`` records changing ``--partitions`` partitions (the busy cluster's mix:
   PartitionChange batches of 10 among NoOps) → the snapshot table (replay, layout, Parquet), in a process of its
   own: wall and CPU seconds, peak RSS.
3. The audit app (spark-submit, ``local[*]``) of a KRaft cluster of ``--topics`` topics × 4 partitions against the
   audit app of a ZooKeeper cluster of the same shape (the simulator's, in a private ZooKeeper), alternated
   ``--repeat`` times: the median ratio.

Prints one table: each measure, its figure and its target. Nothing is asserted. ``--quick``: 100,000 records over
10,000 partitions, one repeat.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_audit import run_app, snapshot_cluster

from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit.snapshot.kraft.batches import Undecodable, build_batch, encode_batch, iter_batches
from kafka_zk_audit.snapshot.kraft.segments import write_segment
from kafka_zk_audit.snapshot.kraft.take import write_kraft_snapshot
from kafka_zk_audit_testing.kraft_logs import KraftCluster, KraftClusterSpec, uuid
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REAL = Path(__file__).resolve().parents[2] / "shared" / "real-data" / "kraft"
PRE_RELEASE = 18  # SOURCES.md: the PartitionRecord v1 records of the apache__kafka trunk build


def real_logs() -> dict[str, int]:
    """Records, undecodable records, batches and byte-identical re-encodings over every real log and checkpoint."""
    counts = {"files": 0, "records": 0, "undecodable": 0, "batches": 0, "identical": 0}
    for path in sorted([*REAL.rglob("*.log"), *REAL.rglob("*.checkpoint")]):
        data = path.read_bytes()
        counts["files"] += 1
        for batch in iter_batches(data, str(path)):
            counts["batches"] += 1
            counts["records"] += len(batch.records)
            counts["undecodable"] += sum(isinstance(record, Undecodable) for record in batch.records)
            counts["identical"] += encode_batch(batch) == data[batch.position:batch.end]
    return counts


def generated_log(root: Path, records: int, partitions: int) -> int:
    """A metadata dir whose log creates ``partitions`` partitions (100 a topic, 3 replicas over 6 brokers) and then
    changes them until it holds ``records`` records; returns the records written."""
    cluster = KraftCluster(KraftClusterSpec(brokers=6, topics=0, noops=0))
    for index in range(partitions // 100):
        cluster.create_topic(f"t{index:05d}", 100)
    written = sum(len(batch.records) for batch in cluster.batches)
    partition_dir = root / "__cluster_metadata-0"
    batches = cluster.encoded()
    offset = written
    time_ms = 1_790_000_000_000 + len(batches) * 500
    change = 0
    while offset < records:
        time_ms += 500
        if (offset // 10) % 6 == 0:  # one batch of ten ISR changes for every 50 NoOps, as a busy controller writes
            chunk = []
            for _ in range(10):
                topic, partition = divmod(change % partitions, 100)
                chunk.append((5, 1, {"PartitionId": partition, "TopicId": uuid("topic", f"t{topic:05d}"),
                                     "Isr": [1, 2, 3] if change % 2 else [1, 2], "Leader": -2}))
                change += 1
            batches.append(build_batch(chunk, offset, 5, time_ms))
            offset += 10
        else:
            batches.append(build_batch([(20, 0, {})], offset, 5, time_ms))
            offset += 1
    write_segment(partition_dir, batches, base_offset=0)
    (partition_dir / "quorum-state").write_text(json.dumps({"leaderId": 3000, "leaderEpoch": 5,
                                                             "currentVoters": [{"voterId": 3000}]}))
    return offset


def snapshot_child(root: str, warehouse: str) -> None:
    """In its own process: the snapshot of ``root``; prints wall, CPU and peak RSS as JSON."""
    started, cpu = time.monotonic(), time.process_time()
    manifest = write_kraft_snapshot(root, Warehouse(warehouse), new_snapshot_id(suffix="bench"))
    print(json.dumps({"wall": time.monotonic() - started, "cpu": time.process_time() - cpu,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "records": manifest["kraft"]["records"], "znodes": manifest["znodes"],
                      "partitions": manifest["kraft"]["partitions"]}))


def small_kraft(root: Path, topics: int) -> Path:
    """A KRaft cluster of the ZooKeeper bench cluster's shape: ``topics`` × 4 partitions, 3 replicas, 30 brokers."""
    return KraftCluster(KraftClusterSpec(brokers=30, topics=topics, partitions=4, replication_factor=3)).write(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default=None, help="write the figures here too")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        snapshot_child(*args.child)
        return 0
    if args.quick:
        args.records, args.partitions, args.repeat = 100_000, 10_000, 1
    rows: list[tuple[str, str, str]] = []
    figures: dict = {}
    if REAL.is_dir():
        real = real_logs()
        figures["real"] = real
        decoded = real["records"] - real["undecodable"]
        rows.append(("real dirs: records decoded (the pre-release ones reported)",
                     f"{decoded:,}/{real['records']:,}; {real['undecodable']} reported", f"all but {PRE_RELEASE}"))
        rows.append(("real dirs: batches decoded → encoded byte-identical",
                     f"{real['identical']:,}/{real['batches']:,} in {real['files']} files", "all"))
    with tempfile.TemporaryDirectory(prefix="bench-kraft-") as folder:
        work = Path(folder)
        made = time.monotonic()
        written = generated_log(work / "big", args.records, args.partitions)
        build = time.monotonic() - made
        out = subprocess.run([sys.executable, __file__, "--child", str(work / "big"), str(work / "wh")],
                             capture_output=True, text=True, check=True).stdout
        big = json.loads(out.strip().splitlines()[-1])
        figures["generated"] = {**big, "written": written, "build_seconds": build}
        rows.append((f"{written:,}-record log ({args.partitions:,} partitions) → snapshot table: wall / CPU",
                     f"{big['wall']:.1f} s / {big['cpu']:.1f} s", "< 20 s"))
        rows.append(("… its peak RSS", f"{big['rss_mb']:,.0f} MiB", "< 2 GiB"))
        warehouse = Warehouse(str(work / "audit-wh"))
        kraft_id = write_kraft_snapshot(str(small_kraft(work / "small", args.topics)), warehouse,
                                        new_snapshot_id(suffix="kraft"))["snapshot_id"]
        server = ZooKeeperServer(work / "zk", port=free_port()).start()
        try:
            zk_id = snapshot_cluster(server, "zk", args.topics, 4, warehouse)
        finally:
            server.stop()
        walls: dict[str, list[float]] = {"kraft": [], "zk": []}
        for _ in range(args.repeat):
            for name, snapshot_id in (("zk", zk_id), ("kraft", kraft_id)):
                walls[name].append(run_app(warehouse, snapshot_id, work)["wall"])
        ratio = statistics.median(walls["kraft"]) / statistics.median(walls["zk"])
        figures["audit"] = {**walls, "ratio": ratio}
        rows.append((f"audit app, KRaft / ZooKeeper cluster of {args.topics} topics × 4 (median of {args.repeat})",
                     f"{ratio:.2f}× ({statistics.median(walls['kraft']):.1f} s / "
                     f"{statistics.median(walls['zk']):.1f} s)", "≤ 1.2×"))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':{width}}  {'figure':40}  target")
    for measure, figure, target in rows:
        print(f"{measure:{width}}  {figure:40}  {target}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
