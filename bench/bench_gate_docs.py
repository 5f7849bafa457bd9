"""One gate run's Data Docs over a GX store that already holds earlier runs' results: this tree against a baseline.

    .venv/bin/python bench/bench_gate_docs.py --baseline-tree DIR [--runs 24] [--repeat 3] [--topics 4]

The warehouse's GX store is never pruned, so every gate run adds its validation results to those of all earlier
runs, and GX's Data Docs index lists (and reads) every stored result. A private ZooKeeper on 127.0.0.1 holds a
small simulated 3.x cluster, snapshotted ``--runs`` + 1 times an hour apart (an hourly day) and audited in one batch
(``run_audit``, in-process ``local[2]``, in a child process). The first ``--runs`` snapshots then each get a gate run
of their own (this checkout, one process), which fills the store. The last snapshot's gate run is the one timed:
``gate.run.run_gate``, as the DAG's gate task runs it, in a fresh Python process whose ``kafka_zk_audit`` is
``--baseline-tree``'s (a checkout of an older commit, its ``plugins/`` used) or this checkout's, each time on a fresh
copy of the prepared warehouse, ``--repeat`` times per tree, the trees taking turns. It prints the median wall and
CPU seconds (the process's user + system) of each tree, their ratios, how many results the store held, and whether
both trees left the same Data Docs files and the same validation links on the index. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from profile_audit import children_cpu, tree_env

REPO = Path(__file__).resolve().parents[1]
FIRST_HOUR = datetime(2026, 3, 1, tzinfo=UTC)
INDEX_LINK = re.compile(r"'_table_row_link_path': '(validations/[^']+)'")


def snapshot_hours(work: Path, count: int, topics: int) -> tuple[str, list[str]]:
    """A warehouse with ``count`` snapshots of one simulated cluster, an hour apart; its root and the ids."""
    from kazoo.client import KazooClient

    from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
    from kafka_zk_audit.snapshot.connection import ZkSettings
    from kafka_zk_audit.snapshot.live import write_snapshot
    from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    spec = ClusterSpec(era="3.x", brokers=3, racks=3, topics=topics, partitions=4, replication_factor=3, groups=2,
                       consumers_per_group=2, threads_per_consumer=1, seed=1)
    warehouse = Warehouse(str(work / "prepared"))
    server = ZooKeeperServer(work / "zk", port=free_port()).start()
    try:
        with Simulator(hosts=f"{server.hosts}/bench") as simulator:  # its session holds the brokers' ephemeral znodes
            simulator.write(spec)
            settings = ZkSettings(hosts=server.hosts, chroot="/bench")
            client = KazooClient(**settings.kazoo_kwargs())
            client.start(timeout=30)
            try:
                ids = [new_snapshot_id(FIRST_HOUR + timedelta(hours=hour)) for hour in range(count)]
                for snapshot_id in ids:
                    write_snapshot(client, settings, warehouse, snapshot_id)
            finally:
                client.stop()
                client.close()
    finally:
        server.stop()
    return warehouse.root, ids


def audit_worker(root: str, ids: list[str]) -> None:
    """Audit the snapshots in one batch (each with the one before as its baseline)."""
    from kafka_zk_audit.audit.job import run_audit
    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.contract.warehouse import Warehouse

    spark = get_spark("bench-gate-docs", master="local[2]")
    try:
        run_audit(spark, Warehouse(root), ids, None)
    finally:
        spark.stop()


def gate_worker(tree: str, root: str, ids: list[str]) -> dict[str, Any]:
    """One gate run per snapshot id, in order, with the package of ``tree``; each run's seconds and verdict."""
    import kafka_zk_audit.gate.run as gate_run
    from kafka_zk_audit.contract.settings import load_config
    from kafka_zk_audit.contract.warehouse import Warehouse

    assert Path(gate_run.__file__).is_relative_to(tree), f"{gate_run.__file__} is not under {tree}"
    cfg, warehouse, runs = load_config(None), Warehouse(root), []
    for snapshot_id in ids:
        started = time.monotonic()
        verdict = gate_run.run_gate(warehouse, [snapshot_id], cfg)
        runs.append({"seconds": time.monotonic() - started, "success": verdict["success"],
                     "evaluated": verdict["evaluated_expectations"]})
    return {"runs": runs}


