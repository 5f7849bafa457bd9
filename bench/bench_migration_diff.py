"""The migration diff's speed: one large cluster pair, and 100 pairs in one run against one pair.

    .venv/bin/python bench/bench_migration_diff.py [--quick] [--partitions 100000] [--pairs 100] [--app 100]
                                                   [--rounds 2] [--json FILE] [--write-docs]

Both sides are prepared first, as the DAG's snapshot task prepares them: a ZooKeeper tree of 5,000 topics × 20
partitions (100k), two config overrides per topic (10k topic configs) and 10k ACLs, and the KRaft log Kafka 3.9's
migration writes from it (kafka_zk_audit_testing.migration_log); the pair laid out as entries
(snapshot.migration.diff.prepare_migration) into a warehouse's entries table (snapshot.migration.paired
.write_entries), one folder per paired snapshot. Then, on local[2], what the audit does (audit.paired
.compare_entries: the batch's entries read as one keyed frame, compared in one plan keyed by (snapshot, kind, key),
findings and equal counts collected in one job): the large pair, and ``--pairs`` small pairs (1,000 partitions
each) in one batch against one small pair alone (each the best of three runs, after one warm-up). Prints the
times: the large pair against its target (< 60 s), and the in-plan ratio of 100 pairs (100× the entries) to one.

Then the run's ratio, measured as the fleet's keyed-audit targets are (bench/bench_fleet.py): ``--app`` demo-shaped
3.x clusters (~600 znodes each) written into a private ZooKeeper on 127.0.0.1, each migrated by Kafka 3.9's
migration (its KRaft log from kafka_zk_audit_testing.migration_log, ``/migration`` created as the dual writes
leave it), snapshotted while healthy and prepared as the DAG's snapshot task prepares a paired cluster
(snapshot.migration.paired.prepare_snapshot). The audit Spark app (spark-submit local[*], as the DAG's audit task
runs it) then audits, in alternated rounds, each time from a fresh copy of the prepared warehouse: one paired
cluster, all ``--app`` paired clusters in one app, and the same ``--app`` clusters without their pairing (what the
diff adds). Every verdict must come back ``verified`` with no divergence (the bench fails otherwise). The target
row is ``--app`` pairs in one run against one pair (≤ 2×). No timing assertion: a report. ``--write-docs`` puts the
table, with the date, the commit and the machine, between ``<!-- bench_migration_diff:begin -->`` and
``<!-- bench_migration_diff:end -->`` in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from bench_all import measured_where, replace_block  # noqa: E402  (bench/: the script's folder)
from profile_audit import children_cpu  # noqa: E402

from kafka_zk_audit.audit.paired import compare_entries  # noqa: E402
from kafka_zk_audit.contract.warehouse import Warehouse  # noqa: E402
from kafka_zk_audit.snapshot.migration.diff import prepare_migration  # noqa: E402
from kafka_zk_audit.snapshot.migration.paired import write_entries  # noqa: E402
from kafka_zk_audit.snapshot.migration.tree import ZkNode  # noqa: E402
from kafka_zk_audit.snapshot.secrets import Fingerprinter  # noqa: E402
from kafka_zk_audit_testing.kraft_logs import uuid  # noqa: E402
from kafka_zk_audit_testing.migration_log import write_migration_log  # noqa: E402

FINGERPRINTER = Fingerprinter(b"bench-migration-diff-key-32bytes")
RELEASE = "3.9"
BLOCK = ("<!-- bench_migration_diff:begin -->", "<!-- bench_migration_diff:end -->")


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


def write_pairs(count: int, work: Path) -> tuple[Warehouse, list[str]]:
    """``count`` demo-shaped clusters in a private ZooKeeper, each migrated, snapshotted while healthy and prepared
    as a paired cluster into one store; returns the store and the snapshot ids."""
    from bench_fleet import SHAPE, say  # bench/bench_fleet.py (the script's folder)
    from kazoo.client import KazooClient

    from kafka_zk_audit.contract.warehouse import new_snapshot_id
    from kafka_zk_audit.snapshot.connection import ZkSettings
    from kafka_zk_audit.snapshot.live import write_snapshot
    from kafka_zk_audit.snapshot.migration.paired import prepare_snapshot
    from kafka_zk_audit_testing.migration_log import tree_from_kazoo
    from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    store = Warehouse(str(work / "store"))
    ids = []
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=2048, c1_only=False).start()
    try:
        say(f"writing {count} demo-shaped clusters into {server.hosts}: each migrated by Kafka {RELEASE}, "
            "snapshotted while healthy and prepared as a paired cluster")
        for index in range(count):
            name = f"m{index:03d}"
            server.ensure_chroot(f"/{name}")
            with Simulator(hosts=f"{server.hosts}/{name}") as sim:
                sim.write(ClusterSpec(**SHAPE, seed=index))
                client = KazooClient(hosts=f"{server.hosts}/{name}")
                client.start(timeout=15)
                try:
                    log = write_migration_log(tree_from_kazoo(client), work / "kraft" / name, RELEASE)
                    client.create("/migration", log.migration_znode())
                    snapshot_id = new_snapshot_id(suffix=name)
                    write_snapshot(client, ZkSettings(hosts=server.hosts, chroot=f"/{name}"), store, snapshot_id,
                                   cluster=name)
                finally:
                    client.stop()
                    client.close()
            manifest = json.loads(Path(store.manifest_path(snapshot_id)).read_text())
            prepare_snapshot(store, manifest, {"release": RELEASE}, work / "kraft" / name)
            ids.append(snapshot_id)
            if (index + 1) % 25 == 0:
                say(f"  {index + 1} of {count} prepared")
    finally:
        server.stop()
    return store, ids


def fresh_copy(store: Warehouse, ids: list[str], root: Path, paired: bool) -> Warehouse:
    """A warehouse holding copies of these prepared snapshots (with their entries and prepared verdicts when
    ``paired``): the audit writes each verdict back, so every run starts from its own copy."""
    from bench_fleet import warehouse_of

    shutil.rmtree(root, ignore_errors=True)
    warehouse = warehouse_of(store, ids, root)
    for sid in ids if paired else ():
        shutil.copytree(store.migration_entries_dir(sid), warehouse.migration_entries_dir(sid))
        Path(warehouse.run_dir(sid)).mkdir(parents=True)
        shutil.copy(store.migration_diff_path(sid), warehouse.migration_diff_path(sid))
    return warehouse


def verdict_problem(warehouse: Warehouse, ids: list[str]) -> str | None:
    """None when every pair came back verified without a divergence; else what did not."""
    wrong = {}
    for sid in ids:
        verdict = warehouse.read_migration_diff(sid) or {}
        if verdict.get("status") != "verified" or verdict.get("findings"):
            wrong[sid] = (verdict.get("status"), [f.get("check_id") for f in verdict.get("findings") or []])
    return f"pairs not verified cleanly: {wrong}" if wrong else None


def app_rounds(count: int, rounds: int, work: Path) -> dict[str, Any]:
    """The audit app on one pair, on ``count`` pairs and on the ``count`` clusters unpaired, alternated ``rounds``
    times (medians)."""
    from bench_fleet import run_app, say

    store, ids = write_pairs(count, work)
    runs: dict[str, list[dict[str, Any]]] = {"one pair": [], f"{count} pairs": [], f"{count} unpaired": []}
    for round_index in range(rounds):
        for label, batch, paired in (("one pair", ids[:1], True), (f"{count} pairs", ids, True),
                                     (f"{count} unpaired", ids, False)):
            warehouse = fresh_copy(store, batch, work / "wh", paired)
            cpu = children_cpu()
            figures = run_app(warehouse, batch, work / f"app-{len(batch)}-{paired}-{round_index}.log")
            figures["cpu"] = children_cpu() - cpu
            if paired and (problem := verdict_problem(warehouse, batch)):
                raise SystemExit(f"FAILED: {problem}")
            runs[label].append(figures)
            say(f"  round {round_index + 1}, {label}: {figures['wall']:.1f} s, {figures['cpu']:.1f} CPU-s, "
                f"{figures['jobs']} jobs, "
                f"{figures['findings']} findings")
    return {label: {"wall": statistics.median(r["wall"] for r in figures),
                    "cpu": statistics.median(r["cpu"] for r in figures),
                    "walls": [r["wall"] for r in figures], "jobs": figures[-1]["jobs"],
                    "findings": figures[-1]["findings"], "phases": figures[-1]["phases"]}
            for label, figures in runs.items()}


def table(results: dict[str, Any]) -> str:
    """The targets' table from the figures."""
    lines = ["| measure | figure | target | met |", "|---|---|---|---|"]
    plan = results["plan"]
    lines.append(f"| diff of {plan['partitions']:,} partitions, {plan['configs']:,} topic configs, {plan['acls']:,} "
                 f"ACLs (both sides prepared; {plan['entries']:,} entries), one keyed plan | {plan['large_s']:.1f} s "
                 f"(+ {plan['layout_s']:.1f} s laying out in the snapshot task) | < 60 s | "
                 f"{'yes' if plan['large_s'] < 60 else '**no**'} |")
    lines.append(f"| the diff alone, in a warm session: {plan['pairs']} pairs of 1,000 partitions "
                 f"({plan['pairs']}× the entries) / one pair | {plan['many_s']:.1f} s / {plan['one_s']:.2f} s = "
                 f"{plan['many_s'] / plan['one_s']:.2f}× | – (grows with entries) | – |")
    if app := results.get("app"):
        count = results["app_pairs"]
        one, many, unpaired = app["one pair"], app[f"{count} pairs"], app[f"{count} unpaired"]
        ratio = many["wall"] / one["wall"]
        lines.append(f"| diff of {count} cluster pairs in one run / one pair (the audit app, spark-submit, as the DAG "
                     f"runs it; demo-shaped clusters, medians of {len(one['walls'])} alternated rounds) | "
                     f"{many['wall']:.1f} s / {one['wall']:.1f} s = {ratio:.2f}× (CPU {many['cpu']:.0f} s / "
                     f"{one['cpu']:.0f} s = {many['cpu'] / one['cpu']:.2f}×) | ≤ 2× | "
                     f"{'yes' if ratio <= 2 else '**no**'} |")
        lines.append(f"| what pairing adds to that run: {count} pairs / the same {count} clusters unpaired | "
                     f"{many['wall']:.1f} s / {unpaired['wall']:.1f} s = {many['wall'] / unpaired['wall']:.2f}× "
                     f"(CPU {many['cpu'] / unpaired['cpu']:.2f}×) | – | – |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k partitions, 1k configs and ACLs, 10 pairs, app 10")
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--app", type=int, default=100, help="paired clusters of the run's row (0: skip)")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds of the run's row")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--write-docs", action="store_true", help="the table into docs/performance.md's block")
    args = parser.parse_args(argv)
    where = measured_where()  # the commit before anything runs
    partitions, pairs, app = (10_000, 10, min(args.app, 10)) if args.quick else (args.partitions, args.pairs,
                                                                                   args.app)
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
              f"{entries:,} entries, laid out in {layout:.1f}s", flush=True)
        ids = [f"pair-{index:03d}" for index in range(pairs)]
        for index, snapshot_id in enumerate(ids):
            prepare(cluster_tree(50, 20, 100), root / f"small-{index}", warehouse, snapshot_id)
        timed_diff(spark, warehouse, ids[:1], runs=1)  # warm the JVM
        large_s, large_found = timed_diff(spark, warehouse, ["large"], runs=1)
        one_s, _ = timed_diff(spark, warehouse, ids[:1])
        many_s, many_found = timed_diff(spark, warehouse, ids)
    spark.stop()
    print(f"diff of the large pair: {large_s:.1f}s ({large_found} findings); {pairs} pairs in one plan: {many_s:.1f}s "
          f"({many_found} findings); one pair: {one_s:.2f}s", flush=True)
    results: dict[str, Any] = {"plan": {"partitions": partitions, "configs": topics * 2, "acls": topics * 2,
                                        "entries": entries, "layout_s": layout, "large_s": large_s,
                                        "large_findings": large_found, "pairs": pairs, "one_s": one_s,
                                        "many_s": many_s, "many_findings": many_found}, "app_pairs": app}
    if app:
        work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-migration-"))
        results["app"] = app_rounds(app, args.rounds, work)
        shutil.rmtree(work, ignore_errors=True)
    print(table(results))
    print(f"(load {' '.join(f'{x:.1f}' for x in os.getloadavg())})")
    if args.write_docs:
        replace_block(REPO / "docs" / "performance.md", *BLOCK,
                      f"Measured by `bench/bench_migration_diff.py{' --quick' if args.quick else ''} --rounds "
                      f"{args.rounds}` on {where['date']}, commit `{where['commit']}`, machine: {where['machine']}; "
                      f"load average {where['load']} at its start.\n\n{table(results)}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
