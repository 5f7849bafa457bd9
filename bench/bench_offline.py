"""The offline rebuild (ZooKeeper's own files → snapshot table) against the live walk of the same tree, same run.

    .venv/bin/python bench/bench_offline.py [--topics 25000] [--partitions 20] [--churn 200000] [--quick] [--keep]

1. Starts a private ZooKeeper on 127.0.0.1 (6 GB heap, default snapCount, no autopurge) and writes a simulated 3.x
   cluster under ``/large`` with ``bench_snapshot.write_cluster`` (25,000 topics × 20 partitions ≈ 1,000,000
   znodes; the simulator writes them in multis of 1,000 creates), then ``--churn`` single-operation txns the way a
   running Kafka cluster writes them (partition state setData, ISR-change notifications created and deleted),
   so that ZooKeeper takes snapshots of the whole tree on the way and the newest one is followed by txns to replay.
   The simulator's sessions are then closed (their ephemerals go).
2. The live walk of the tree in its own process: the project's snapshot, multiRead, one connection, unpaced
   (``bench_snapshot.run`` with the ``multi-1`` job).
3. The server is stopped; then, in its own process, ``rebuild.write_offline_snapshot`` from its dataDir with the
   same chroot: seconds to decode the snapshot, to replay the logs, to write the rows; peak RSS.
4. The log decoder (``txnlog.iter_txns``) over every log of the server, in its own process: txn records/s and
   operations/s (a multi's sub-operations counted one each), and records/s over the logs of single-op txns only.

Prints one small table: the live walk, the offline rebuild and its phases, live/offline, the log decode rates
and the load average at the start and the end (the machine may be shared; nothing is asserted). ``--quick``
uses 1,500 topics (~60,000 znodes) and 20,000 churn txns. ``--keep`` keeps the work folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_snapshot
from kazoo.client import KazooClient

from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

CLUSTER = "large"
CHURN_IN_FLIGHT = 2000
NOTIFICATIONS_EVERY = 20  # one ISR-change notification created (and one deleted) per this many state updates


def churn(hosts: str, txns: int, controller_multis: bool = False) -> float:
    """``txns`` writes through one session, up to 2,000 in flight: mostly setData of partition states (leader
    elections), plus ISR-change notifications created and deleted. With ``controller_multis`` every other state
    write is the controller's own (Kafka 2.2+): a multi of a check on /controller_epoch's version and the setData.
    Seconds taken."""
    client = KazooClient(hosts=hosts, timeout=30)
    client.start(timeout=30)
    started = time.monotonic()
    try:
        states = [f"/brokers/topics/{topic}/partitions/{partition}/state"
                  for topic in sorted(client.get_children("/brokers/topics"))[:2000]
                  for partition in client.get_children(f"/brokers/topics/{topic}/partitions")]
        epoch = client.exists("/controller_epoch") if controller_multis else None
        pending: list[Any] = []
        notifications: list[Any] = []
        written = 0
        while written < txns:
            if written % NOTIFICATIONS_EVERY == 0:
                if len(notifications) > 50:
                    pending.append(client.delete_async(notifications.pop(0).get(timeout=60)))
                else:
                    notifications.append(client.create_async(
                        "/isr_change_notification/isr_change_", b'{"version":1,"partitions":[]}', sequence=True))
            else:
                state = states[written % len(states)]
                value = (b'{"controller_epoch":3,"leader":%d,"version":1,"leader_epoch":%d,"isr":[1,2,3]}'
                         % (written % 30, written))
                if epoch is not None and written % 2:
                    multi = client.transaction()
                    multi.check("/controller_epoch", epoch.version)
                    multi.set_data(state, value)
                    pending.append(multi.commit_async())
                else:
                    pending.append(client.set_async(state, value))
            written += 1
            if len(pending) >= CHURN_IN_FLIGHT:
                for result in pending:
                    result.get(timeout=60)
                pending = []
        for result in [*pending, *notifications]:
            result.get(timeout=60)
    finally:
        client.stop()
        client.close()
    return time.monotonic() - started


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def offline_child(job: dict) -> dict:
    """The offline rebuild, timed by phase from its progress messages (decode → replay → rows)."""
    from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
    from kafka_zk_audit.snapshot.files.rebuild import write_offline_snapshot

    marks: list[tuple[float, str]] = []
    start = time.monotonic()
    manifest = write_offline_snapshot(job["data_dir"], Warehouse(job["warehouse"]), new_snapshot_id(suffix="files"),
                                      chroot=job["chroot"], progress=lambda m: marks.append((time.monotonic(), m)))
    elapsed = time.monotonic() - start
    decoded = next((at for at, message in marks if message.startswith("snapshot ")), start)
    replayed = next((at for at, message in marks if message.startswith("replayed ")), decoded)
    return {"znodes": manifest["znodes"], "seconds": elapsed, "rate": manifest["znodes"] / elapsed,
            "decode_s": decoded - start, "replay_s": replayed - decoded, "rows_s": start + elapsed - replayed,
            "replayed": next((m for _, m in marks if m.startswith("replayed ")), ""),
            "snapshot": manifest["source_files"]["snapshot"], "logs": len(manifest["source_files"]["logs"]),
            "digest_verified": manifest["digest_verified"], "peak_rss_mb": peak_rss_mb()}


def logs_child(job: dict) -> dict:
    """iter_txns over every log: records and operations per second; and over the single-op logs alone."""
    from kafka_zk_audit.snapshot.files.txnlog import iter_txns, log_files, log_start_zxid

    records = ops = single_records = 0
    seconds = single_seconds = 0.0
    for path in log_files(job["data_dir"]):
        start = time.monotonic()
        count = sub_ops = 0
        for txn in iter_txns(path):
            count += 1
            sub_ops += len(txn.ops)
        took = time.monotonic() - start
        records, ops, seconds = records + count, ops + sub_ops, seconds + took
        if log_start_zxid(path) > job["cluster_end_zxid"]:
            single_records, single_seconds = single_records + count, single_seconds + took
    return {"records": records, "ops": ops, "seconds": seconds, "records_per_s": records / seconds,
            "ops_per_s": ops / seconds, "single_records": single_records,
            "single_per_s": single_records / single_seconds if single_seconds else None,
            "peak_rss_mb": peak_rss_mb()}


def run_child(job: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{job['kind']} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def server_zxid(server: ZooKeeperServer) -> int:
    from kafka_zk_audit_testing.zk_server import four_letter_word

    answer = four_letter_word(server.host, server.port, "srvr")
    return int(answer.split("Zxid:")[1].split()[0], 16)


def measure(work: Path, topics: int, partitions: int, churn_txns: int = 200_000) -> dict:
    """Build the cluster in a private ZooKeeper under ``work``, then the live walk, the offline rebuild and the log
    decode, each in its own process; the figures."""
    load_start = os.getloadavg()[0]
    snap_count = max(1000, min(100_000, churn_txns // 2))  # ZooKeeper's default, or less so that --quick snapshots
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=6144,
                             extra_config=(f"snapCount={snap_count}", "autopurge.purgeInterval=0"),
                             c1_only=False).start()
    try:
        hosts, sim, write_seconds = bench_snapshot.write_cluster(server, CLUSTER, topics, partitions)
        cluster_end_zxid = server_zxid(server)
        churn_seconds = churn(hosts, churn_txns)
        sim.close()
        live = bench_snapshot.run({"hosts": hosts, "warehouse": str(work / "wh-live"), "reader": "snapshot",
                                   "read_mode": "multi", "connections": 1, "paced": False}, 1)
    finally:
        server.stop()
    data_dir = str(server.data_dir / "data")
    offline = run_child({"kind": "offline", "data_dir": data_dir, "warehouse": str(work / "wh-files"),
                         "chroot": f"/{CLUSTER}"})
    logs = run_child({"kind": "logs", "data_dir": data_dir, "cluster_end_zxid": cluster_end_zxid})
    return {"topics": topics, "partitions": partitions, "write_seconds": write_seconds, "churn_txns": churn_txns,
            "churn_seconds": churn_seconds, "live": live, "offline": offline, "logs": logs,
            "live_over_offline": offline["rate"] / live["rate"], "same_znodes": live["znodes"] == offline["znodes"],
            "load_average": [round(load_start, 1), round(os.getloadavg()[0], 1)]}


def report(figures: dict) -> None:
    live, offline, logs = figures["live"], figures["offline"], figures["logs"]
    print(f"\n{live['znodes']:,} znodes ({figures['topics']:,} topics × {figures['partitions']} partitions) written "
          f"in {figures['write_seconds']:.1f}s, then {figures['churn_txns']:,} single-op txns in "
          f"{figures['churn_seconds']:.1f}s; load average {figures['load_average'][0]} → "
          f"{figures['load_average'][1]} (2 cores)")
    print(f"  {'':<58}{'znodes':>11}{'seconds':>9}{'znodes/s':>11}{'peak RSS':>10}")
    print(f"  {'live walk: snapshot, multiRead, 1 connection, unpaced':<58}{live['znodes']:>11,}"
          f"{live['seconds']:>9.2f}{live['rate']:>11,.0f}{live['peak_rss_mb']:>8.0f}MB")
    print(f"  {'offline rebuild: snapshot file + logs → snapshot table':<58}{offline['znodes']:>11,}"
          f"{offline['seconds']:>9.2f}{offline['rate']:>11,.0f}{offline['peak_rss_mb']:>8.0f}MB")
    for label, key in (("decode the snapshot", "decode_s"), ("replay the logs", "replay_s"),
                       ("write the rows", "rows_s")):
        print(f"    {label:<56}{'':>11}{offline[key]:>9.2f}")
    print(f"  offline / live: {figures['live_over_offline']:.1f}×  (same znode count: {figures['same_znodes']}; "
          f"{offline['snapshot']} + {offline['logs']} log(s), {offline['replayed']}, digest verified: "
          f"{offline['digest_verified']})")
    single = logs["single_per_s"]
    print(f"  log decode: {logs['records']:,} txns ({logs['ops']:,} operations) in {logs['seconds']:.2f}s: "
          f"{logs['records_per_s']:,.0f} txns/s, {logs['ops_per_s']:,.0f} operations/s; single-op txns "
          f"({logs['single_records']:,}): {single or 0:,.0f} txns/s")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        job = json.loads(sys.argv[2])
        print(json.dumps(offline_child(job) if job["kind"] == "offline" else logs_child(job)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=25000, help="topics of the cluster (× partitions ≈ znodes)")
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--churn", type=int, default=200_000, help="single-op txns written after the cluster")
    parser.add_argument("--quick", action="store_true", help="1,500 topics (~60,000 znodes), 20,000 churn txns")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (ZooKeeper's files, warehouses)")
    args = parser.parse_args()
    if args.quick:
        args.topics, args.churn = 1500, 20_000
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-offline-"))
    try:
        report(measure(work, args.topics, args.partitions, args.churn))
    finally:
        if args.keep:
            print(f"  files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
