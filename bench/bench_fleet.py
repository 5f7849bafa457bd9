"""What a fleet costs: the keyed audit over 1, 10 and 100 clusters, each ratio against one cluster in the same run.

    .venv/bin/python bench/bench_fleet.py [--sizes 1,10,100] [--cli 8] [--dag 100] [--json FILE]

A private ZooKeeper on 127.0.0.1 holds up to max(--sizes) simulated demo-shaped clusters (3.x, ~600 znodes each),
one chroot each, each snapshotted while healthy (its brokers registered). Then, each in its own process:

1. the audit Spark app (spark-submit local[*], as the DAG's audit task runs it) on the snapshots of 1, 10 and 100
   clusters in one app: wall time, Spark jobs (the app's ``profile`` lines), and the ratio to one cluster; then
   the gate over the same snapshots in a fresh Python process (``profile_audit.run_gate``: imports included);
2. ``kafka-zk-audit run`` with ``--cli`` clusters (``--zk NAME=…`` each) against the same command with one;
3. with ``--dag N``: one DAG run (``airflow dags test``) over N clusters against one over a single cluster. Before the
   N-cluster run, ``PLANTS`` are planted into a few clusters; the run must summarise every cluster and find each
   planted problem in its own cluster only (the bench fails otherwise).

It prints one table with the targets of the keyed audit; ``--json`` also writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import profile_audit  # bench/profile_audit.py (the script's folder): the gate in a fresh process
import yaml
from kazoo.client import KazooClient

from kafka_zk_audit.audit.session import submit_conf
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parents[1]
SPARK_APP = REPO / "spark_apps" / "audit_snapshot.py"
CLI = Path(sys.executable).parent / "kafka-zk-audit"
PROFILE_LINE = re.compile(r"profile (\{.*\})$")
# The demo's shape, ~600 znodes: what the targets of the keyed audit are stated for.
SHAPE = dict(era="3.x", brokers=3, racks=3, topics=28, partitions=6, replication_factor=3, groups=2,
             consumers_per_group=2, threads_per_consumer=1)
# Planted before the many-cluster DAG run: (index of the cluster among the first --dag ones, check).
PLANTS = ((3, "leader_not_in_isr"), (-1, "under_replicated"), (-2, "controller_missing"))


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KAFKA_ZK_AUDIT"))}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "GX_ANALYTICS_ENABLED": "false"}


def write_clusters(server: ZooKeeperServer, count: int, store: Warehouse,
                   keep_open: int) -> tuple[list[str], dict[str, str], list[Simulator]]:
    """Write ``count`` clusters, each snapshotted into ``store`` while its brokers are registered (a healthy
    cluster: its simulator's sessions hold the ephemeral znodes). The first ``keep_open`` simulators stay open
    for the rows that read the ensemble live. Returns the names, the snapshot ids by name and the open
    simulators."""
    names = [f"c{index:03d}" for index in range(count)]
    ids, open_sims = {}, []
    for index, name in enumerate(names):
        server.ensure_chroot(f"/{name}")
        sim = Simulator(hosts=f"{server.hosts}/{name}")
        sim.write(ClusterSpec(**SHAPE, seed=index))
        client = KazooClient(hosts=f"{server.hosts}/{name}")
        client.start(timeout=15)
        try:
            ids[name] = new_snapshot_id(suffix=name)
            write_snapshot(client, ZkSettings(hosts=server.hosts, chroot=f"/{name}"), store, ids[name], cluster=name)
        finally:
            client.stop()
            client.close()
        if index < keep_open:
            open_sims.append(sim)
        else:
            sim.close()
    return names, ids, open_sims


def warehouse_of(store: Warehouse, snapshot_ids: list[str], root: Path) -> Warehouse:
    """A warehouse holding copies of these stored snapshots only."""
    for sid in snapshot_ids:
        shutil.copytree(store.snapshot_dir(sid), root / "snapshots" / f"snapshot_id={sid}")
    return Warehouse(str(root))


def run_app(warehouse: Warehouse, snapshot_ids: list[str], log: Path) -> dict[str, Any]:
    """spark-submit the audit app once on these snapshots: wall seconds, Spark jobs and the app's phases."""
    spark_submit = Path(sys.executable).parent / "spark-submit"
    confs = [item for key, value in submit_conf().items() for item in ("--conf", f"{key}={value}")]
    args = [str(spark_submit), "--master", "local[*]", *confs, str(SPARK_APP), "--warehouse", warehouse.root,
            "--snapshot-ids", ",".join(snapshot_ids)]
    started = time.monotonic()
    with log.open("wb") as out:
        code = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=clean_env()).returncode
    wall = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"the audit app failed (exit {code}); see {log}")
    phases: dict[str, Any] = {}
    for line in log.read_text(errors="replace").splitlines():
        found = PROFILE_LINE.search(line)
        if found and "phases" in (profile := json.loads(found.group(1))):
            phases = profile["phases"]
    findings = sum(json.loads(Path(warehouse.run_dir(sid), "audit.json").read_text())["findings"]
                   for sid in snapshot_ids)
    return {"wall": wall, "jobs": int(sum(p["jobs"] for p in phases.values())), "phases": phases,
            "findings": findings}


