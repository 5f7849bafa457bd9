"""The audit app with and without the kept JVM class handles (:mod:`kafka_zk_audit.audit.jvm_handles`), in one run.

    .venv/bin/python bench/bench_jvm_handles.py [--rounds 3] [--clusters 10]

A private ZooKeeper on 127.0.0.1 holds ``--clusters`` demo-shaped 3.x clusters (bench/bench_all.py's), each
snapshotted into one warehouse. The audit app (spark-submit ``local[*]``, all the snapshots in one app, launched as
the DAG's audit task launches it, the class-data archive mapped) runs ``--rounds`` times each, alternating: with
py4j's own class lookups (``KAFKA_ZK_AUDIT_JVM_HANDLES=off``, the baseline) and with the handles kept. Then one
in-process session audits the same snapshots warm, alternating the two the same way. It prints wall and CPU seconds
of every run, the medians and their ratios.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from bench_jvm_archive import launch, prepared_fleet, print_medians
from cpu_clock import driver_cpu_clock

from kafka_zk_audit.audit.jvm_handles import JVM_HANDLES_ENV, KEPT_CLASSES
from kafka_zk_audit.contract.warehouse import Warehouse

MODES = ("off", "kept")


def in_process(warehouse: Warehouse, ids: list[str], rounds: int, work: Path) -> dict[str, list[tuple[float, float]]]:
    """Warm audits in one session, alternating: the handles dropped from the gateway's view, then kept again. CPU
    is the driver JVM's (from /proc) plus this process's."""
    from kafka_zk_audit.audit.job import run_audit
    from kafka_zk_audit.audit.jvm_handles import keep_jvm_handles
    from kafka_zk_audit.audit.session import get_spark, size_spark_to

    spark = get_spark("bench-jvm-handles", master="local[2]", shuffle_partitions=2, driver_memory="2g")
    size_spark_to(spark, 0)
    view = spark.sparkContext._jvm
    cpu = driver_cpu_clock(spark)

    def audit(label: str) -> tuple[float, float]:
        copy = work / f"inproc-{label}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(warehouse.root, copy)
        start_cpu, start = cpu(), time.monotonic()
        run_audit(spark, Warehouse(str(copy)), ids, None)
        return time.monotonic() - start, cpu() - start_cpu

    audit("warm-up")
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    try:
        for round_ in range(rounds):
            for mode in MODES:
                for name in [n for full, short in KEPT_CLASSES.items() for n in (full, *short)]:
                    view.__dict__.pop(name, None)
                if mode == "kept":
                    keep_jvm_handles(spark)
                wall, used = audit(f"{mode}-{round_}")
                runs[mode].append((wall, used))
                print(f"  in-process {mode:>4} #{round_ + 1}: wall {wall:.1f} s, CPU {used:.1f} s", flush=True)
    finally:
        spark.stop()
    return runs


def main() -> int:
    args, work, warehouse, ids = prepared_fleet(__doc__, "kafka-zk-audit-bench-handles-")
    cache = os.environ.get("KAFKA_ZK_AUDIT_JVM_CACHE", "")  # the machine's archive, as the product maps it
    launch(warehouse, ids, cache, work / "first.log")  # writes the archive when the machine has none yet
    apps: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    for round_ in range(args.rounds):
        for mode in MODES:
            os.environ[JVM_HANDLES_ENV] = "off" if mode == "off" else ""
            wall, cpu = launch(warehouse, ids, cache, work / f"{mode}-{round_}.log")
            apps[mode].append((wall, cpu))
            print(f"  app {mode:>4} #{round_ + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s", flush=True)
    os.environ[JVM_HANDLES_ENV] = ""
    warm = in_process(warehouse, ids, args.rounds, work)
    columns = {"off": "py4j lookups", "kept": "handles kept"}
    print_medians(f"audit app, {len(ids)} demo-shaped snapshots", apps, columns)
    print_medians(f"warm in-process audit, {len(ids)} snapshots", warm, columns)
    print(f"\nlogs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
