"""The audit's fixed cost against Spark's own floor: every figure of its table of targets in one run.

    .venv/bin/python bench/bench_audit_floor.py [--rounds 3] [--warm 3] [--event-rounds 5] [--demo-runs 2]
                                                [--large] [--suite-minutes M] [--quick] [--write-docs] [--json FILE]
    .venv/bin/python bench/bench_audit_floor.py --from-json FILE [--write-docs]   (an earlier run's tables, again)

One private ZooKeeper on 127.0.0.1 holds a small simulated 3.x cluster (``bench/profile_audit.py``'s, 8 topics × 4
partitions, snapshotted) and the demo-shaped cluster (``bench/bench_all.py``'s ``DEMO``). Then, each in its own
process:

1. ``--rounds`` alternated rounds of a bare ``spark-submit`` app (``bench/bench_audit_counts.py``'s: a session, a
   three-row DataFrame, its count), the audit app on the small cluster's snapshot (``spark_apps/audit_snapshot.py``
   as the DAG's audit task runs it: its settings, the machine's class-data archive of the driver JVM mapped, a fresh
   warehouse each time; ``bench/profile_audit.py``'s ``run_app``: wall, CPU and the app's ``profile`` lines, i.e.
   where its time goes phase by phase) and one ``airflow dags test`` of the demo-shaped cluster on a new warehouse
   (``bench_all.dag_run``: its wall and each task's, from Airflow's metadata DB). The ratios are the medians' against
   the bare app of the same rounds. Each round also times the bare app with the same archive mapped, for reference
   (the floor the archive leaves); a machine without the archive yet writes it first with one untimed audit app.
   And the floor under any DAG run of the audit: ``airflow dags test`` of a DAG of the audit DAG's shape whose 8
   tasks do nothing (``EMPTY_DAG``, a new Airflow home): with the bare app, what a run cannot go below; and, for
   reference, Great Expectations' import in a new Python (the gate's first step, which a run under ``dags test``
   makes while the audit's spark-submit runs);
2. one more audit app with ``kafka_zk_audit_testing.spark_counts`` around its audit (``bench_audit_counts``'s counted
   app): the DataFrames built, Catalyst's analyses, the Spark jobs and the py4j calls into the JVM;
3. ``--warm`` warm in-process audits of the same snapshot after one to warm up (``bench_audit_counts``'s warm worker,
   ``local[2]``);
4. ``make demo`` ``--demo-runs`` times on a free port, its own warehouse and Airflow home; the last run is the warm
   one;
5. the event-driven alert's latency (``bench/bench_events.py``'s ``latency``: a real scheduler, DAG processor,
   triggerer and API server; a leader taken out of its ISR, the time to the webhook's alert), ``--event-rounds``
   times (0: not measured);
6. with ``--large``: a cluster of ~1,075,993 znodes (``bench/bench_audit.py``'s, 25,000 topics × 20 partitions),
   snapshotted, and the audit app on it, with its phases.

``make test``'s wall time is not measured here (a fresh clone's suite takes ~9 minutes): ``--suite-minutes``, or the
newest entry of docs/performance.md's journal (``## `make test`'s wall time``).

It prints, as Markdown, the table of targets (measure | before | now | target | met; "before" is what was measured
when the work on the fixed cost was planned), then the detail: the apps' wall and CPU, the counts, the audit app's
phases, the DAG run's tasks, the warm audits, the alert latencies and the demo's runs. ``--write-docs`` (what
``make bench`` passes) replaces the block between ``<!-- bench_audit_floor:begin -->`` and
``<!-- bench_audit_floor:end -->`` in docs/performance.md with them, headed by the date, the commit and the machine,
and puts their rows first in the README's summary (``bench/bench_all.py``'s block: its rows stay, but those these
targets replace). ``--quick`` is one round of each (the header says so), to check the
benchmark. Every step's figures are also kept in the work folder's ``results.json`` as they come.

The code measured may be mid-change: a DAG run whose ``clusters``, ``snapshot`` or ``audit`` task did not succeed stops
the benchmark (every ratio needs the rounds; a red gate is fine); a later step that fails (or a ``make demo`` that
audited nothing) leaves its row "failed", the others measured, the docs as they were and the exit code 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_all
import bench_audit
import bench_audit_counts
import profile_audit
from bench_all import load, measured_where, replace_block, say

from kafka_zk_audit.cli.runner import airflow_command, airflow_env, ensure_metadata_db
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.simulator import Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parents[1]
PERFORMANCE = bench_all.PERFORMANCE
TABLE_BEGIN, TABLE_END = "<!-- bench_audit_floor:begin -->", "<!-- bench_audit_floor:end -->"  # docs/performance.md
NOTE_START = "The audit's fixed cost"  # this bench's note under the README's summary
LARGE_TOPICS, LARGE_PARTITIONS = 25000, 20  # bench_audit.py --large 25000: 1,075,993 znodes
DATA_TASKS = ("clusters", "snapshot", "audit")  # a DAG run is measured only when these succeeded
DEMO_AUDITED = re.compile(r"^fleet: \d+ cluster\(s\);.* not audited 0", re.M)  # `kafka-zk-audit run`'s summary
SUITE_JOURNAL = "## `make test`'s wall time"
JOURNAL_ENTRY = re.compile(r"\*\*(\d+)\s+min\s+(\d+)\s+s\*\*\s+on\s+([0-9a-f]{7,40})(?:\s+at\s+[\d:]+)?"
                           r"(?:\s+on\s+(\d{4}-\d\d-\d\d))?")


@dataclass(frozen=True)
class Target:
    """One row of the table: what, the figure before the work on the fixed cost, the target and its test."""

    key: str
    measure: str
    before: str
    target: str
    met: Callable[[float], bool]


TARGETS = (
    Target("audit_ratio", "audit app, one small cluster, incl. JVM / bare `spark-submit` app",
           "2.36× (27.5 s / 11.7 s)", "≤ 1.5×", lambda v: v <= 1.5),
    Target("dag_ratio", "whole DAG run, one small cluster / bare app", "3.90× (45.4 s)", "≤ 2×", lambda v: v <= 2.0),
    Target("dataframes", "DataFrames built per audit of one snapshot", "1,100–2,400", "≤ 150", lambda v: v <= 150),
    Target("warm", "warm in-process audit of one small cluster", "15 s", "< 3 s", lambda v: v < 3.0),
    Target("audit_1m", "audit app, 1,075,993 znodes", "102 s", "< 45 s", lambda v: v < 45.0),
    Target("alert", "bad write → alert received, median of 5", "53.5 s", "< 20 s", lambda v: v < 20.0),
    Target("demo", "`make demo`, warm", "52 s", "< 30 s", lambda v: v < 30.0),
    Target("suite", "`make test`, fresh clone, pytest wall", "9–16 min", "< 8 min", lambda v: v < 8.0),
)


# A DAG of the audit DAG's shape (its 8 tasks, two of them mapped over one cluster) whose tasks do nothing: what
# ``airflow dags test`` costs by itself, the floor under every DAG run of the audit.
EMPTY_DAG_ID = "kafka_zk_audit_shape"
EMPTY_DAG = f'''
from airflow.sdk import DAG, task

with DAG(dag_id="{EMPTY_DAG_ID}", schedule=None, catchup=False):

    @task
    def clusters():
        return [{{"cluster": "demo"}}]

    @task
    def snapshot(cluster):
        return "snapshot-id"

    @task
    def audit(snapshot_ids):
        return None

    @task
    def gate(audited):
        return None

    @task
    def history(snapshot_id):
        return None

    @task
    def summary(gated):
        return None

    @task
    def retention(summarized):
        return None

    @task
    def verdict(retained):
        return None

    snapshots = snapshot.expand(cluster=clusters())
    history.expand(snapshot_id=snapshots)
    verdict(retention(summary(gate(audit(snapshots)))))
'''
GX_IMPORT = "import time; began = time.perf_counter(); import great_expectations; print(time.perf_counter() - began)"


def median(values: list[float]) -> float:
    return statistics.median(values)


def quiet() -> None:
    """Warnings only on this process's output (Airflow's imports set its loggers to INFO: kazoo's every session)."""
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("kazoo", "kafka_zk_audit_testing"):
        logging.getLogger(name).setLevel(logging.WARNING)