def run_cli(server: ZooKeeperServer, names: list[str], work: Path, label: str) -> dict[str, Any]:
    """``kafka-zk-audit run`` over these clusters, each named on the command line."""
    args = [str(CLI), "run", "--warehouse", str(work / f"wh-cli-{label}")]
    for name in names:
        args += ["--zk", f"{name}={server.hosts}/{name}"]
    env = {**clean_env(), "AIRFLOW_HOME": str(work / f"airflow-cli-{label}")}
    started = time.monotonic()
    result = subprocess.run(args, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"kafka-zk-audit run failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return {"wall": wall, "exit": result.returncode}


def run_dag(server: ZooKeeperServer, names: list[str], work: Path, label: str) -> dict[str, Any]:
    """One ``airflow dags test`` over these clusters."""
    from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once

    env = airflow_env(airflow_home=work / f"airflow-dag-{label}", base=clean_env())
    for name in names:
        env[f"AIRFLOW_CONN_ZK_{name.upper()}"] = json.dumps(
            {"conn_type": "zookeeper", "host": server.hosts, "extra": {"chroot": f"/{name}"}})
    settings = work / f"dag-{label}.yaml"
    settings.write_text(yaml.safe_dump({"schedule": None, "fleet": {"task_retries": 0, "max_parallel_snapshots": 4},
                                        "clusters": [{"name": n, "zk_conn_id": f"zk_{n}"} for n in names]}))
    ensure_metadata_db(env)
    started = time.monotonic()
    result = run_dag_once({**env, "KAFKA_ZK_AUDIT_CONFIG": str(settings)},
                          {"warehouse": str(work / f"wh-dag-{label}"), "run_label": label}, work / f"dag-{label}.log")
    wall = time.monotonic() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"the DAG run failed (exit {result.returncode}); see {work / f'dag-{label}.log'}")
    fleet_file = next((work / f"wh-dag-{label}" / "runs").glob(f"*-{label}/fleet.json"), None)
    fleet = json.loads(fleet_file.read_text()) if fleet_file else {"clusters": {}}
    findings = {}
    for name, cluster in fleet["clusters"].items():
        summary = json.loads(Path(cluster["summary"]).read_text()) if cluster.get("summary") else {"checks": {}}
        findings[name] = sorted(check for check, count in summary["checks"].items() if count)
    return {"wall": wall, "exit": result.returncode, "summarised": sum(1 for f in fleet["clusters"].values()
                                                                       if f.get("summary")),
            "red": fleet.get("red", []), "findings": {name: found for name, found in findings.items() if found}}


def plant(sims: list[Simulator], names: list[str]) -> dict[str, str]:
    """Plant ``PLANTS`` into these clusters (their simulators open); returns cluster -> planted check."""
    planted = {}
    for index, check_id in PLANTS:
        sims[index % len(names)].plant(check_id)
        planted[names[index % len(names)]] = check_id
    return planted


def attribution_problem(run: dict[str, Any], names: list[str], planted: dict[str, str]) -> str | None:
    """None when every cluster was summarised and each planted problem was found in its own cluster and nowhere
    else (red: planted clusters only; a warning-only plant leaves its cluster green); else what went wrong."""
    if run["summarised"] != len(names):
        return f"only {run['summarised']} of {len(names)} clusters were summarised"
    wrong = {name: found for name, found in run["findings"].items() if name not in planted}
    missing = [name for name, check_id in planted.items() if check_id not in run["findings"].get(name, [])]
    if wrong or missing or not run["red"] or not set(run["red"]) <= set(planted):
        return f"planted problems misattributed: planted {planted}, found {run['findings']}, red {run['red']}"
    return None


