"""Every speed figure of kafka-zk-audit in one run, each with its baseline from the same run, and the targets.

    .venv/bin/python bench/bench_all.py [--quick] [--write-docs] [--json FILE] [--suite-minutes M]
    .venv/bin/python bench/bench_all.py --from-json FILE --write-docs     (the tables of an earlier run, again)

One private ZooKeeper on 127.0.0.1 holds simulated 3.x clusters of ~300 (the demo's shape), ~100,000, ~300,000 and
~1,000,000 znodes. Then, each reader and each app in its own process:

1. snapshot readers at 100k, 300k and 1M znodes (bench/bench_snapshot.py's readers): the naive synchronous walk
   (the baseline, stopped after --naive-seconds), the single-operation fallback for servers < 3.6 (100k only), the
   counting-only kazoo + multiRead walk (the single-connection ceiling), the snapshot over one connection and over
   two (parallel_connections=2), unpaced; znodes/s, ratios, peak RSS per process;
2. the audit Spark app (spark-submit local[*], as the DAG runs it) and the gate (a fresh Python process, as an
   Airflow task) on the snapshots of 300, 100k and 1M znodes;
3. one DAG run of the demo-shaped cluster (``airflow dags test``, the first on a new warehouse), broken down by task
   from Airflow's metadata database;
4. a reaudit of 30 stored snapshots of the 100k cluster in one Spark app on local[2].

It prints the detail tables, then the table of targets with the figures before the speed work ("before": measured
when the work was planned, on this 2-core machine) next to this run's. ``--write-docs`` (what ``make bench`` passes)
replaces the block between ``<!-- bench_all:begin -->`` and ``<!-- bench_all:end -->`` in docs/performance.md with them,
headed by the date, the commit (``git rev-parse HEAD``) and the machine (cores, memory, CPU model), and its rows of the
README's summary (between ``<!-- bench_summary:begin -->`` and ``<!-- bench_summary:end -->``): one per target but
those that ``bench/bench_audit_floor.py``'s newer targets replace there, beside the rows that bench writes.
``--quick`` uses ~300 / 10k / 30k / 60k znodes and 5 snapshots to check the benchmark (the header says so).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import bench_audit
import bench_reaudit
import bench_snapshot
import profile_audit
import yaml

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PERFORMANCE = REPO / "docs" / "performance.md"
TABLE_BEGIN, TABLE_END = "<!-- bench_all:begin -->", "<!-- bench_all:end -->"  # in docs/performance.md
SUMMARY_BEGIN, SUMMARY_END = "<!-- bench_summary:begin -->", "<!-- bench_summary:end -->"  # in README.md
SUMMARY_HEADER = "| measure | now | target | met |\n|---|---|---|---|"
SIZES = {"100k": 2300, "300k": 7000, "1M": 25000}  # topics × 20 partitions
QUICK_SIZES = {"100k": 230, "300k": 700, "1M": 1500}
DEMO = ClusterSpec(era="3.x", brokers=5, topics=8, partitions=6, replication_factor=3, groups=2,
                   consumers_per_group=2, threads_per_consumer=2, seed=7)


@dataclass(frozen=True)
class Target:
    """One line of the table: what, the figure before the speed work, the target and how to judge ``now``."""

    key: str
    measure: str
    before: str
    target: str
    limit: float
    higher_is_better: bool


TARGETS = (
    Target("ratio_1m", "snapshot rate / single-connection counting-only ceiling, same run, 1M znodes",
           "0.70–0.72", "≥ 0.9 (one connection)", 0.9, True),
    Target("wall_1m", "1M-znode snapshot wall time (best of 1 and 2 connections)", "14.3 s", "< 7 s", 7.0, False),
    Target("rss_1m", "peak RSS per snapshot process, 1M znodes", "309 MB", "< 400 MB", 400.0, False),
    Target("single_naive", "single-op fallback / naive walk (100k)", "2.7×", "≥ 4×", 4.0, True),
    Target("audit_demo", "audit app, demo-shaped cluster (~300 znodes), incl. JVM", "~60 s", "< 20 s", 20.0, False),
    Target("audit_1m", "audit app, 1M znodes", "141 s", "< 60 s", 60.0, False),
    Target("per_znode", "audit app cost per znode at 1M / at 100k (over the demo's)", "–", "≤ 1.2×", 1.2, False),
    Target("gate_demo", "gate, demo-shaped cluster", "~45 s", "< 10 s", 10.0, False),
    Target("dag_demo", "one DAG run, demo-shaped cluster, end to end", "98–150 s", "< 45 s", 45.0, False),
    Target("reaudit", "reaudit: 30 stored snapshots of 100k znodes, one app, local[2]", "– (none)", "< 3 min",
           180.0, False),
    Target("suite", "`make test` on 2 cores, fresh clone", "46–68 min", "< 10 min", 10.0, False),
)
# the README's rows left to bench/bench_audit_floor.py's targets (the same measures, newer targets); docs keep them
README_OMITS = ("audit_demo", "audit_1m", "dag_demo", "suite")
UNITS = {"ratio_1m": "{:.2f}", "wall_1m": "{:.1f} s", "rss_1m": "{:.0f} MB", "single_naive": "{:.1f}×",
         "audit_demo": "{:.1f} s", "audit_1m": "{:.1f} s", "per_znode": "{:.2f}×", "gate_demo": "{:.1f} s",
         "dag_demo": "{:.1f} s", "reaudit": "{:.0f} s", "suite": "{:.1f} min"}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load()}] {message}", flush=True)


def snapshot_readers(server: ZooKeeperServer, work: Path, sizes: dict[str, int], naive_seconds: float,
                     partitions: int) -> dict[str, dict]:
    """Step 1: every reader at every size; also leaves each size's one-connection snapshot for step 2."""
    results: dict[str, dict] = {}
    for label, topics in sizes.items():
        say(f"writing the {label} cluster ({topics} topics × {partitions} partitions)")
        hosts, sim, write_seconds = bench_snapshot.write_cluster(server, f"c{label}", topics, partitions)
        jobs = {"naive": {"reader": "naive", "seconds": naive_seconds}}
        if label == "100k":
            jobs["single"] = {"reader": "snapshot", "read_mode": "single", "connections": 1, "paced": False}
        jobs["ceiling"] = {"reader": "ceiling"}
        jobs["multi-1"] = {"reader": "snapshot", "read_mode": "multi", "connections": 1, "paced": False}
        jobs["multi-2"] = {"reader": "snapshot", "read_mode": "multi", "connections": 2, "paced": False}
        rows = {}
        for key, job in jobs.items():
            warehouse = work / f"wh-{label}-{key}"
            say(f"  {label}: {key}")
            rows[key] = bench_snapshot.run({"hosts": hosts, "warehouse": str(warehouse), **job}, 1)
            rows[key]["warehouse"] = str(warehouse)
        sim.close()
        rows["write_seconds"] = write_seconds
        results[label] = rows
    return results


