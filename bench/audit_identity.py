"""Are an audit's tables the same, row for row, from two code trees? The demo cluster of every era, and the batch.

    .venv/bin/python bench/audit_identity.py snapshots WAREHOUSE          # once: a real ZooKeeper, the simulator
    .venv/bin/python bench/audit_identity.py audit WAREHOUSE OUT [TREE]   # with TREE's plugins/ (default: this one)
    .venv/bin/python bench/audit_identity.py compare OUT_A OUT_B [--shared-fields]

``snapshots`` writes, in chroots of a private ZooKeeper on 127.0.0.1, the demo cluster (``scripts/demo.sh``'s shape
and plants) in every era of the simulator, and the batch-equivalence scenario of ``tests/audit/test_batch.py`` (three
clusters, their problems planted between two snapshots), and snapshots them into WAREHOUSE (``scenario.json`` lists
what to audit). ``audit`` copies WAREHOUSE's snapshots to OUT and audits them in one in-process session as the app
would: the demo snapshots in one batch, the scenario's first snapshots, then its second ones with the first as
baselines. ``compare`` reads every table both wrote (normalized, audit tables, findings, readiness, drift) and each
``audit.json`` and readiness report (without times), and prints every difference; exit 1 on any. With
``--shared-fields`` it compares what both trees know: a column, or a key of a report, that only one tree writes (a
check added since the other tree) is named once and left out of every row.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO_PLANTS = ("leader_not_in_isr", "under_replicated", "delete_marker_orphaned", "owner_assignment_mismatch",
               "malformed_znode")


def take(hosts: str, chroot: str, warehouse: Any, cluster: str, label: str) -> str:
    from kazoo.client import KazooClient

    from kafka_zk_audit.contract.warehouse import new_snapshot_id
    from kafka_zk_audit.snapshot.connection import ZkSettings
    from kafka_zk_audit.snapshot.live import write_snapshot

    snapshot_id = new_snapshot_id(suffix=f"{cluster}-{label}")
    settings = ZkSettings(hosts=hosts, chroot=chroot)
    client = KazooClient(**settings.kazoo_kwargs())
    client.start(timeout=15)
    try:
        write_snapshot(client, settings, warehouse, snapshot_id, cluster=cluster)
    finally:
        client.stop()
        client.close()
    return snapshot_id


def snapshots(root: Path) -> None:
    """The demo cluster of every era and the batch scenario, snapshotted into ``root``."""
    sys.path.insert(0, str(REPO))
    from tests.audit.test_batch import CLUSTERS, PLANTS, SETTINGS

    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit_testing.simulator import ERAS, ClusterSpec, Simulator
    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    warehouse = Warehouse(str(root))
    server = ZooKeeperServer(root.parent / f"{root.name}-zk", port=free_port()).start()
    scenario: dict[str, Any] = {"demo": [], "first": [], "second": [], "skipped_plants": {}}
    try:
        for era in ERAS:
            chroot = f"/demo_{era.replace('.', '_').replace('-', '_')}"
            server.ensure_chroot(chroot)
            with Simulator(hosts=server.hosts + chroot) as simulator:
                simulator.write(ClusterSpec(era=era, brokers=5, topics=8, partitions=6, replication_factor=3,
                                            groups=2, consumers_per_group=2, threads_per_consumer=2, seed=7))
                for check_id in DEMO_PLANTS:
                    try:
                        simulator.plant(check_id)
                    except Exception as exc:  # a plant an era cannot hold: noted, not planted
                        scenario["skipped_plants"].setdefault(era, []).append(f"{check_id}: {exc}")
                scenario["demo"].append(take(server.hosts, chroot, warehouse, f"demo-{era}", "1"))
        sims = {}
        for cluster, spec in CLUSTERS.items():
            server.ensure_chroot(f"/batch_{cluster}")
            sims[cluster] = Simulator(hosts=f"{server.hosts}/batch_{cluster}")
            sims[cluster].write(spec)
            scenario["first"].append(take(server.hosts, f"/batch_{cluster}", warehouse, cluster, "1"))
        for cluster, sim in sims.items():
            for check_id in PLANTS[cluster]:
                sim.plant(check_id)
            sim.advance(move_controller=False)
        time.sleep(1.5)
        for cluster, sim in sims.items():
            scenario["second"].append(take(server.hosts, f"/batch_{cluster}", warehouse, cluster, "2"))
            sim.close()
    finally:
        server.stop()
    (root / "settings.yaml").write_text(SETTINGS)
    (root / "scenario.json").write_text(json.dumps(scenario, indent=1))
    print(json.dumps(scenario, indent=1))


def audit(root: Path, out: Path) -> None:
    """Every snapshot of ``root`` audited into ``out`` (a copy), as listed in its scenario.json."""
    from kafka_zk_audit.audit.job import run_audit
    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.contract.warehouse import Warehouse

    print("auditing with", sys.modules["kafka_zk_audit.audit.job"].__file__, flush=True)
    scenario = json.loads((root / "scenario.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copytree(root / "snapshots", out / "snapshots")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = get_spark("audit-identity", master="local[2]")
    warehouse, settings = Warehouse(str(out)), str(root / "settings.yaml")
    run_audit(spark, warehouse, scenario["demo"], None)
    run_audit(spark, warehouse, scenario["first"], settings)
    run_audit(spark, warehouse, scenario["second"], settings)
    spark.stop()


def written(root: Path) -> dict[str, Any]:
    """Everything the audits wrote: each table folder's rows (sorted), each audit.json and readiness.json (no times)."""
    import pyarrow.parquet as pq

    found: dict[str, Any] = {}
    for folder in sorted(root.glob("**/snapshot_id=*")):
        if "snapshots" in folder.relative_to(root).parts[:1]:
            continue
        rows = pq.read_table(folder, partitioning=None).to_pylist()
        found[str(folder.relative_to(root))] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    for path in sorted(root.glob("runs/*/*.json")):
        document = json.loads(path.read_text())
        for key in ("seconds", "generated_at"):
            document.pop(key, None)
        found[str(path.relative_to(root))] = document
    return found