def table(results: dict[str, Any]) -> str:
    app = results["app"]
    one = app.get("1") or next(iter(app.values()), None)
    lines = ["| measure | now | target | met |", "|---|---|---|---|"]

    def row(measure: str, now: str, target: str, met: bool | None) -> None:
        lines.append(f"| {measure} | {now} | {target} | {'–' if met is None else ('yes' if met else '**no**')} |")

    for size, figures in app.items():
        ratio = figures["wall"] / one["wall"]
        row(f"audit app, {size} demo-shaped snapshot(s) in one app", f"{figures['wall']:.1f} s, {figures['jobs']} "
            f"Spark jobs ({ratio:.2f}× one; {figures['findings']} findings)",
            "≤ 2× one (100)" if size != "1" else "< 20 s", figures["wall"] < 20 if size == "1" else
            (ratio <= 2 if size == "100" else None))
    if app:
        row("Spark jobs per audit app run, whatever the number of snapshots", ", ".join(
            f"{size}: {figures['jobs']}" for size, figures in app.items()), "≤ 60",
            all(figures["jobs"] <= 60 for figures in app.values()))
    gates = results.get("gate") or {}
    for size, figures in gates.items():
        ratio = figures["wall"] / gates[next(iter(gates))]["wall"]
        row(f"gate over {size} snapshot(s) in one run (fresh process)", f"{figures['wall']:.1f} s, "
            f"{figures['validations']} validations ({ratio:.2f}× the first)", "≤ 2× one (100)",
            ratio <= 2 if size == "100" else None)
    if "cli" in results:
        cli = results["cli"]
        ratio = cli["many"]["wall"] / cli["one"]["wall"]
        row(f"`kafka-zk-audit run`, {cli['clusters']} clusters / 1 cluster",
            f"{cli['many']['wall']:.0f} s / {cli['one']['wall']:.0f} s = {ratio:.2f}×", "≤ 1.5×", ratio <= 1.5)
    if "dag" in results:
        dag = results["dag"]
        ratio = dag["many"]["wall"] / dag["one"]["wall"]
        row(f"one DAG run over {dag['clusters']} clusters / one cluster's run",
            f"{dag['many']['wall']:.0f} s / {dag['one']['wall']:.0f} s = {ratio:.2f}× ({dag['many']['summarised']} "
            f"summarised; {len(dag['planted'])} planted problems, "
            f"{'each found in its cluster only' if not dag['problem'] else 'MISATTRIBUTED'})", "≤ 3×, < 10 min",
            ratio <= 3 and dag["many"]["wall"] < 600 and not dag["problem"])
        row("one DAG run, one demo-shaped cluster, end to end", f"{dag['one']['wall']:.0f} s", "< 30 s",
            dag["one"]["wall"] < 30)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,10,100", help="numbers of snapshots audited in one app")
    parser.add_argument("--cli", type=int, default=8, help="clusters of the `kafka-zk-audit run` row (0: skip)")
    parser.add_argument("--dag", type=int, default=0, help="clusters of the DAG row (0: skip)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-fleet-"))
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=2048, c1_only=False).start()
    results: dict[str, Any] = {"app": {}, "gate": {}}
    sims: list[Simulator] = []
    try:
        count = max([*sizes, args.cli, args.dag])
        say(f"writing {count} demo-shaped clusters into {server.hosts}, each snapshotted while healthy")
        store = Warehouse(str(work / "store"))
        names, stored, sims = write_clusters(server, count, store, max(args.cli, args.dag))
        for size in sizes:
            ids = [stored[name] for name in names[:size]]
            warehouse = warehouse_of(store, ids, work / f"wh-app-{size}")
            znodes = sum(json.loads(Path(warehouse.manifest_path(sid)).read_text())["znodes"] for sid in ids)
            say(f"audit app on {size} snapshot(s), {znodes:,} znodes")
            results["app"][str(size)] = {**run_app(warehouse, ids, work / f"app-{size}.log"), "znodes": znodes}
            say(f"  {results['app'][str(size)]['wall']:.1f} s, {results['app'][str(size)]['jobs']} jobs")
            gate = profile_audit.run_gate(None, warehouse.root, ",".join(ids), work / f"gate-{size}.log")
            results["gate"][str(size)] = {"wall": gate["wall"], "validations": len(gate["validations"]),
                                          "success": gate["success"]}
            say(f"  gate: {gate['wall']:.1f} s, {len(gate['validations'])} validations")
        if args.cli:
            say(f"kafka-zk-audit run: 1 cluster, then {args.cli}")
            one = run_cli(server, names[:1], work, "one")
            many = run_cli(server, names[:args.cli], work, "many")
            results["cli"] = {"clusters": args.cli, "one": one, "many": many}
        if args.dag:
            say(f"DAG run: 1 cluster, then {args.dag}")
            one = run_dag(server, names[:1], work, "one")
            planted = plant(sims[:args.dag], names[:args.dag])
            say(f"  planted {planted}")
            many = run_dag(server, names[:args.dag], work, "many")
            problem = attribution_problem(many, names[:args.dag], planted)
            say(problem or f"  {many['summarised']} clusters summarised; findings {many['findings']}, red "
                           f"{', '.join(many['red'])}: each in its own cluster")
            results["dag"] = {"clusters": args.dag, "one": one, "many": many, "planted": planted, "problem": problem}
    finally:
        for sim in sims:
            sim.close()
        server.stop()
    print(table(results))
    print(f"(load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; work files in {work})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if (results.get("dag") or {}).get("problem"):
        print(f"FAILED: {results['dag']['problem']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
