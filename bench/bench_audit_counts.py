"""What an audit app of one small cluster costs beside a bare spark-submit app, counted and timed in one run.

    .venv/bin/python bench/bench_audit_counts.py [--rounds 3] [--topics 8 --partitions 4 --brokers 3]
                                                 [--warm 3] [--baseline-tree DIR] [--json FILE]

A private ZooKeeper on 127.0.0.1 holds one simulated 3.x cluster (``bench/profile_audit.py``'s), snapshotted into a
warehouse. Then, ``--rounds`` times, alternated: a bare ``spark-submit`` of a trivial PySpark app (a session, a
three-row DataFrame, its count) and the audit app (``spark_apps/audit_snapshot.py``, as the DAG's audit task runs it:
its settings, the machine's class-data archive mapped, on a fresh warehouse each time; with ``--baseline-tree``, that
tree's app too), each timed from launch to exit, wall and CPU (the app's processes, from ``getrusage``). One more
audit app per tree runs with the counters of ``kafka_zk_audit_testing.spark_counts`` around its audit
(``audit_batch``): the DataFrames built, Catalyst's analyses and rule time, the Spark jobs and the py4j calls into the
JVM. With ``--warm N`` one Python process per tree audits the snapshot N + 1 times in one in-process session and
reports the last N (the warm audit). It prints medians and the ratios to the bare app as Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
COUNTS_LINE = "bench-audit-counts "
BARE_APP = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("bare").getOrCreate()
print(spark.createDataFrame([(1,), (2,), (3,)], "n int").count())
spark.stop()
"""


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def app_env(tree: Path | None = None) -> dict[str, str]:
    """The apps' environment; with ``tree`` (another checkout) its ``plugins/`` first on the path."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree / "plugins"), env.get("PYTHONPATH")]))
    return env


def submit(app: Path, app_args: list[str], log: Path, tree: Path | None = None, *,
           archive: bool = False) -> dict[str, float]:
    """spark-submit ``app`` (``local[*]``, the audit task's --conf); its wall and CPU seconds. ``archive``: launched
    as the DAG's audit task launches its app, with the machine's class-data archive mapped (written by this run when
    there is none yet); without it, as a bare spark-submit."""
    from kafka_zk_audit.audit.session import class_data_sharing, submit_conf

    launched, cpu = time.monotonic(), children_cpu()
    with (class_data_sharing(submit_conf()) if archive else nullcontext(submit_conf())) as conf, \
            log.open("wb") as out:
        confs = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
        args = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[*]", *confs, str(app),
                *app_args]
        code = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=app_env(tree)).returncode
    if code != 0:
        raise SystemExit(f"{app.name} failed (exit {code}); see {log}")
    return {"wall": time.monotonic() - launched, "cpu": children_cpu() - cpu}


def fresh_warehouse(work: Path, snapshots: Path, label: str) -> str:
    root = work / label
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    os.symlink(snapshots, root / "snapshots")
    return str(root)


def counted_app(argv: list[str]) -> int:
    """The audit app with the counters around its audit (run by spark-submit): prints one COUNTS_LINE."""
    import kafka_zk_audit.audit.job as job
    from kafka_zk_audit_testing.spark_counts import SparkCounter

    audit_batch = job.audit_batch
    counted: dict[str, Any] = {}

    def counting(spark: Any, *args: Any, **kwargs: Any) -> Any:
        with SparkCounter(spark) as counter:
            result = audit_batch(spark, *args, **kwargs)
        counted.update(counter.counts)
        return result

    job.audit_batch = counting  # type: ignore[assignment]
    code = job.main(argv)
    print(COUNTS_LINE + json.dumps(counted), flush=True)
    return code


def warm_worker(root: str, snapshot_id: str, audits: int, out: Path) -> None:
    """In this process: one session, the snapshot audited ``audits`` + 1 times, each into a fresh warehouse."""
    from kafka_zk_audit.audit.job import run_audit
    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit_testing.spark_counts import SparkCounter

    sys.path.insert(0, str(REPO / "bench"))
    from cpu_clock import driver_cpu_clock

    spark = get_spark("bench-audit-counts", master="local[2]")
    cpu = driver_cpu_clock(spark)
    runs = []
    for attempt in range(audits + 1):
        target = fresh_warehouse(Path(root).parent, Path(root) / "snapshots", f"warm-{attempt}")
        began, began_cpu = time.monotonic(), cpu()
        with SparkCounter(spark) as counter:
            run_audit(spark, Warehouse(target), [snapshot_id], None)
        runs.append({"wall": time.monotonic() - began, "cpu": cpu() - began_cpu, **counter.counts})
    out.write_text(json.dumps(runs))


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def snapshotted(name: str, args: argparse.Namespace) -> tuple[Path, Any, str]:
    """A small simulated cluster written into a private ZooKeeper and snapshotted into a new work folder: (the
    folder, its warehouse, the snapshot id). The server is stopped again."""
    from profile_audit import snapshot_cluster

    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    work = Path(tempfile.mkdtemp(prefix=f"kafka-zk-audit-{name}-"))
    server = ZooKeeperServer(work / "zk", port=free_port()).start()
    try:
        warehouse = Warehouse(str(work / "wh"))
        return work, warehouse, snapshot_cluster(server.hosts, name, args, warehouse)
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--warm", type=int, default=0, help="warm in-process audits to time (0: none)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="a copy of another checkout (its plugins/ and spark_apps/), its audit app alternated with"
                             " this tree's (its kafka_zk_audit_testing needs spark_counts.py)")
    parser.add_argument("--counted-app", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--warm-worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.counted_app is not None:
        return counted_app(args.counted_app)
    if args.warm_worker:
        root, snapshot_id, audits, out = args.warm_worker
        warm_worker(root, snapshot_id, int(audits), Path(out))
        return 0

    sys.path.insert(0, str(REPO / "bench"))


    work, warehouse, snapshot_id = snapshotted("counted", args)
    snapshots = Path(warehouse.snapshot_dir(snapshot_id)).parent
    znodes = json.loads(Path(warehouse.manifest_path(snapshot_id)).read_text())["znodes"]
    print(f"snapshot {snapshot_id}: {znodes:,} znodes; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"logs in {work}", flush=True)
    bare_app = work / "bare_app.py"
    bare_app.write_text(BARE_APP)
    trees: dict[str, Path | None] = {"this tree": None}
    if args.baseline_tree:
        trees = {"baseline": args.baseline_tree.resolve(), **trees}
    bare: list[dict[str, float]] = []
    audit: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for attempt in range(args.rounds):
        bare.append(submit(bare_app, [], work / f"bare-{attempt}.log"))
        line = [f"  round {attempt + 1}: bare {bare[-1]['wall']:.1f} s / {bare[-1]['cpu']:.1f} CPU-s"]
        for label, tree in trees.items():
            root = fresh_warehouse(work, snapshots, f"app-{label[:4]}-{attempt}")
            app = (tree or REPO) / "spark_apps" / "audit_snapshot.py"
            audit[label].append(submit(app, ["--warehouse", root, "--snapshot-id", snapshot_id],
                                       work / f"audit-{label[:4]}-{attempt}.log", tree, archive=True))
            line.append(f"{label} {audit[label][-1]['wall']:.1f} s / {audit[label][-1]['cpu']:.1f} CPU-s")
        print(", ".join(line), flush=True)
    counts: dict[str, dict[str, float]] = {}
    warm: dict[str, list[dict[str, float]]] = {}
    for label, tree in trees.items():
        root = fresh_warehouse(work, snapshots, f"app-{label[:4]}-counted")
        log = work / f"audit-{label[:4]}-counted.log"
        submit(Path(__file__), ["--counted-app", "--warehouse", root, "--snapshot-id", snapshot_id], log, tree,
               archive=True)
        counts[label] = next(json.loads(line.split(COUNTS_LINE, 1)[1])
                             for line in log.read_text(errors="replace").splitlines() if COUNTS_LINE in line)
        if args.warm:
            out = work / f"warm-{label[:4]}.json"
            with (work / f"warm-{label[:4]}.log").open("wb") as stream:
                subprocess.run([sys.executable, __file__, "--warm-worker", str(work / "wh"), snapshot_id,
                                str(args.warm), str(out)], stdout=stream, stderr=subprocess.STDOUT,
                               env=app_env(tree), check=True)
            warm[label] = json.loads(out.read_text())[1:]

    bare_wall, bare_cpu = median(bare, "wall"), median(bare, "cpu")
    figures = {"znodes": znodes, "rounds": args.rounds, "bare": bare, "audit": audit, "counts": counts, "warm": warm,
               "load": os.getloadavg()[0]}
    labels = list(trees)
    print(f"\nAudit app of one {znodes:,}-znode cluster against a bare spark-submit app, medians of {args.rounds} "
          "alternated runs (spark-submit local[*]; a shared 2-core machine: noisy):\n")
    print("| measure | " + " | ".join(labels) + " | bare app |\n|---|" + "---|" * (len(labels) + 1))
    print("| audit app wall, launch to exit | " + " | ".join(
        f"{median(audit[t], 'wall'):.1f} s ({median(audit[t], 'wall') / bare_wall:.2f}× bare)" for t in labels)
        + f" | {bare_wall:.1f} s |")
    print("| audit app CPU, every process | " + " | ".join(
        f"{median(audit[t], 'cpu'):.1f} s ({median(audit[t], 'cpu') / bare_cpu:.2f}× bare)" for t in labels)
        + f" | {bare_cpu:.1f} s |")
    for key, label in (("dataframes", "DataFrames built per audit"), ("analyses", "Catalyst analyses"),
                       ("rule_seconds", "analyzer + optimizer rules, s"), ("jobs", "Spark jobs"),
                       ("stages", "Spark stages"), ("jvm_calls", "py4j calls into the JVM")):
        # a baseline tree's counter may not count a figure: a dash
        print(f"| {label} | " + " | ".join(f"{counts[t][key]:,}" if key in counts[t] else "–" for t in labels)
              + " | – |")
    for t in labels:
        if warm.get(t):
            runs = warm[t]
            print(f"\nwarm in-process audit, {t} (local[2], median of {len(runs)}): {median(runs, 'wall'):.1f} s wall, "
                  f"{median(runs, 'cpu'):.1f} CPU-s, {median(runs, 'dataframes'):,.0f} DataFrames, "
                  f"{median(runs, 'analyses'):,.0f} analyses, {median(runs, 'jobs'):,.0f} jobs, "
                  f"{median(runs, 'jvm_calls'):,.0f} JVM calls")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