def snapshot_of(warehouse: str) -> str:
    """The one snapshot id in a warehouse written by one reader."""
    (snapshot_dir,) = Path(warehouse, "snapshots").glob("snapshot_id=*")
    return snapshot_dir.name.split("=", 1)[1]


def demo_snapshot(server: ZooKeeperServer, work: Path) -> tuple[str, str]:
    """The demo-shaped cluster under /demo, snapshotted into its own warehouse (its hosts, warehouse)."""
    server.ensure_chroot("/demo")
    hosts = f"{server.hosts}/demo"
    sim = Simulator(hosts=hosts)
    sim.write(DEMO)
    warehouse = work / "wh-demo"
    bench_snapshot.run({"reader": "snapshot", "hosts": hosts, "warehouse": str(warehouse), "read_mode": "multi",
                        "connections": 1, "paced": True}, 1)
    sim.close()
    return hosts, str(warehouse)


def audit_and_gate(label: str, warehouse: str, work: Path) -> dict:
    """Step 2 for one snapshot: the audit app, then the gate."""
    snapshot_id = snapshot_of(warehouse)
    znodes = json.loads(Path(Warehouse(warehouse).manifest_path(snapshot_id)).read_text())["znodes"]
    say(f"audit app on {label} ({znodes:,} znodes)")
    app = bench_audit.run_app(Warehouse(warehouse), snapshot_id, work)
    say(f"gate on {label}")
    gate = profile_audit.run_gate(None, warehouse, snapshot_id, work / f"gate-{label}.log")
    return {"znodes": znodes, "app_wall": app["wall"], "app_seconds": app["app"], "findings": app["findings"],
            "gate_wall": gate["wall"], "gate_validations": len(gate["validations"])}


