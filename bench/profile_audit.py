"""Where the audit app's and the gate's time goes, on one simulated cluster.

    .venv/bin/python bench/profile_audit.py [--topics 8 --partitions 4 --brokers 3] [--baseline-tree DIR]
                                            [--repeat 2] [--app-conf KEY=VALUE ...]

It starts a private ZooKeeper on 127.0.0.1, writes a simulated 3.x cluster with the simulator and snapshots
it. Then, for each code tree (this checkout, and with ``--baseline-tree`` a copy of an older ``plugins/`` and
``spark_apps/``, run on its own warehouse so that neither sees the other's findings as history):

* the audit app, with spark-submit (``local[*]``) as the DAG's audit task runs it (its settings, the machine's
  class-data archive of the driver JVM mapped): wall time from launch to exit, the time until the app's ``main``
  ran (JVM launcher and Python start), the Spark session start, and the app's own phases with their Spark job
  counts (the ``profile`` lines the app logs at INFO);
* the gate on that snapshot, in a fresh Python process as an Airflow task would be: imports, the GX File
  Data Context, the checkpoint's configuration, each validation, the Data Docs build and their localisation.

``--repeat`` audits the snapshot again (the second run has the first as its baseline, as in production).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PROFILE_LINE = re.compile(r"profile (\{.*\})$")


def snapshot_cluster(hosts: str, name: str, args: argparse.Namespace, warehouse: Any) -> str:
    """Write a simulated cluster under /<name> and snapshot it; returns the snapshot id."""
    from kazoo.client import KazooClient

    from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
    from kafka_zk_audit.contract.warehouse import new_snapshot_id
    from kafka_zk_audit.snapshot.connection import ZkSettings
    from kafka_zk_audit.snapshot.live import write_snapshot
    from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

    spec = ClusterSpec(era="3.x", brokers=args.brokers, racks=min(3, args.brokers), topics=args.topics,
                       partitions=args.partitions, replication_factor=min(3, args.brokers), groups=args.groups,
                       consumers_per_group=2, threads_per_consumer=1, seed=1)
    with Simulator(hosts=f"{hosts}/{name}") as simulator:
        simulator.write(spec)
    client = KazooClient(hosts=f"{hosts}/{name}", timeout=30)
    client.start(timeout=30)
    try:
        snapshot_id = new_snapshot_id(suffix=name)
        write_snapshot(client, ZkSettings(hosts=hosts, chroot=f"/{name}"), warehouse, snapshot_id, SnapshotOptions())
    finally:
        client.stop()
        client.close()
    return snapshot_id


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far: less sensitive than wall time to
    other work on the machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_env(tree: Path | None) -> dict[str, str]:
    """The environment that makes Python import the package from ``tree`` (None: this checkout)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "GX_ANALYTICS_ENABLED": "false"}
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree / "plugins"), env.get("PYTHONPATH")]))
    return env


def run_app(tree: Path | None, warehouse_root: str, snapshot_id: str, log: Path, conf: list[str]) -> dict[str, Any]:
    """spark-submit the audit app once, as the DAG's audit task launches it (its ``--conf`` settings, the machine's
    class-data archive mapped, or written by this run when there is none yet); wall seconds, launch-to-main seconds
    and the app's profile lines. ``conf`` (``KEY=VALUE``) is added last: a later ``--conf`` of the same key wins."""
    spark_submit = Path(sys.executable).parent / "spark-submit"
    app = (tree or REPO) / "spark_apps" / "audit_snapshot.py"
    from kafka_zk_audit.audit.session import class_data_sharing, submit_conf
    from kafka_zk_audit.contract.warehouse import Warehouse, stored_znodes

    znodes = stored_znodes(Warehouse(warehouse_root), [snapshot_id])  # sized as the DAG's audit task sizes it
    launched, cpu = time.time(), children_cpu()
    with class_data_sharing(submit_conf(znodes)) as shipped, log.open("wb") as out:
        pairs = [f"{key}={value}" for key, value in shipped.items()]
        confs = [item for pair in (("--conf", c) for c in [*pairs, *conf]) for item in pair]
        args = [str(spark_submit), "--master", "local[*]", *confs, str(app),
                "--warehouse", warehouse_root, "--snapshot-id", snapshot_id]
        code = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=tree_env(tree)).returncode
    wall, cpu = time.time() - launched, children_cpu() - cpu
    if code != 0:
        raise SystemExit(f"the audit app failed (exit {code}); see {log}")
    profiles = [json.loads(m.group(1)) for line in log.read_text(errors="replace").splitlines()
                if (m := PROFILE_LINE.search(line))]
    figures = json.loads(Path(warehouse_root, "runs", snapshot_id, "audit.json").read_text())
    result: dict[str, Any] = {"wall": wall, "cpu": cpu, "findings": figures["findings"], "checks": figures["checks"],
                              "app_seconds": figures["seconds"]}
    for profile in profiles:
        if "main_started" in profile:
            result["to_main"] = profile["main_started"] - launched
            result["session"] = profile["session_seconds"]
        if "phases" in profile:
            result["phases"] = profile["phases"]
    return result