def save(results: dict, work: Path) -> None:
    """The figures so far, in the work folder (a failed step leaves the earlier ones)."""
    (work / "results.json").write_text(json.dumps(results, indent=1, default=str))


# --- the measurements --------------------------------------------------------------------------------------------


def rounds(server: ZooKeeperServer, work: Path, snapshots: Path, snapshot_id: str, count: int) -> list[dict]:
    """``count`` alternated rounds: the bare app, the audit app (with its profile), one DAG run of the demo cluster."""
    from kafka_zk_audit.audit.session import class_data_archive

    bare_app = work / "bare_app.py"
    bare_app.write_text(bench_audit_counts.BARE_APP)
    archive = class_data_archive()
    if archive is not None and not archive.is_file():  # as a machine's first audit app does, once: not timed
        say(f"writing the driver's class-data archive with one audit app (once per Java and Spark): {archive}")
        root = bench_audit_counts.fresh_warehouse(work, snapshots, "app-archive")
        profile_audit.run_app(None, root, snapshot_id, work / "audit-archive.log", [])
    done = []
    for attempt in range(count):
        say(f"round {attempt + 1} of {count}: bare app (plain, then with the archive), audit app, DAG run")
        bare = bench_audit_counts.submit(bare_app, [], work / f"bare-{attempt}.log")
        bare_mapped = None if archive is None else bench_audit_counts.submit(  # none: JVM_CACHE off
            bare_app, [], work / f"bare-mapped-{attempt}.log", archive=True)
        root = bench_audit_counts.fresh_warehouse(work, snapshots, f"app-{attempt}")
        audit = profile_audit.run_app(None, root, snapshot_id, work / f"audit-{attempt}.log", [])
        run_work = work / f"dag-{attempt}"
        run_work.mkdir()
        began = time.monotonic()
        dag = bench_all.dag_run(server, run_work)
        dag["set_up"] = time.monotonic() - began - dag["wall"]  # a new Airflow home's `airflow db migrate`
        dag["states"] = dag_states(run_work / "airflow" / "airflow.db")
        if broken := [f"{task} {state}" for task, state in dag["states"].items()
                      if task.split("[")[0] in DATA_TASKS and state != "success"]:
            raise SystemExit(f"the DAG run's data tasks did not succeed ({', '.join(broken)}); "
                             f"see {run_work / 'dag.log'}")
        floor = {"empty_dag": empty_dag_run(run_work), "gx_import": gx_import()}
        done.append({"bare": bare, "audit": audit, "dag": dag, "floor": floor,
                     **({"bare_mapped": bare_mapped} if bare_mapped else {})})
        mapped = f" (with the archive {bare_mapped['wall']:.1f} s)" if bare_mapped else ""
        say(f"  bare {bare['wall']:.1f} s{mapped}, audit app {audit['wall']:.1f} s, DAG run {dag['wall']:.1f} s: "
            + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in dag["tasks"])
            + f"; the empty DAG's run {floor['empty_dag']:.1f} s, GX's import {floor['gx_import']:.1f} s")
    return done