def run_worker(tree: Path | None, args: list[str], log: Path) -> tuple[dict[str, Any], float, float]:
    """This script with ``args`` in a fresh Python process importing ``tree``'s package (None: this checkout's);
    its printed JSON, wall seconds and CPU seconds."""
    launched, cpu = time.monotonic(), children_cpu()
    with log.open("wb") as err:
        done = subprocess.run([sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=err,
                              env=tree_env(tree), cwd=log.parent)
    wall, cpu = time.monotonic() - launched, children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:1])} failed (exit {done.returncode}); see {log}")
    lines = done.stdout.decode().strip().splitlines()
    return (json.loads(lines[-1]) if lines else {}), wall, cpu


def stored_results(root: str) -> int:
    """How many validation results the warehouse's GX store holds."""
    return sum(1 for _ in Path(root, "gx").glob("**/uncommitted/validations/**/*.json"))


def site(root: str) -> tuple[set[str], set[str]]:
    """The Data Docs site's files and the validation pages its index links to."""
    docs = Path(root, "data_docs")
    files = {path.relative_to(docs).as_posix() for path in docs.rglob("*") if path.is_file()}
    links = {unquote(link) for link in INDEX_LINK.findall((docs / "index.html").read_text())}
    return files, links


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-tree", type=Path, help="a checkout of an older commit (required)")
    parser.add_argument("--runs", type=int, default=24, help="earlier gate runs whose results the store holds")
    parser.add_argument("--repeat", type=int, default=3, help="timed gate runs per tree (medians)")
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--audit-worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--gate-worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.audit_worker:
        audit_worker(args.audit_worker[0], args.audit_worker[1].split(","))
        return 0
    if args.gate_worker:
        logging.basicConfig(level=logging.WARNING)
        tree, root, ids = args.gate_worker
        print(json.dumps(gate_worker(tree, root, ids.split(","))))
        return 0
    if args.baseline_tree is None:
        parser.error("--baseline-tree DIR is required: a checkout of the commit to compare with")

    from kafka_zk_audit.snapshot.connection import KAZOO_LOGGER

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger(KAZOO_LOGGER).setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-gate-docs-"))
    started = time.monotonic()
    root, ids = snapshot_hours(work, args.runs + 1, args.topics)
    run_worker(None, ["--audit-worker", root, ",".join(ids)], work / "audit.log")
    earlier, _, _ = run_worker(None, ["--gate-worker", str(REPO), root, ",".join(ids[:-1])], work / "earlier.log")
    stored = stored_results(root)
    print(f"{len(ids)} hourly snapshots of a {args.topics}-topic cluster, audited; {args.runs} earlier gate runs "
          f"(this tree, {statistics.median(r['seconds'] for r in earlier['runs']):.2f} s each in one process) left "
          f"{stored} results in the GX store; prepared in {time.monotonic() - started:.0f} s; {os.cpu_count()} cores; "
          f"logs in {work}", flush=True)
    trees = {"baseline": args.baseline_tree.resolve(), "this tree": REPO}
    timings: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
    sites: dict[str, tuple[set[str], set[str]]] = {}
    for attempt in range(args.repeat):
        for label, tree in trees.items():
            copy = work / f"wh-{label.replace(' ', '-')}-{attempt}"
            shutil.copytree(root, copy, symlinks=True)
            result, wall, cpu = run_worker(tree, ["--gate-worker", str(tree), str(copy), ids[-1]],
                                           work / f"gate-{label.replace(' ', '-')}-{attempt}.log")
            timings[label].append((wall, cpu))
            [run] = result["runs"]
            print(f"  {label}, run {attempt + 1}: wall {wall:.2f} s, CPU {cpu:.2f} s (run_gate {run['seconds']:.2f} s, "
                  f"{run['evaluated']} expectations, success {run['success']})", flush=True)
            if attempt == 0:
                sites[label] = site(str(copy))
            shutil.rmtree(copy)
    print(f"\none more gate run over {stored} stored results (fresh process, median of {args.repeat})")
    print("| | baseline | this tree | ratio |\n|---|---|---|---|")
    for index, name in enumerate(("wall s", "CPU s")):
        before = statistics.median(t[index] for t in timings["baseline"])
        after = statistics.median(t[index] for t in timings["this tree"])
        print(f"| {name} | {before:.2f} | {after:.2f} | {after / before:.2f} |")
    (base_files, base_links), (files, links) = sites["baseline"], sites["this tree"]
    this_run = {link for link in links if f"/{ids[-1]}/" in link}
    print(f"\nthe same Data Docs files from both trees: {base_files == files} ({len(files)} files); the same "
          f"validation links on the index: {base_links == links} ({len(links)} links, {len(this_run)} of this run)")
    shutil.rmtree(work / "prepared", ignore_errors=True)
    shutil.rmtree(work / "zk", ignore_errors=True)
    return 0 if base_files == files and base_links == links else 1


if __name__ == "__main__":
    sys.exit(main())