def gate_profile(warehouse_root: str, snapshot_id: str) -> dict[str, Any]:
    """Run the gate once in this process, as the operator does, timing each step (printed as JSON).
    ``snapshot_id`` may name several snapshots, comma-separated (one gate run over all of them)."""
    started = time.monotonic()
    timings: dict[str, Any] = {}
    import great_expectations  # noqa: F401
    from great_expectations.core.validation_definition import ValidationDefinition
    from great_expectations.render.renderer.site_builder import SiteBuilder

    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit.gate.context import configure_checkpoint, file_data_context, plan_gate, split_ids
    from kafka_zk_audit.gate.suites import load_suites
    from kafka_zk_audit.gate.verdict import build_fleet_verdict

    timings["imports"] = time.monotonic() - started
    validations: list[float] = []
    docs: list[float] = []

    def timed(method: Any, into: list[float]) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return method(*args, **kwargs)
            finally:
                into.append(time.monotonic() - began)
        return wrapper

    ValidationDefinition.run = timed(ValidationDefinition.run, validations)  # type: ignore[method-assign]
    SiteBuilder.build = timed(SiteBuilder.build, docs)  # type: ignore[method-assign]

    warehouse = Warehouse(warehouse_root)
    step = time.monotonic()
    suites = load_suites({}, None)
    plan = plan_gate(warehouse, split_ids(snapshot_id), suites)
    timings["suites"] = time.monotonic() - step
    step = time.monotonic()
    contexts = file_data_context(warehouse)
    context = next(contexts)
    timings["context"] = time.monotonic() - step
    step = time.monotonic()
    checkpoint = configure_checkpoint(context, warehouse, split_ids(snapshot_id), plan=plan)
    timings["configure"] = time.monotonic() - step
    step = time.monotonic()
    result = checkpoint.run()
    timings["checkpoint_run"] = time.monotonic() - step
    step = time.monotonic()
    for _ in contexts:  # the code after the context's yield: localize the Data Docs
        pass
    timings["docs_localize"] = time.monotonic() - step
    described = json.loads(json.dumps(result.describe_dict(), default=str))
    verdict = build_fleet_verdict(described, plan.described(), plan.clusters, lambda _c: ({}, ("critical", "error")),
                                  warehouse.data_docs_index)
    timings.update(validations=validations, data_docs=docs, total=time.monotonic() - started,
                   success=verdict["success"], failed=[f["label"] for f in verdict["failed"]],
                   evaluated=verdict["evaluated_expectations"],
                   rows=sum(int(((v.get("statistics") or {}).get("evaluated_expectations") or 0) > 0)
                            for v in described.get("validation_results", [])))
    return timings


