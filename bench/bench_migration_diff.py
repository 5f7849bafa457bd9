"""The migration diff's speed: one large cluster pair, and 100 pairs in one run against one pair.

    .venv/bin/python bench/bench_migration_diff.py [--quick] [--partitions 100000] [--pairs 100]

Both sides are prepared first, as the diff gets them: a ZooKeeper tree of 5,000 topics × 20 partitions (100k), two
config overrides per topic (10k topic configs) and 10k ACLs, and the KRaft log Kafka 3.9's migration writes from it
(kafka_zk_audit_testing.migration_log); each side laid out as entries (snapshot.migration.mapping) and stored as
Parquet. Then, on local[2]: the Spark diff of the large pair (audit.migration_diff, one plan keyed by pair), and the
diff of ``--pairs`` small pairs (1,000 partitions each) in one plan against one small pair alone. Prints the times
and the ratios against the targets (< 60 s for the large pair; 100 pairs ≤ 2× one pair). No assertion: a report.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from kafka_zk_audit.audit.migration_diff import ENTRY_COLUMNS, compare_frames  # noqa: E402
from kafka_zk_audit.snapshot.kraft.replay import replay_directory  # noqa: E402
from kafka_zk_audit.snapshot.migration.diff import migration_offset  # noqa: E402
from kafka_zk_audit.snapshot.migration.mapping import kraft_entries, zk_entries  # noqa: E402
from kafka_zk_audit.snapshot.migration.tree import ZkNode  # noqa: E402
from kafka_zk_audit.snapshot.secrets import Fingerprinter  # noqa: E402
from kafka_zk_audit_testing.kraft_logs import uuid  # noqa: E402
from kafka_zk_audit_testing.migration_log import write_migration_log  # noqa: E402

RELEASE = (3, 9, 0)
FINGERPRINTER = Fingerprinter(b"bench-migration-diff-key-32bytes")
ARROW_SCHEMA = pa.schema([(name, pa.int32() if name in ("partition", "broker_id") else pa.string())
                          for name in ENTRY_COLUMNS])


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


def prepare(tree: dict[str, ZkNode], folder: Path, pair: str) -> tuple[list[dict], list[dict], float]:
    """Write the migration's KRaft log, lay both sides out as entries; the rows and the seconds the layout took."""
    log = write_migration_log(tree, folder, "3.9")
    tree = {**tree, "/migration": ZkNode(log.migration_znode())}
    started = time.monotonic()
    image = replay_directory(folder, at_offset=migration_offset(tree)[0]).builder.image
    zk = [{"pair": pair, **{c: getattr(e, c) for c in ENTRY_COLUMNS[1:]}} for e in zk_entries(tree, RELEASE)]
    kraft = [{"pair": pair, **{c: getattr(e, c) for c in ENTRY_COLUMNS[1:]}}
             for e in kraft_entries(image, RELEASE, FINGERPRINTER.fingerprint)]
    return zk, kraft, time.monotonic() - started


def store(rows: list[dict], path: Path) -> str:
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), path)
    return str(path)


def timed_diff(spark, zk: str, kraft: str) -> tuple[float, int]:
    started = time.monotonic()
    findings = compare_frames(spark.read.parquet(zk), spark.read.parquet(kraft)).count()
    return time.monotonic() - started, findings


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
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        zk, kraft, layout = prepare(cluster_tree(topics, 20, topics * 2), root / "large", "large")
        large = (store(zk, root / "large-zk.parquet"), store(kraft, root / "large-kraft.parquet"))
        print(f"large pair: {partitions:,} partitions, {topics * 2:,} topic configs, {topics * 2:,} ACLs; "
              f"{len(zk):,} / {len(kraft):,} entries, laid out in {layout:.1f}s")
        small_zk: list[dict] = []
        small_kraft: list[dict] = []
        for index in range(pairs):
            zk, kraft, _ = prepare(cluster_tree(50, 20, 100), root / f"small-{index}", f"pair-{index}")
            small_zk += zk
            small_kraft += kraft
        one = (store([r for r in small_zk if r["pair"] == "pair-0"], root / "one-zk.parquet"),
               store([r for r in small_kraft if r["pair"] == "pair-0"], root / "one-kraft.parquet"))
        many = (store(small_zk, root / "many-zk.parquet"), store(small_kraft, root / "many-kraft.parquet"))
        timed_diff(spark, *one)  # warm the JVM
        large_s, large_found = timed_diff(spark, *large)
        one_s, _ = timed_diff(spark, *one)
        many_s, many_found = timed_diff(spark, *many)
    print(f"diff of the large pair: {large_s:.1f}s ({large_found} findings; target < 60s: "
          f"{'met' if large_s < 60 else 'MISSED'})")
    print(f"diff of {pairs} pairs in one plan: {many_s:.1f}s ({many_found} findings); one pair: {one_s:.1f}s; "
          f"ratio {many_s / one_s:.2f}x (target <= 2x: {'met' if many_s <= 2 * one_s else 'MISSED'})")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
