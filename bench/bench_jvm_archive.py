"""The audit app with and without the driver's class-data archive, in the same run.

    .venv/bin/python bench/bench_jvm_archive.py [--rounds 3] [--clusters 10]

A private ZooKeeper on 127.0.0.1 holds ``--clusters`` demo-shaped 3.x clusters (bench/bench_all.py's), each
snapshotted into one warehouse. The audit app (``spark_apps/audit_snapshot.py``, spark-submit ``local[*]``, all the
snapshots in one app, as the DAG's audit task runs it) is launched the way the product launches it
(:func:`kafka_zk_audit.audit.session.class_data_sharing`):

1. once on a new, empty cache folder: the JVM writes the archive as it exits;
2. then ``--rounds`` times each, alternating: with the archive switched off (``KAFKA_ZK_AUDIT_JVM_CACHE=off``, the
   baseline) and with the archive just written.

It prints wall and CPU seconds (spark-submit and its children) of every launch, the medians and their ratios.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_all import DEMO
from bench_audit import SPARK_APP
from kazoo.client import KazooClient

from kafka_zk_audit.audit.session import class_data_archive, class_data_sharing, submit_conf
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port


def snapshot_fleet(server: ZooKeeperServer, clusters: int, warehouse: Warehouse) -> list[str]:
    """Write ``clusters`` demo-shaped clusters under /c<i> and snapshot each; their snapshot ids."""
    ids = []
    for index in range(clusters):
        chroot = f"/c{index}"
        server.ensure_chroot(chroot)
        sim = Simulator(hosts=server.hosts + chroot)
        try:
            sim.write(DEMO)
        finally:
            sim.close()
        client = KazooClient(hosts=server.hosts + chroot, timeout=30)
        client.start(timeout=30)
        try:
            snapshot_id = new_snapshot_id(suffix=f"c{index}")
            write_snapshot(client, ZkSettings(hosts=server.hosts, chroot=chroot), warehouse, snapshot_id,
                           SnapshotOptions())
            ids.append(snapshot_id)
        finally:
            client.stop()
            client.close()
    return ids


def print_medians(title: str, runs: dict[str, list[tuple[float, float]]], columns: dict[str, str]) -> None:
    """A Markdown table of the median wall and CPU seconds of two modes (``columns``: baseline first, mode ->
    heading) and their ratio."""
    (base, base_label), (other, other_label) = columns.items()
    medians = {mode: (statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows))
               for mode, rows in runs.items()}
    print(f"\n| {title} | {base_label} | {other_label} | ratio |")
    print("|---|---|---|---|")
    for index, what in enumerate(("wall s (median)", "CPU s (median)")):
        before, after = medians[base][index], medians[other][index]
        print(f"| {what} | {before:.1f} | {after:.1f} | {after / before:.2f} |")


def launch(warehouse: Warehouse, snapshot_ids: list[str], cache: str, log: Path) -> tuple[float, float]:
    """One audit app, launched as the product launches it with the cache folder ``cache`` (or ``off``): wall and
    CPU seconds."""
    os.environ["KAFKA_ZK_AUDIT_JVM_CACHE"] = cache
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with class_data_sharing(submit_conf()) as conf, log.open("wb") as out:
        confs = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
        args = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[*]", *confs, str(SPARK_APP),
                "--warehouse", warehouse.root, "--snapshot-ids", ",".join(snapshot_ids)]
        code = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"the audit app failed (exit {code}); see {log}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fleet_warehouse(clusters: int, prefix: str) -> tuple[Path, Warehouse, list[str]]:
    """A new work folder, and in it the warehouse holding a snapshot of each of ``clusters`` demo-shaped clusters
    (written into a private ZooKeeper, stopped afterwards) with their ids."""
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix=prefix))
    server = ZooKeeperServer(work / "zk", port=free_port()).start()
    try:
        warehouse = Warehouse(str(work / "wh"))
        ids = snapshot_fleet(server, clusters, warehouse)
    finally:
        server.stop()
    return work, warehouse, ids


def prepared_fleet(description: str, prefix: str) -> tuple[argparse.Namespace, Path, Warehouse, list[str]]:
    """The bench's arguments (``--rounds``, ``--clusters``), its work folder, and the warehouse holding a snapshot
    of each demo-shaped cluster with their ids (``fleet_warehouse``)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clusters", type=int, default=10)
    args = parser.parse_args()
    work, warehouse, ids = fleet_warehouse(args.clusters, prefix)
    print(f"{len(ids)} demo-shaped snapshots; the audit app on all of them, spark-submit local[*], "
          f"{os.cpu_count()} cores", flush=True)
    return args, work, warehouse, ids


def main() -> int:
    args, work, warehouse, ids = prepared_fleet(__doc__, "kafka-zk-audit-bench-jvm-")
    cache = str(work / "jvm-cache")
    runs: dict[str, list[tuple[float, float]]] = {"off": [], "mapped": []}
    wall, cpu = launch(warehouse, ids, cache, work / "writing.log")
    os.environ["KAFKA_ZK_AUDIT_JVM_CACHE"] = cache
    archive = class_data_archive()
    assert archive is not None and archive.is_file(), "the first launch wrote no archive"
    print(f"  writes the archive ({archive.stat().st_size / 2**20:.0f} MB): wall {wall:.1f} s, CPU {cpu:.1f} s",
          flush=True)
    for round_ in range(args.rounds):
        for mode in ("off", "mapped"):
            wall, cpu = launch(warehouse, ids, "off" if mode == "off" else cache, work / f"{mode}-{round_}.log")
            runs[mode].append((wall, cpu))
            print(f"  {mode:>7} #{round_ + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s", flush=True)
    print_medians(f"audit app, {len(ids)} demo-shaped snapshots", runs,
                  {"off": "no archive", "mapped": "archive mapped"})
    print(f"\nlogs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