def run_gate(tree: Path | None, warehouse_root: str, snapshot_id: str, log: Path) -> dict[str, Any]:
    """The gate in a fresh Python process (imports included, as an Airflow task pays them)."""
    launched, cpu = time.time(), children_cpu()
    args = [sys.executable, str(REPO / "bench" / "profile_audit.py"), "--gate-only", warehouse_root, snapshot_id]
    with log.open("wb") as out:
        completed = subprocess.run(args, stdout=subprocess.PIPE, stderr=out, env=tree_env(tree))
    if completed.returncode != 0:
        raise SystemExit(f"the gate failed (exit {completed.returncode}); see {log}")
    result = json.loads(completed.stdout.decode().strip().splitlines()[-1])
    result["wall"], result["cpu"] = time.time() - launched, children_cpu() - cpu
    return result


def show_app(label: str, run: dict[str, Any]) -> None:
    print(f"  audit app [{label}]: wall {run['wall']:.1f}s, CPU {run['cpu']:.1f}s, findings {run['findings']}")
    if "to_main" not in run:
        print(f"    (no profile lines: the app's own figure {run['app_seconds']:.1f}s)")
        return
    print(f"    launch → main() (JVM launcher, Python, imports) {run['to_main']:.1f}s; "
          f"Spark session {run['session']:.1f}s")
    jobs = 0
    for name, phase in run.get("phases", {}).items():
        jobs += phase["jobs"]
        print(f"    {name:<22}{phase['seconds']:>7.2f}s {phase['jobs']:>4} jobs")
    print(f"    {'(all phases)':<22}{run['app_seconds']:>7.1f}s {jobs:>4} jobs")


def show_gate(label: str, run: dict[str, Any]) -> None:
    print(f"  gate [{label}]: wall {run['wall']:.1f}s, CPU {run['cpu']:.1f}s "
          f"(success {run['success']}, {run['evaluated']} expectations)")
    for key in ("imports", "suites", "context", "configure", "checkpoint_run", "docs_localize"):
        print(f"    {key:<22}{run[key]:>7.2f}s")
    validations = run["validations"]
    print(f"      {len(validations)} validations: " + ", ".join(f"{s:.2f}" for s in validations))
    print(f"      Data Docs builds ({len(run['data_docs'])}): " + ", ".join(f"{s:.2f}s" for s in run["data_docs"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2, help="audits of the snapshot per tree (2: with history)")
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="a copy of an older checkout (its plugins/ and spark_apps/) to compare with")
    parser.add_argument("--app-conf", action="append", default=[], help="extra spark-submit --conf KEY=VALUE")
    parser.add_argument("--no-gate", action="store_true")
    parser.add_argument("--gate-only", nargs=2, metavar=("WAREHOUSE", "SNAPSHOT_ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.gate_only:
        logging.basicConfig(level=logging.WARNING)
        print(json.dumps(gate_profile(*args.gate_only)))
        return 0

    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-profile-"))
    server = ZooKeeperServer(work / "zk", port=free_port()).start()
    try:
        warehouse = Warehouse(str(work / "wh"))
        snapshot_id = snapshot_cluster(server.hosts, "profiled", args, warehouse)
    finally:
        server.stop()
    znodes = json.loads(Path(warehouse.manifest_path(snapshot_id)).read_text())["znodes"]
    print(f"snapshot {snapshot_id}: {znodes:,} znodes ({os.cpu_count()} cores); logs in {work}", flush=True)
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline_tree:
        trees.insert(0, ("baseline", args.baseline_tree.resolve()))
    findings = set()
    for label, tree in trees:
        root = str(work / f"wh-{label.replace(' ', '-')}")
        os.makedirs(root)
        os.symlink(Path(warehouse.snapshot_dir(snapshot_id)).parent, Path(root) / "snapshots")
        for attempt in range(1, args.repeat + 1):
            tag = f"{label}, run {attempt}"
            run = run_app(tree, root, snapshot_id, work / f"app-{label[:4]}-{attempt}.log", args.app_conf)
            findings.add(json.dumps(run["checks"], sort_keys=True))
            show_app(tag, run)
            if not args.no_gate:
                show_gate(tag, run_gate(tree, root, snapshot_id, work / f"gate-{label[:4]}-{attempt}.log"))
            sys.stdout.flush()
    if len(findings) > 1:
        print("the trees' findings differ:", *findings, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