def empty_dag_run(work: Path) -> float:
    """One ``airflow dags test`` of ``EMPTY_DAG`` in a new Airflow home (its ``airflow db migrate`` not timed), started
    as the CLI starts the audit DAG's (``cli.runner.airflow_command``): the wall time Airflow itself takes for a run of
    the audit DAG's shape."""
    dags = work / "empty-dags"
    dags.mkdir()
    (dags / f"{EMPTY_DAG_ID}.py").write_text(EMPTY_DAG)
    env = {**airflow_env(airflow_home=work / "empty-airflow", base=bench_all.outside_env()),
           "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    ensure_metadata_db(env)
    log = work / "empty-dag.log"
    began = time.monotonic()
    with log.open("wb") as out:
        code = subprocess.run(airflow_command(["dags", "test", EMPTY_DAG_ID]), env=env, stdout=out,
                              stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - began
    ended = log.read_text(errors="replace").count("[DAG TEST] end task")
    if code != 0 or ended != 8:  # its 8 tasks, the mapped ones over one cluster: 8 task instances
        raise SystemExit(f"the empty DAG's run failed (exit {code}, {ended} tasks ended); see {log}")
    return wall


def gx_import() -> float:
    """Great Expectations' import in a new Python process (the gate task's first step), in seconds."""
    done = subprocess.run([sys.executable, "-c", GX_IMPORT], env={**os.environ, "GX_ANALYTICS_ENABLED": "false"},
                          capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def dag_states(db: Path) -> dict[str, str]:
    """Each task's state in a DAG run's metadata DB (the gate and the verdict may fail: a red gate)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT task_id, map_index, state FROM task_instance WHERE dag_id = 'kafka_zk_audit'")
        return {task + (f"[{index}]" if index >= 0 else ""): state for task, index, state in rows.fetchall()}


def counted(work: Path, snapshots: Path, snapshot_id: str) -> dict[str, float]:
    """One audit app with the counters of ``spark_counts`` around its audit (``bench_audit_counts``'s counted app)."""
    say("the counted audit app")
    root = bench_audit_counts.fresh_warehouse(work, snapshots, "app-counted")
    log = work / "audit-counted.log"
    bench_audit_counts.submit(Path(bench_audit_counts.__file__), ["--counted-app", "--warehouse", root,
                                                                  "--snapshot-id", snapshot_id], log)
    line = bench_audit_counts.COUNTS_LINE
    return next(json.loads(text.split(line, 1)[1]) for text in log.read_text(errors="replace").splitlines()
                if line in text)


def warm(work: Path, warehouse: Warehouse, snapshot_id: str, audits: int) -> list[dict[str, float]]:
    """``audits`` warm in-process audits after one to warm up (``bench_audit_counts``'s warm worker)."""
    say(f"{audits} warm in-process audits (after one)")
    out = work / "warm.json"
    with (work / "warm.log").open("wb") as stream:
        subprocess.run([sys.executable, bench_audit_counts.__file__, "--warm-worker", warehouse.root, snapshot_id,
                        str(audits), str(out)], stdout=stream, stderr=subprocess.STDOUT,
                       env=bench_audit_counts.app_env(), check=True)
    return json.loads(out.read_text())[1:]


def make_demo(work: Path, runs: int) -> list[float]:
    """``make demo`` ``runs`` times, one after the other, on a free port, with its own warehouse and Airflow home."""
    env = bench_all.outside_env()
    env.update(KAFKA_ZK_AUDIT_DEMO_PORT=str(free_port()), KAFKA_ZK_AUDIT_WAREHOUSE=str(work / "demo-warehouse"),
               AIRFLOW_HOME=str(work / "demo-airflow"))
    walls = []
    for attempt in range(runs):
        say(f"make demo, run {attempt + 1} of {runs}")
        log = work / f"demo-{attempt}.log"
        began = time.monotonic()
        with log.open("wb") as out:
            code = subprocess.run(["make", "demo"], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
        walls.append(time.monotonic() - began)
        if code != 0:
            raise SystemExit(f"make demo failed (exit {code}); see {log}")
        if not DEMO_AUDITED.search(log.read_text(errors="replace")):  # exit 0 is also the gate's planted failure
            raise SystemExit(f"make demo did not audit its cluster; see {log}")
        say(f"  {walls[-1]:.1f} s")
    return walls


def alert_latency(server: ZooKeeperServer, work: Path, runs: int, connect: bool) -> dict[str, Any]:
    """``bench_events``'s latency: a bad write to the webhook's alert (and the repair to its resolve), ``runs``
    times under a real scheduler and triggerer, the audit a cold ``spark-submit`` (the default); with ``connect``,
    then ``runs`` times through a warm Spark Connect server (``connect``: the same figures)."""
    import bench_events

    quiet()
    say(f"the event-driven alert's latency, {runs} time(s) (Airflow's services start first)")
    tmp = work / "events"
    tmp.mkdir()
    result: dict[str, Any] = bench_events.latency(server, tmp, runs)
    if connect:
        from kafka_zk_audit.audit.connect import ConnectServer

        say(f"the same through a warm Spark Connect server (events.spark_connect_conn_id), {runs} time(s)")
        (work / "events-connect").mkdir()
        started = time.monotonic()
        connect_server = ConnectServer(work / "connect-server", port=free_port()).start()
        say(f"  the Connect server serves after {time.monotonic() - started:.1f} s")
        try:
            result["connect"] = bench_events.latency(server, work / "events-connect", runs, connect_server.port)
        finally:
            connect_server.stop()
    return result


def large(server: ZooKeeperServer, work: Path, topics: int) -> dict:
    """``bench_audit``'s large cluster written and snapshotted, then the audit app on it with its profile."""
    say(f"writing and snapshotting the large cluster ({topics} topics × {LARGE_PARTITIONS} partitions)")
    warehouse = Warehouse(str(work / "wh-large"))
    snapshot_id = bench_audit.snapshot_cluster(server, f"t{topics}", topics, LARGE_PARTITIONS, warehouse)
    znodes = json.loads(Path(warehouse.manifest_path(snapshot_id)).read_text())["znodes"]
    say(f"the audit app on {znodes:,} znodes")
    return {"znodes": znodes, **profile_audit.run_app(None, warehouse.root, snapshot_id, work / "audit-large.log", [])}


def suite_figure(minutes: float | None) -> dict | None:
    """``make test``'s pytest wall: ``--suite-minutes``, else the newest entry of docs/performance.md's journal."""
    if minutes is not None:
        return {"minutes": minutes, "source": "--suite-minutes"}
    page = PERFORMANCE.read_text()
    if SUITE_JOURNAL not in page:
        return None
    match = JOURNAL_ENTRY.search(page.split(SUITE_JOURNAL, 1)[1])
    if match is None:
        return None
    whole, seconds, commit, date = match.groups()
    return {"minutes": int(whole) + int(seconds) / 60, "source": f"the journal's newest, {commit}"
            + (f" on {date}" if date else "")}


def measure(args: argparse.Namespace) -> dict:
    quiet()
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-floor-"))
    started = time.monotonic()
    say(f"work folder {work}; {os.cpu_count()} cores")
    results: dict[str, Any] = {"quick": args.quick, "suite": suite_figure(args.suite_minutes)}
    # bench_audit's server for the million-znode tree (a large heap, the full JIT); the small trees' otherwise
    options = {"heap_mb": 6144, "c1_only": False} if args.large else {}
    server = ZooKeeperServer(work / "zk", port=free_port(), **options).start()
    try:
        warehouse = Warehouse(str(work / "wh"))
        shape = argparse.Namespace(topics=args.topics, partitions=args.partitions, brokers=args.brokers,
                                   groups=args.groups)
        snapshot_id = profile_audit.snapshot_cluster(server.hosts, "floor", shape, warehouse)
        snapshots = Path(warehouse.snapshot_dir(snapshot_id)).parent
        results["znodes"] = json.loads(Path(warehouse.manifest_path(snapshot_id)).read_text())["znodes"]
        server.ensure_chroot("/demo")
        with Simulator(hosts=f"{server.hosts}/demo") as sim:
            sim.write(bench_all.DEMO)
        say(f"small cluster: {results['znodes']:,} znodes (snapshot {snapshot_id}); the demo-shaped one under /demo")
        results["rounds"] = rounds(server, work, snapshots, snapshot_id, args.rounds)
        save(results, work)
        steps: dict[str, Callable[[], Any] | None] = {
            "counts": lambda: counted(work, snapshots, snapshot_id),
            "warm": (lambda: warm(work, warehouse, snapshot_id, args.warm)) if args.warm else None,
            "demo": (lambda: make_demo(work, args.demo_runs)) if args.demo_runs else None,
            "events": ((lambda: alert_latency(server, work, args.event_rounds, args.event_connect))
                       if args.event_rounds else None),
            "large": (lambda: large(server, work, args.large_topics)) if args.large else None,
        }
        for key, step in steps.items():
            # a step that fails (the code measured may be mid-change) leaves its row "failed" and the others measured
            try:
                results[key] = step() if step else None
            except (Exception, SystemExit) as exc:
                results[key] = None
                why = (str(exc).strip() or repr(exc)).splitlines()[0][:300]
                results.setdefault("failed", {})[key] = why
                say(f"{key} failed: {results['failed'][key]}")
            save(results, work)
    finally:
        server.stop()
    results["seconds"] = time.monotonic() - started
    results["measured"] = measured_where()  # kept in results.json: --from-json heads its tables with it
    results["work"] = str(work)
    save(results, work)
    return results


# --- the tables --------------------------------------------------------------------------------------------------


def medians(results: dict) -> dict[str, float]:
    """The rounds' medians: the bare app's, the audit app's and the DAG run's wall, the apps' CPU."""
    rows = results["rounds"]
    return {"bare": median([r["bare"]["wall"] for r in rows]), "bare_cpu": median([r["bare"]["cpu"] for r in rows]),
            "audit": median([r["audit"]["wall"] for r in rows]), "audit_cpu": median([r["audit"]["cpu"] for r in rows]),
            "dag": median([r["dag"]["wall"] for r in rows]),
            **({"bare_mapped": median([r["bare_mapped"]["wall"] for r in rows]),
                "bare_mapped_cpu": median([r["bare_mapped"]["cpu"] for r in rows])}
               if all("bare_mapped" in r for r in rows) else {})}


def figures(results: dict) -> dict[str, tuple[float | None, str]]:
    """Each target's figure in this run: (the value judged, the cell shown)."""
    m, out = medians(results), {}
    out["audit_ratio"] = (m["audit"] / m["bare"], f"{m['audit'] / m['bare']:.2f}× ({m['audit']:.1f} s / "
                                                  f"{m['bare']:.1f} s)")
    out["dag_ratio"] = (m["dag"] / m["bare"], f"{m['dag'] / m['bare']:.2f}× ({m['dag']:.1f} s)")
    if counts := results.get("counts"):
        out["dataframes"] = (counts["dataframes"], f"{counts['dataframes']:,} ({counts['analyses']:,} analyses, "
                                                   f"{counts['jobs']:,} Spark jobs, {counts['jvm_calls']:,} JVM calls)")
    if results.get("warm"):
        wall = median([r["wall"] for r in results["warm"]])
        out["warm"] = (wall, f"{wall:.1f} s")
    else:
        out["warm"] = (None, "not measured (--warm 0)")
    if results.get("large"):
        big = results["large"]
        if big["znodes"] >= 1_000_000:
            out["audit_1m"] = (big["wall"], f"{big['wall']:.1f} s ({big['znodes']:,} znodes)")
        else:  # --large-topics: a smaller tree, to check the benchmark
            out["audit_1m"] = (None, f"{big['wall']:.1f} s on {big['znodes']:,} znodes only: not judged")
    else:
        out["audit_1m"] = (None, "not measured (--large)")
    events = results.get("events")
    if events and events["alert"]:
        alert = median(events["alert"])
        cell = (f"{alert:.1f} s with a cold `spark-submit`, the default (median of {len(events['alert'])}: "
                + ", ".join(f"{v:.0f}" for v in events["alert"]) + ")")
        warm_path = (events.get("connect") or {}).get("alert")
        if warm_path:
            # the configured warm path (events.spark_connect_conn_id) is judged; the default is shown beside it
            alert = median(warm_path)
            cell = (f"{alert:.1f} s through a warm Spark Connect server (median of {len(warm_path)}: "
                    + ", ".join(f"{v:.0f}" for v in warm_path) + "); " + cell)
        out["alert"] = (alert, cell)
    else:
        out["alert"] = (None, "not measured (--event-rounds 0)")
    demo = results.get("demo")
    if demo:
        out["demo"] = (demo[-1], f"{demo[-1]:.1f} s" + (" (the first run)" if len(demo) == 1 else ""))
    else:
        out["demo"] = (None, "not measured (--demo-runs 0)")
    for key, row in (("counts", "dataframes"), ("warm", "warm"), ("large", "audit_1m"), ("events", "alert"),
                     ("demo", "demo")):
        if key in results.get("failed", {}):
            out[row] = (None, f"failed: {results['failed'][key]}")
    suite = results.get("suite")
    if suite:
        whole, seconds = divmod(round(suite["minutes"] * 60), 60)
        out["suite"] = (suite["minutes"], f"{whole} min {seconds:02d} s ({suite['source']}; not re-run here)")
    else:
        out["suite"] = (None, "not measured (--suite-minutes)")
    return out


def judged(t: Target, now: dict[str, tuple[float | None, str]]) -> tuple[str, str]:
    value, shown = now[t.key]
    return shown, ("–" if value is None else "yes" if t.met(value) else "**no**")


def targets_table(results: dict) -> str:
    now = figures(results)
    lines = ["| measure | before | now | target | met |", "|---|---|---|---|---|"]
    for t in TARGETS:
        shown, met = judged(t, now)
        lines.append(f"| {t.measure} | {t.before} | {shown} | {t.target} | {met} |")
    return "\n".join(lines)


def summary_table(results: dict) -> str:
    """The README's rows: measure, this run's figure, the target, whether it is met."""
    now = figures(results)
    lines = [bench_all.SUMMARY_HEADER]
    for t in TARGETS:
        shown, met = judged(t, now)
        lines.append(f"| {t.measure} | {shown} | {t.target} | {met} |")
    return "\n".join(lines)


def phase_rows(runs: list[dict], floor: float | None) -> list[str]:
    """Where an audit app's wall goes, medians over ``runs`` (each a ``profile_audit.run_app`` result)."""
    profiled = [r for r in runs if "to_main" in r]
    if not profiled:
        return [f"| (no `profile` lines in the app's log) | {median([r['wall'] for r in runs]):.1f} | – |"]
    names = list(dict.fromkeys(name for r in profiled for name in r.get("phases", {})))
    rows = [f"| launch → the app's `main` (JVM launcher, Python, imports) | "
            f"{median([r['to_main'] for r in profiled]):.1f} | – |",
            f"| Spark session start | {median([r['session'] for r in profiled]):.1f} | – |"]
    for name in names:
        seconds = median([r["phases"].get(name, {}).get("seconds", 0.0) for r in profiled])
        jobs = median([r["phases"].get(name, {}).get("jobs", 0) for r in profiled])
        beside = next((r["phases"][name]["beside"] for r in profiled if r["phases"].get(name, {}).get("beside")), None)
        rows.append(f"| phase `{name}`, in a thread beside `{beside}` (its seconds within that phase's) | "
                    f"{seconds:.1f} | – |" if beside else f"| phase `{name}` | {seconds:.1f} | {jobs:g} |")
    rest = median([r["wall"] - r["to_main"] - r["session"]
                   - sum(p["seconds"] for p in r.get("phases", {}).values() if not p.get("beside")) for r in profiled])
    rows.append(f"| the rest (outside the phases: the session's stop, the exit) | {rest:.1f} | – |")
    rows.append(f"| **the audit app, launch to exit** | **{median([r['wall'] for r in runs]):.1f}** | – |")
    if floor is not None:
        rows.append(f"| the bare app, launch to exit (the floor) | {floor:.1f} | – |")
    return rows


def detail_tables(results: dict) -> str:
    m, rounds_ = medians(results), results["rounds"]
    n = len(rounds_)
    out = [f"The small cluster: {results['znodes']:,} znodes. Medians of {n} alternated round{'s' if n != 1 else ''}"
           " (bare app, audit app, DAG run), spark-submit `local[*]`:", "",
           "| per app | audit app | bare app | audit / bare |", "|---|---|---|---|",
           f"| wall, launch to exit | {m['audit']:.1f} s | {m['bare']:.1f} s | {m['audit'] / m['bare']:.2f}× |",
           f"| CPU, every process | {m['audit_cpu']:.1f} s | {m['bare_cpu']:.1f} s | "
           f"{m['audit_cpu'] / m['bare_cpu']:.2f}× |", ""]
    if "bare_mapped" in m:
        out[-1:] = [f"| the bare app with the audit app's class-data archive mapped (for reference) | – | "
                    f"{m['bare_mapped']:.1f} s, {m['bare_mapped_cpu']:.1f} CPU-s | "
                    f"{m['audit'] / m['bare_mapped']:.2f}× |", ""]
    if c := results.get("counts"):
        out += ["| one more audit app, counted around its audit | |", "|---|---|",
                f"| DataFrames built | {c['dataframes']:,} |", f"| Catalyst analyses | {c['analyses']:,} |",
                f"| analyzer + optimizer rules | {c['rule_seconds']:.1f} s |", f"| Spark jobs | {c['jobs']:,} |",
                *([f"| Spark stages | {c['stages']:,} |"] if "stages" in c else []),
                f"| py4j calls into the JVM | {c['jvm_calls']:,} |", ""]
    out += ["Where the audit app's time goes (its `profile` lines; medians):", "",
            "| part of the audit app | seconds | Spark jobs |", "|---|---|---|",
            *phase_rows([r["audit"] for r in rounds_], m["bare"]), ""]
    by_task: dict[str, list[float]] = {}
    for r in rounds_:
        for name, seconds in r["dag"]["tasks"]:
            by_task.setdefault(name, []).append(seconds)
    out += ["One DAG run of the demo-shaped cluster (`airflow dags test` on a new warehouse; medians):", "",
            "| part of the DAG run | seconds | / bare app |", "|---|---|---|"]
    in_tasks = 0.0
    for name, values in by_task.items():
        seconds = median(values)
        in_tasks += seconds
        out.append(f"| task `{name}` | {seconds:.1f} | {seconds / m['bare']:.2f} |")
    outside, set_up = m["dag"] - in_tasks, median([r["dag"]["set_up"] for r in rounds_])
    out += [f"| outside the tasks (`airflow dags test`'s start, the gaps) | {outside:.1f} | "
            f"{outside / m['bare']:.2f} |",
            f"| **the whole DAG run** | **{m['dag']:.1f}** | **{m['dag'] / m['bare']:.2f}** |", "",
            f"(Before each run, a new Airflow home's `airflow db migrate`: {set_up:.1f} s, not counted.)"]
    if all("floor" in r for r in rounds_):  # (results.json files of earlier runs have no floor)
        empty, gx = (median([r["floor"][key] for r in rounds_]) for key in ("empty_dag", "gx_import"))
        least = m["bare"] + empty
        out += ["", "What no DAG run of the audit goes below on this machine, measured in the same rounds (medians): "
                    "a Spark app and Airflow's own run. The gate's Great Expectations, imported in a new Python in "
                    f"{gx:.1f} s ({gx / m['bare']:.2f}× the bare app), is not part of it: under `airflow dags test` "
                    "every task runs in one process, which imports it while the audit's spark-submit runs "
                    "(`kafka_zk_audit.airflow.command_line.warm_imports`).", "",
                "| part of the floor | seconds | / bare app |", "|---|---|---|",
                f"| the bare app (an audit app that cost no more than Spark's start) | {m['bare']:.1f} | 1.00 |",
                f"| `airflow dags test` of a DAG of the audit DAG's shape whose 8 tasks do nothing | {empty:.1f} | "
                f"{empty / m['bare']:.2f} |",
                f"| **the floor of a DAG run** | **{least:.1f}** | **{least / m['bare']:.2f}** |", "",
                f"The whole DAG run took {m['dag']:.1f} s: {m['dag'] - least:.1f} s above that floor, "
                f"{m['audit'] - m['bare']:.1f} s of them the audit app's own cost beyond the bare app's."]
    if results.get("warm"):
        runs = results["warm"]
        out += ["", f"Warm in-process audits (`local[2]`, one session, the {len(runs)} after the first; medians): "
                    f"{median([r['wall'] for r in runs]):.1f} s wall, {median([r['cpu'] for r in runs]):.1f} CPU-s, "
                    f"{median([r['dataframes'] for r in runs]):,.0f} DataFrames, "
                    f"{median([r['analyses'] for r in runs]):,.0f} analyses, {median([r['jobs'] for r in runs]):,.0f} "
                    f"Spark jobs, {median([r['jvm_calls'] for r in runs]):,.0f} JVM calls."]
    if results.get("large"):
        big = results["large"]
        out += ["", f"The audit app on {big['znodes']:,} znodes: {big['wall']:.1f} s wall, {big['cpu']:.1f} CPU-s, "
                    f"{big['findings']} findings:", "",
                "| part of the audit app | seconds | Spark jobs |", "|---|---|---|",
                *phase_rows([big], None)]
    events = results.get("events")
    if events and events["alert"]:
        out += ["", f"The event-driven path (a real scheduler and triggerer; a leader taken out of its ISR, then put "
                    f"back, {len(events['alert'])} time(s)): write → alert "
                    + ", ".join(f"{v:.1f}" for v in events["alert"]) + " s; repair → resolve "
                    + ", ".join(f"{v:.1f}" for v in events["resolve"]) + " s; the event-driven runs themselves "
                    + ", ".join(f"{v:.1f}" for v in events["run"]) + " s."]
        if (through := events.get("connect")) and through["alert"]:
            warmed = through.get("warm_up") or []
            out += ["", "The same through a warm Spark Connect server (`events.spark_connect_conn_id`; warmed up as "
                        "`connect-server start --warm-up` does, its audits of a stored snapshot "
                        + ", ".join(f"{v:.1f}" for v in warmed) + " s): write → alert "
                        + ", ".join(f"{v:.1f}" for v in through["alert"]) + " s; repair → resolve "
                        + ", ".join(f"{v:.1f}" for v in through["resolve"]) + " s; the runs "
                        + ", ".join(f"{v:.1f}" for v in through["run"]) + " s."]
    if results.get("demo"):
        out += ["", "`make demo`, one run after the other (its own port, warehouse and Airflow home): "
                + ", ".join(f"{v:.1f} s" for v in results["demo"]) + "; the last is the warm one."]
    return "\n".join(out)


def header(where: dict[str, str], quick: bool) -> str:
    return (f"Measured by `make bench` (`bench/bench_audit_floor.py{' --quick' if quick else ''}`) on "
            f"{where['date']}, commit `{where['commit']}`, machine: {where['machine']}; load average {where['load']} "
            "at its end. Each app and run in its own process, each ratio against the bare app of the same rounds; "
            "\"before\" is what was measured when the work on the fixed cost was planned.")


def write_docs(results: dict, where: dict[str, str]) -> None:
    """docs/performance.md's block (header and every table) and the README's rows."""
    quick = results.get("quick", False)
    replace_block(PERFORMANCE, TABLE_BEGIN, TABLE_END,
                  f"{header(where, quick)}\n\n{targets_table(results)}\n\n{detail_tables(results)}")
    commit = where["commit"][:12] + (" + local changes" if "local changes" in where["commit"] else "")
    replaces = {t.measure for t in TARGETS} | {t.measure for t in bench_all.TARGETS if t.key in bench_all.README_OMITS}
    bench_all.merge_summary(
        summary_table(results).splitlines()[2:],
        f"{NOTE_START} (the first {len(TARGETS)} rows, `bench/bench_audit_floor.py`): `make bench` on "
        f"{where['date'].split()[0]}{', quick' if quick else ''}, commit `{commit}`, {where['machine'].split(',')[0]}; "
        "each ratio against a bare `spark-submit` app of the same run "
        "([the detail](docs/performance.md#an-audit-in-seconds-the-audits-fixed-cost)).",
        replaces, NOTE_START, first=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of bare app, audit app, DAG run")
    parser.add_argument("--warm", type=int, default=3, help="warm in-process audits timed after one (0: none)")
    parser.add_argument("--event-rounds", type=int, default=5, help="bad writes timed to their alert (0: none)")
    parser.add_argument("--no-event-connect", dest="event_connect", action="store_false",
                        help="time the alert with a cold spark-submit only, not through a warm Spark Connect server")
    parser.add_argument("--demo-runs", type=int, default=2, help="`make demo` runs; the last is reported (0: none)")
    parser.add_argument("--large", action="store_true", help="also the audit app on ~1,075,993 znodes")
    parser.add_argument("--large-topics", type=int, default=LARGE_TOPICS, help=argparse.SUPPRESS)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--suite-minutes", type=float, default=None,
                        help="pytest minutes of the last fresh-clone `make test` (default: docs/performance.md's "
                             "journal)")
    parser.add_argument("--quick", action="store_true", help="one round of each: checks the benchmark")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure as JSON here")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the tables into docs/performance.md and the README's summary")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="measure nothing: the tables of an earlier run's --json (or results.json) file")
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        results = saved.get("results", saved)
        results["suite"] = suite_figure(args.suite_minutes)  # the journal's newest when the tables are written
        where = saved.get("measured") or results.get("measured") or measured_where()
    else:
        if args.quick:
            args.rounds, args.warm, args.event_rounds = 1, min(args.warm, 1), min(args.event_rounds, 1)
        if args.rounds < 1:
            parser.error("--rounds must be at least 1")
        results = measure(args)
        where = results["measured"]
    text = targets_table(results) + "\n\n" + detail_tables(results)
    print(f"\n{text}\n")
    if "seconds" in results:
        print(f"whole benchmark: {results['seconds']:.0f} s; load average {load()}; work folder {results.get('work')}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "measured": where}, indent=1, default=str))
    if results.get("failed"):
        print("failed: " + "; ".join(f"{key}: {why}" for key, why in results["failed"].items()))
        if args.write_docs:
            print("docs/performance.md and the README are left as they were")
        return 1
    if args.write_docs:
        write_docs(results, where)
        print("docs/performance.md and the README's summary: this run's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