def outside_env() -> dict[str, str]:
    """This process's environment without Airflow's settings or the audit's settings file: the base of a run's own
    Airflow home."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"}


def dag_run(server: ZooKeeperServer, work: Path) -> dict:
    """Step 3: one ``airflow dags test`` of the demo-shaped cluster; wall time and each task's."""
    home = work / "airflow"
    env = airflow_env(airflow_home=home, base=outside_env())
    env["AIRFLOW_CONN_ZK_DEMO"] = json.dumps({"conn_type": "zookeeper", "host": server.hosts,
                                              "extra": {"chroot": "/demo"}})
    settings = work / "demo.yaml"
    settings.write_text(yaml.safe_dump({"schedule": None, "fleet": {"task_retries": 0},
                                        "clusters": [{"name": "demo", "zk_conn_id": "zk_demo"}]}))
    ensure_metadata_db(env)
    say("one DAG run of the demo-shaped cluster")
    started = time.monotonic()
    result = run_dag_once({**env, "KAFKA_ZK_AUDIT_CONFIG": str(settings)},
                          {"warehouse": str(work / "wh-dag"), "run_label": "bench"}, work / "dag.log")
    wall = time.monotonic() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"the DAG run failed (exit {result.returncode}); see {work / 'dag.log'}")
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute("SELECT task_id, map_index, start_date, end_date FROM task_instance "
                          "WHERE dag_id = 'kafka_zk_audit' ORDER BY start_date").fetchall()
    tasks = []
    for task_id, map_index, start, end in rows:
        if start and end:
            seconds = (_parse_time(end) - _parse_time(start))
            tasks.append((task_id + (f"[{map_index}]" if map_index >= 0 else ""), seconds))
    return {"wall": wall, "tasks": tasks}


