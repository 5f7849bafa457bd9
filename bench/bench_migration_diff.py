"""The migration diff's speed: one large cluster pair, and 100 pairs in one run against one pair.

    .venv/bin/python bench/bench_migration_diff.py [--quick] [--partitions 100000] [--pairs 100]

Both sides are prepared first, as the DAG's snapshot task prepares them: a ZooKeeper tree of 5,000 topics × 20
partitions (100k), two config overrides per topic (10k topic configs) and 10k ACLs, and the KRaft log Kafka 3.9's
migration writes from it (kafka_zk_audit_testing.migration_log); the pair laid out as entries
(snapshot.migration.diff.prepare_migration) into a warehouse's entries table (snapshot.migration.paired
.write_entries), one folder per paired snapshot. Then, on local[2], what the audit does (audit.paired
.compare_entries: the batch's entries read as one keyed frame, compared in one plan keyed by (snapshot, kind, key),
findings and equal counts collected in one job): the large pair, and ``--pairs`` small pairs (1,000 partitions
each) in one batch against one small pair alone (each the best of three runs, after one warm-up). Prints the
times and the ratios against the targets (< 60 s for the large pair; 100 pairs ≤ 2× one pair). No assertion: a
report.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from kafka_zk_audit.audit.paired import compare_entries  # noqa: E402
from kafka_zk_audit.contract.warehouse import Warehouse  # noqa: E402
from kafka_zk_audit.snapshot.migration.diff import prepare_migration  # noqa: E402
from kafka_zk_audit.snapshot.migration.paired import write_entries  # noqa: E402
from kafka_zk_audit.snapshot.migration.tree import ZkNode  # noqa: E402
from kafka_zk_audit.snapshot.secrets import Fingerprinter  # noqa: E402
from kafka_zk_audit_testing.kraft_logs import uuid  # noqa: E402
from kafka_zk_audit_testing.migration_log import write_migration_log  # noqa: E402

FINGERPRINTER = Fingerprinter(b"bench-migration-diff-key-32bytes")


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def cluster_tree(topics: int, partitions: int, acls: int, brokers: int = 6) -> dict[str, ZkNode]:
    """A 3.x cluster's znodes: topics with ids, state znodes, two config overrides per topic, ACLs on topics."""
    tree: dict[str, ZkNode] = {f"/brokers/ids/{b}": ZkNode(b"{}") for b in range(1, brokers + 1)}
    for t in range(topics):
        name = f"topic-{t:05d}"
        assignment = {str(p): [(p + i) % brokers + 1 for i in range(3)] for p in range(partitions)}
        topic_id = uuid("topic", name)
        tree[f"/brokers/topics/{name}"] = ZkNode(_json({"version": 3, "topic_id": topic_id,
                                                        "partitions": assignment}))
        for p, replicas in assignment.items():
            tree[f"/brokers/topics/{name}/partitions/{p}/state"] = ZkNode(_json(
                {"controller_epoch": 1, "leader": replicas[0], "version": 1, "leader_epoch": 3, "isr": replicas}), 5)
        tree[f"/config/topics/{name}"] = ZkNode(_json({"version": 1, "config": {
            "retention.ms": str(86_400_000 + t), "cleanup.policy": "delete"}}))
    per_topic = max(1, acls // max(topics, 1))
    for t in range(min(topics, acls)):
        tree[f"/kafka-acl/Topic/topic-{t:05d}"] = ZkNode(_json({"version": 1, "acls": [
            {"principal": f"User:app-{i}", "permissionType": "Allow", "operation": "Read", "host": "*"}
            for i in range(per_topic)]}))
    tree["/latest_producer_id_block"] = ZkNode(_json({"version": 1, "broker": 1, "block_start": "0",
                                                      "block_end": "999"}))
    return tree


def prepare(tree: dict[str, ZkNode], folder: Path, warehouse: Warehouse, snapshot_id: str) -> tuple[int, float]:
    """Write the migration's KRaft log, lay the pair out into the entries table; its entries and the seconds the
    layout took."""
    log = write_migration_log(tree, folder, "3.9")
    tree = {**tree, "/migration": ZkNode(log.migration_znode())}
    started = time.monotonic()
    prepared = prepare_migration(tree, folder, "3.9", FINGERPRINTER.fingerprint)
    write_entries(warehouse, snapshot_id, prepared.zk, prepared.kraft)
    return len(prepared.zk) + len(prepared.kraft), time.monotonic() - started


def timed_diff(spark, warehouse: Warehouse, ids: list[str], runs: int = 3) -> tuple[float, int]:
    """The best of ``runs`` audit diffs of the batch ``ids``, and the findings it gave."""
    best, found = float("inf"), 0
    for _ in range(runs):
        started = time.monotonic()
        results = compare_entries(spark, warehouse, ids)
        best = min(best, time.monotonic() - started)
        found = sum(len(findings) for findings, _ in results.values())
    return best, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k partitions, 1k configs and ACLs, 10 pairs")
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=100)
    args = parser.parse_args(argv)
    partitions, pairs = (10_000, 10) if args.quick else (args.partitions, args.pairs)
    topics = partitions // 20
    from kafka_zk_audit.audit.session import get_spark

    spark = get_spark("bench-migration-diff", master="local[2]", shuffle_partitions=4, driver_memory="3g")
    # as the audit does for a local warehouse: the batch's folders listed on the driver (audit.job.audit_batch)
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, 2 * pairs)))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        warehouse = Warehouse(str(root / "warehouse"))
        entries, layout = prepare(cluster_tree(topics, 20, topics * 2), root / "large", warehouse, "large")
        print(f"large pair: {partitions:,} partitions, {topics * 2:,} topic configs, {topics * 2:,} ACLs; "
              f"{entries:,} entries, laid out in {layout:.1f}s")
        ids = [f"pair-{index:03d}" for index in range(pairs)]
        for index, snapshot_id in enumerate(ids):
            prepare(cluster_tree(50, 20, 100), root / f"small-{index}", warehouse, snapshot_id)
        timed_diff(spark, warehouse, ids[:1], runs=1)  # warm the JVM
        large_s, large_found = timed_diff(spark, warehouse, ["large"], runs=1)
        one_s, _ = timed_diff(spark, warehouse, ids[:1])
        many_s, many_found = timed_diff(spark, warehouse, ids)
    print(f"diff of the large pair: {large_s:.1f}s ({large_found} findings; target < 60s: "
          f"{'met' if large_s < 60 else 'MISSED'})")
    print(f"diff of {pairs} pairs in one plan: {many_s:.1f}s ({many_found} findings); one pair: {one_s:.1f}s; "
          f"ratio {many_s / one_s:.2f}x (target <= 2x: {'met' if many_s <= 2 * one_s else 'MISSED'})")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