def shared_fields(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], set[str]]:
    """``a`` and ``b`` (``written``) restricted to the fields both have: each table's columns and each report's keys
    (at every depth) that appear on both sides; returns the fields left out, as ``table: column`` or ``report: key``."""
    left_out: set[str] = set()

    def table(name: str, left: list[str], right: list[str]) -> tuple[list[str], list[str]]:
        rows_a, rows_b = [json.loads(r) for r in left], [json.loads(r) for r in right]
        columns_a = set().union(*(r.keys() for r in rows_a)) if rows_a else set()
        columns_b = set().union(*(r.keys() for r in rows_b)) if rows_b else set()
        keep = columns_a & columns_b if rows_a and rows_b else columns_a | columns_b
        left_out.update(f"{name.split('/snapshot_id=')[0]}: {c}" for c in (columns_a | columns_b) - keep)
        return ([json.dumps({k: v for k, v in r.items() if k in keep}, sort_keys=True) for r in rows]
                for rows in (rows_a, rows_b))

    def report(name: str, left: Any, right: Any) -> tuple[Any, Any]:
        if not (isinstance(left, dict) and isinstance(right, dict)):
            return left, right
        left_out.update(f"{name.rsplit('/', 1)[-1]}: {k}" for k in set(left) ^ set(right))
        pairs = {k: report(name, left[k], right[k]) for k in set(left) & set(right)}
        return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}

    out_a, out_b = dict(a), dict(b)
    for key in set(a) & set(b):
        pair = table if isinstance(a[key], list) and isinstance(b[key], list) else report
        out_a[key], out_b[key] = pair(key, a[key], b[key])
    return out_a, out_b, left_out


def compare(first: Path, second: Path, shared: bool = False) -> int:
    a, b = written(first), written(second)
    if shared:
        a, b, left_out = shared_fields(a, b)
        print(f"left out, written by one tree only: {', '.join(sorted(left_out)) or 'nothing'}")
    differences = 0
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            differences += 1
            left, right = a.get(key), b.get(key)
            if isinstance(left, list) and isinstance(right, list):
                print(f"{key}: only in {first.name}: {sorted(set(left) - set(right))[:5]}; "
                      f"only in {second.name}: {sorted(set(right) - set(left))[:5]}")
            else:
                print(f"{key}: {str(left)[:300]} != {str(right)[:300]}")
    rows = sum(len(v) for v in a.values() if isinstance(v, list))
    print(f"{len(a)} folders and reports ({rows:,} rows) against {len(b)}: {differences} differ")
    return 1 if differences else 0


def main() -> int:
    command, *rest = sys.argv[1:]
    if command == "snapshots":
        snapshots(Path(rest[0]).resolve())
    elif command == "audit":
        root, out = Path(rest[0]).resolve(), Path(rest[1]).resolve()
        if len(rest) > 2:  # another tree's plugins/: in a fresh process whose path puts it first
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(rest[2]) / "plugins"), str(REPO)])}
            return subprocess_audit(root, out, env)
        audit(root, out)
    elif command == "compare":
        return compare(Path(rest[0]), Path(rest[1]), shared="--shared-fields" in rest[2:])
    else:
        raise SystemExit(__doc__)
    return 0


def subprocess_audit(root: Path, out: Path, env: dict[str, str]) -> int:
    import subprocess

    return subprocess.run([sys.executable, __file__, "audit", str(root), str(out)], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