def _parse_time(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", text)).timestamp()


def reaudit(server: ZooKeeperServer, work: Path, count: int, topics: int, partitions: int) -> dict:
    """Step 4: ``count`` stored snapshots, then one reaudit on local[2]."""
    warehouse = Warehouse(str(work / "wh-reaudit"))
    say(f"storing {count} snapshots of {topics} topics for the reaudit")
    znodes = bench_reaudit.store_snapshots(server, warehouse, count, topics, partitions)
    say("reaudit on local[2]")
    summary = bench_reaudit.run_reaudit(warehouse, "local[2]", work / "reaudit.log")
    return {"snapshots": len(summary["snapshots"]), "znodes": znodes, "wall": summary["wall"],
            "app_seconds": summary["seconds"], "failed": len(summary.get("failed") or [])}


def figures(results: dict, suite_minutes: float | None) -> dict[str, float | None]:
    """This run's value of each target."""
    snap, audits = results["snapshot"], results["audit"]
    big = snap["1M"]
    best = min(big["multi-1"]["seconds"], big["multi-2"]["seconds"])
    demo, mid, large = audits["demo"], audits["100k"], audits["1M"]

    def per_znode(row: dict) -> float:
        return (row["app_wall"] - demo["app_wall"]) / max(row["znodes"] - demo["znodes"], 1)

    return {
        "ratio_1m": big["multi-1"]["rate"] / big["ceiling"]["rate"],
        "wall_1m": best,
        "rss_1m": max(big["multi-1"]["peak_rss_mb"], big["multi-2"]["peak_rss_mb"]),
        "single_naive": snap["100k"]["single"]["rate"] / snap["100k"]["naive"]["rate"],
        "audit_demo": demo["app_wall"],
        "audit_1m": large["app_wall"],
        "per_znode": per_znode(large) / per_znode(mid) if per_znode(mid) > 0 else None,
        "gate_demo": demo["gate_wall"],
        "dag_demo": results["dag"]["wall"],
        # fewer than 30 snapshots (--reaudit-snapshots): the wall time scaled to 30 at the measured cost per snapshot
        "reaudit": results["reaudit"]["wall"] * 30 / results["reaudit"]["snapshots"],
        "suite": suite_minutes,
    }


def _judged(t: Target, now: dict[str, float | None]) -> tuple[str, str]:
    """(this run's figure as shown, whether it meets its target)."""
    value = now.get(t.key)
    if value is None:
        return "not measured by this run", "–"
    ok = value >= t.limit if t.higher_is_better else value <= t.limit
    return UNITS[t.key].format(value), "yes" if ok else "**no**"


def targets_table(now: dict[str, float | None], note: str) -> str:
    lines = [f"| measure | before | now ({note}) | target | met |", "|---|---|---|---|---|"]
    for t in TARGETS:
        shown, met = _judged(t, now)
        lines.append(f"| {t.measure} | {t.before} | {shown} | {t.target} | {met} |")
    return "\n".join(lines)


def summary_table(now: dict[str, float | None]) -> str:
    """This bench's rows of the README's summary: one per target but README_OMITS, this run's figure and whether it is
    met."""
    lines = [SUMMARY_HEADER]
    for t in TARGETS:
        if t.key not in README_OMITS:
            shown, met = _judged(t, now)
            lines.append(f"| {t.measure} | {shown} | {t.target} | {met} |")
    return "\n".join(lines)


def merge_summary(rows: list[str], note: str, replaces: set[str], note_start: str, first: bool) -> None:
    """Put one bench's ``rows`` (table lines) and ``note`` (a paragraph) into the README's summary, one table for the
    benches that write there (at most 15 rows): the rows whose measure is in ``replaces`` and the note that starts
    with ``note_start`` give way, the other benches' stay; ``first``: these rows and this note before theirs."""
    page = README.read_text()
    if SUMMARY_BEGIN not in page or SUMMARY_END not in page:
        raise SystemExit(f"README.md has no {SUMMARY_BEGIN} … {SUMMARY_END} block")
    block = page.split(SUMMARY_BEGIN, 1)[1].split(SUMMARY_END, 1)[0]
    table = [line for line in block.splitlines() if line.startswith("|")][2:]
    kept = [row for row in table if row.split("|")[1].strip() not in replaces]
    notes = [n.strip() for n in re.split(r"\n\s*\n", "\n".join(line for line in block.splitlines()
                                                              if not line.startswith("|")))]
    others = [n for n in notes if n and not n.startswith(note_start)]
    rows, notes = ([*rows, *kept], [note, *others]) if first else ([*kept, *rows], [*others, note])
    replace_block(README, SUMMARY_BEGIN, SUMMARY_END, "\n".join([SUMMARY_HEADER, *rows]) + "\n\n" + "\n\n".join(notes))


def measured_where() -> dict[str, str]:
    """The date, the commit (with `+ local changes` when the work tree differs) and the machine of this run."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " + local changes"
    memory = cpu = ""
    try:
        kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
        memory = f", {kib / 1024 / 1024:.1f} GiB memory"
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration, ValueError):
        pass
    machine = f"{os.cpu_count()} cores{memory}, {cpu or platform.processor() or platform.machine()}"
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "commit": commit, "machine": machine, "load": load()}


def header(where: dict[str, str], quick: bool) -> str:
    return (f"Measured by `make bench` (`bench/bench_all.py{' --quick' if quick else ''}`) on {where['date']}, "
            f"commit `{where['commit']}`, machine: {where['machine']}; load average {where['load']} at its end. "
            "Every reader and app ran in its own process, each figure with its baseline from the same run; \"before\" "
            "is what was measured when the speed work was planned.")


def detail_tables(results: dict) -> str:
    out = []
    snap = results["snapshot"]
    sizes = [f"{rows['multi-1']['znodes']:,} znodes" for rows in snap.values()]
    out.append("| snapshot reader, each in its own process | " + " | ".join(sizes) + " |")
    out.append("|---|" + "---|" * len(snap))
    labels = {"naive": "naive synchronous walk (baseline)", "single": "single-op fallback (servers < 3.6)",
              "ceiling": "multiRead count-only walk (1-connection ceiling)", "multi-1": "snapshot, 1 connection",
              "multi-2": "snapshot, 2 connections"}
    for key, label in labels.items():
        cells = []
        for rows in snap.values():
            row = rows.get(key)
            if row is None:
                cells.append("–")
                continue
            cells.append(f"{row['rate']:,.0f}/s ({row['rate'] / rows['naive']['rate']:.1f}× naive, "
                         f"{row['rate'] / rows['ceiling']['rate']:.2f} ceiling; {row['znodes']:,} in "
                         f"{row['seconds']:.1f} s, {row['peak_rss_mb']:.0f} MB)")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("| tree | znodes | audit app (wall, JVM incl.) | app's own | gate (fresh process) | findings |")
    out.append("|---|---|---|---|---|---|")
    for label, row in results["audit"].items():
        out.append(f"| {label} | {row['znodes']:,} | {row['app_wall']:.1f} s | {row['app_seconds']:.1f} s | "
                   f"{row['gate_wall']:.1f} s ({row['gate_validations']} validations) | {row['findings']} |")
    out.append("")
    dag = results["dag"]
    out.append(f"One DAG run of the demo-shaped cluster: {dag['wall']:.1f} s; by task: "
               + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in dag["tasks"]) + ".")
    r = results["reaudit"]
    if r["snapshots"] != 30:
        out.append(f"(The reaudit row of the targets scales this run's {r['snapshots']} snapshots to 30 at the "
                   "measured cost per snapshot.)")
    out.append(f"Reaudit of {r['snapshots']} stored snapshots of {r['znodes']:,} znodes on local[2]: {r['wall']:.0f} s "
               f"({r['snapshots'] * r['znodes'] / r['wall']:,.0f} znodes/s, {r['wall'] / r['snapshots']:.1f} s a "
               f"snapshot), {r['failed']} failed.")
    return "\n".join(out)


def replace_block(path: Path, begin: str, end: str, text: str) -> None:
    """Put ``text`` between the markers ``begin`` and ``end`` of ``path``, keeping the rest."""
    page = path.read_text()
    if begin not in page or end not in page:
        raise SystemExit(f"{path.relative_to(REPO)} has no {begin} … {end} block")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{text}\n{end}{tail}")


def write_docs(now: dict[str, float | None], results: dict, where: dict[str, str], quick: bool) -> None:
    """docs/performance.md's block (header and every table) and the README's summary."""
    top = header(where, quick)
    note = f"{'quick run, ' if quick else ''}{where['date'].split()[0]}"
    replace_block(PERFORMANCE, TABLE_BEGIN, TABLE_END,
                  f"{top}\n\n{targets_table(now, note)}\n\n{detail_tables(results)}")
    commit = where["commit"][:12] + (" + local changes" if "local changes" in where["commit"] else "")
    merge_summary(summary_table(now).splitlines()[2:],
                  f"`make bench` on {where['date'].split()[0]}{', quick' if quick else ''}, commit `{commit}`, "
                  f"{where['machine'].split(',')[0]}.", {t.measure for t in TARGETS}, "`make bench` on", first=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small trees, 5 snapshots: checks the benchmark")
    parser.add_argument("--naive-seconds", type=float, default=20.0)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--reaudit-snapshots", type=int, default=30)
    parser.add_argument("--suite-minutes", type=float, default=None,
                        help="pytest minutes of the last fresh-clone `make test` (not measured here)")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure as JSON here")
    parser.add_argument("--write-docs", action="store_true",
                        help="write this run's tables into docs/performance.md and its summary into the README")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="measure nothing: the figures of an earlier run's --json file")
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        now, results = saved["figures"], saved["results"]
        if args.suite_minutes is not None:
            now["suite"] = args.suite_minutes
        print(targets_table(now, "the saved run") + "\n\n" + detail_tables(results))
        if args.write_docs:
            write_docs(now, results, saved.get("measured") or measured_where(), saved.get("quick", False))
            print("docs/performance.md and the README's summary: the saved run's")
        return 0
    sizes = QUICK_SIZES if args.quick else SIZES
    if args.quick:
        args.naive_seconds, args.reaudit_snapshots = 5.0, 5
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-all-"))
    started = time.monotonic()
    say(f"work folder {work}; {os.cpu_count()} cores")
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=6144, c1_only=False).start()
    results: dict = {}
    try:
        results["snapshot"] = snapshot_readers(server, work, sizes, args.naive_seconds, args.partitions)
        demo_hosts, demo_warehouse = demo_snapshot(server, work)
        results["audit"] = {"demo": audit_and_gate("demo", demo_warehouse, work)}
        for label in ("100k", "1M"):
            results["audit"][label] = audit_and_gate(label, results["snapshot"][label]["multi-1"]["warehouse"], work)
        results["dag"] = dag_run(server, work)
        results["reaudit"] = reaudit(server, work, args.reaudit_snapshots, sizes["100k"], args.partitions)
    finally:
        server.stop()
    now = figures(results, args.suite_minutes)
    note = f"this run, {'quick, ' if args.quick else ''}load average {load()} at its end"
    text = targets_table(now, note) + "\n\n" + detail_tables(results)
    print(f"\n{text}\n\nwhole benchmark: {time.monotonic() - started:.0f} s; work folder {work}")
    where = measured_where()
    if args.json:
        args.json.write_text(json.dumps({"figures": now, "results": results, "measured": where, "quick": args.quick},
                                        indent=2, default=str))
    if args.write_docs:
        write_docs(now, results, where, args.quick)
        print("docs/performance.md and the README's summary: this run's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
