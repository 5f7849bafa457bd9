"""One fleet DAG run over N clusters against N single-cluster DAG runs, measured in one go.

    python bench/bench_fleet.py [--clusters 3] [--brokers 3 --topics 6]

A real ZooKeeper on 127.0.0.1 holds N simulated clusters in N chroots. The baseline is N DAG runs with
``airflow dags test``, one per cluster (each its own snapshot, Spark app and gate); the measured run is one
DAG run whose settings list the N clusters (mapped snapshots, one Spark app, one gate). Wall times
include Airflow, the JVMs and GX; the printed ratio is baseline / fleet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=6)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    server = ZooKeeperServer(tmp / "zk", port=free_port()).start()
    names = [f"c{i}" for i in range(args.clusters)]
    sims = {n: Simulator(hosts=f"{server.hosts}/bench_{n}") for n in names}
    try:
        for sim in sims.values():
            sim.write(ClusterSpec(era="3.x", brokers=args.brokers, topics=args.topics, partitions=2,
                                  replication_factor=min(3, args.brokers), groups=1))
        base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"}
        env = airflow_env(airflow_home=tmp / "airflow", base=base)
        for name in names:
            env[f"AIRFLOW_CONN_ZK_{name.upper()}"] = json.dumps(
                {"conn_type": "zookeeper", "host": server.hosts, "extra": {"chroot": f"/bench_{name}"}})
        ensure_metadata_db(env)
        timings: dict[str, float] = {}
        for name in names:
            single = tmp / f"single-{name}.yaml"
            single.write_text(yaml.safe_dump({"schedule": None, "fleet": {"task_retries": 0},
                                              "clusters": [{"name": name, "zk_conn_id": f"zk_{name}"}]}))
            started = time.monotonic()
            run_dag_once({**env, "KAFKA_ZK_AUDIT_CONFIG": str(single)},
                         {"warehouse": str(tmp / "wh-single"), "run_label": f"single{name}"}, tmp / f"{name}.log")
            timings[f"single {name}"] = time.monotonic() - started
            print(f"single-cluster run {name}: {timings[f'single {name}']:.1f} s", flush=True)
        fleet = tmp / "fleet.yaml"
        fleet.write_text(yaml.safe_dump({"schedule": None, "fleet": {"task_retries": 0},
                                         "clusters": [{"name": n, "zk_conn_id": f"zk_{n}"} for n in names]}))
        started = time.monotonic()
        run_dag_once({**env, "KAFKA_ZK_AUDIT_CONFIG": str(fleet)},
                     {"warehouse": str(tmp / "wh-fleet"), "run_label": "fleet"}, tmp / "fleet.log")
        timings["fleet"] = time.monotonic() - started
        fleet_json = next((tmp / "wh-fleet").glob("runs/fleet-*-fleet/fleet.json"))
        audited = [n for n, e in json.loads(fleet_json.read_text())["clusters"].items() if e["status"] != "not audited"]
    finally:
        for sim in sims.values():
            sim.close()
        server.stop()
    singles = sum(v for k, v in timings.items() if k.startswith("single"))
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores)")
    print(f"| measure | wall time |\n|---|---|\n| {args.clusters} single-cluster DAG runs, one after the other | "
          f"{singles:.1f} s |\n| one fleet DAG run over the {args.clusters} clusters ({len(audited)} audited) | "
          f"{timings['fleet']:.1f} s |\n| speed-up (singles / fleet) | {singles / timings['fleet']:.2f}x |")
    return 0 if len(audited) == args.clusters else 1


if __name__ == "__main__":
    sys.exit(main())
