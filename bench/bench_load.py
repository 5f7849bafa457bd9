"""What a Kafka-like ZooKeeper client sees while a snapshot of a large tree runs, with baselines from the same run.

    .venv/bin/python bench/bench_load.py [--znodes 1000000] [--quick] [--rounds 3] [--paced-rate 0]

1. Starts a private ZooKeeper on 127.0.0.1 (free port) and writes a simulated 3.x Kafka cluster of about
   ``--znodes`` znodes with the simulator (100,000 with ``--quick``).
2. Starts a Kafka-like client in its own process: one kazoo session with Kafka's default session timeout
   (zookeeper.session.timeout.ms = 18,000), reading a partition state znode
   (getData ``/brokers/topics/<t>/partitions/<p>/state``, a random one of a sample) every 10 ms and
   recording each read's latency. Its heartbeat is measured as the round trip of ``exists("/controller")``
   every 100 ms on the same session: kazoo, like ZooKeeper's Java client, sends a ping only after a third
   of the session timeout without any request, which never happens with a read every 10 ms, so no ping
   latency can be observed; a cheap request on the same session queues where a ping would.
3. Runs ``--rounds`` rounds of the phases, each round starting one phase later than the previous one, with the
   same client process throughout:
   ``idle`` (no snapshot), ``default limits`` (``SnapshotOptions()``: paced at 20,000 reads/s), ``unpaced``
   (the default caps on reads and bytes in flight, no rate limit), ``caps lifted`` (the walk as it was before
   the caps: 50 multiRead requests of 1,000 reads in flight, no read, byte or rate cap) and, with
   ``--paced-rate R``, ``paced`` (default limits at ``reads_per_second`` R). Each snapshot runs
   ``write_snapshot`` in its own process into a temporary warehouse; a phase's window is its walk
   (``write_snapshot`` start to end), so a client read belongs to a phase when it was sent inside it.
4. Prints, per phase over all rounds, the snapshot's wall time, znodes/s and CPU share, the client's read
   and heartbeat latency (count, p50, p99, max), their p99 against idle (idle phases pooled), the client's
   errors and connection-state changes, how late its read thread woke up (p99: the client's own CPU
   starvation, which the read latency includes) and the 1-minute load average at the phases' ends; then
   whether the target "read p99 under 2x idle at the default limits" is met.

No figure is asserted: the machine may be shared, so the load average is printed with each phase and the
phases rotate across rounds so that drifting background load and order effects fall on all of them alike.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

KAFKA_SESSION_TIMEOUT_S = 18.0  # Kafka's default zookeeper.session.timeout.ms
READ_INTERVAL_S = 0.010
HEARTBEAT_INTERVAL_S = 0.100
SAMPLED_TOPICS = 200
TARGET_RATIO = 2.0
MIB = 1024 * 1024
# The walk before the caps: 50 multiRead requests of 1,000 reads in flight, nothing else holding it back.
CAPS_LIFTED = {"batch_ops": 1000, "max_in_flight": 50, "max_reads_in_flight": 50 * 1000,
               "max_bytes_in_flight": 1 << 40, "reads_per_second": 0.0}
IDLE = "idle"


@dataclass(frozen=True)
class Phase:
    """One phase of a round: a label and the ``SnapshotOptions`` overrides of its snapshot (None: no snapshot)."""

    name: str
    options: dict[str, Any] | None


@dataclass
class PhaseRun:
    """What one run of a phase measured: its window on the shared monotonic clock and the snapshot's figures."""

    phase: Phase
    start: float
    end: float
    load_start: float
    load_end: float
    snapshot: dict[str, Any] = field(default_factory=dict)


# -- the Kafka-like client (its own process) -------------------------------------------------------------------


def partition_state_paths(client: KazooClient, topics: int, seed: int = 1) -> list[str]:
    """The state znodes of every partition of ``topics`` topics picked at random."""
    names = client.get_children("/brokers/topics")
    picked = random.Random(seed).sample(names, min(topics, len(names)))
    return [
        f"/brokers/topics/{topic}/partitions/{partition}/state"
        for topic in picked
        for partition in client.get_children(f"/brokers/topics/{topic}/partitions")
    ]


def timed_loop(call: Any, interval: float, stop: threading.Event, samples: list, errors: list, kind: str,
               lateness: list | None = None) -> None:
    """Call ``call()`` every ``interval`` seconds until ``stop``; record (sent at, latency) or the error.

    A late call is not followed by a burst: the schedule restarts from the moment it returned. ``lateness``
    gets (due at, how late the thread woke up): the client's own CPU starvation, not ZooKeeper's.
    """
    next_at = time.monotonic()
    while not stop.is_set():
        sent = time.monotonic()
        try:
            call()
        except KazooException as exc:
            errors.append((sent, kind, type(exc).__name__))
        else:
            samples.append((sent, time.monotonic() - sent))
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(delay)
            if lateness is not None:
                lateness.append((next_at, time.monotonic() - next_at))
        else:
            next_at = time.monotonic()


def run_client(hosts: str, out: Path) -> None:
    """The Kafka-like client: reads and heartbeats until a line (or EOF) on stdin, then writes its samples."""
    states: list[tuple[float, str]] = []
    client = KazooClient(hosts=hosts, timeout=KAFKA_SESSION_TIMEOUT_S)
    client.add_listener(lambda state: states.append((time.monotonic(), str(state))))
    client.start(timeout=30)
    paths = partition_state_paths(client, SAMPLED_TOPICS)
    rng = random.Random(2)
    reads: list[tuple[float, float]] = []
    heartbeats: list[tuple[float, float]] = []
    lateness: list[tuple[float, float]] = []
    errors: list[tuple[float, str, str]] = []
    stop = threading.Event()
    threads = [
        threading.Thread(target=timed_loop, args=(lambda: client.get(rng.choice(paths)), READ_INTERVAL_S, stop,
                                                  reads, errors, "read", lateness), daemon=True),
        threading.Thread(target=timed_loop, args=(lambda: client.exists("/controller"), HEARTBEAT_INTERVAL_S, stop,
                                                  heartbeats, errors, "heartbeat"), daemon=True),
    ]
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # warm-up, before any phase's window
    print(json.dumps({"ready": True, "paths": len(paths)}), flush=True)
    sys.stdin.readline()
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    client.stop()
    client.close()
    samples = {"read": reads, "heartbeat": heartbeats, "lateness": lateness, "errors": errors, "states": states}
    out.write_text(json.dumps(samples))


# -- one snapshot (its own process) ----------------------------------------------------------------------------


def run_snapshot(hosts: str, warehouse_root: str, name: str, overrides: dict[str, Any]) -> None:
    """``write_snapshot`` of the whole tree with ``SnapshotOptions(**overrides)``; prints its window and figures."""
    from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
    from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
    from kafka_zk_audit.snapshot.connection import ZkSettings, split_hosts_and_chroot
    from kafka_zk_audit.snapshot.live import write_snapshot

    servers, chroot = split_hosts_and_chroot(hosts)
    settings = ZkSettings(hosts=servers, chroot=chroot)
    warehouse = Warehouse(warehouse_root)
    client = KazooClient(**settings.kazoo_kwargs())
    client.start(timeout=30)
    snapshot_id = new_snapshot_id(suffix=name)
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    manifest = write_snapshot(client, settings, warehouse, snapshot_id, SnapshotOptions(**overrides))
    end = time.monotonic()
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    client.stop()
    client.close()
    warehouse.remove(warehouse.snapshot_dir(snapshot_id))
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    print(json.dumps({
        "start": start, "end": end, "znodes": manifest["znodes"], "reads": manifest["reads"],
        "requests": manifest["requests"], "read_mode": manifest["read_mode"], "cpu_seconds": cpu,
        "peak_rss_mb": manifest["peak_rss_mb"],
    }))


# -- the harness -----------------------------------------------------------------------------------------------


def child_command(role: str, *args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), f"--role={role}", *args]


def snapshot_in_child(hosts: str, warehouse: Path, phase: Phase, round_number: int) -> dict[str, Any]:
    name = f"{phase.name.split()[0]}-{round_number}"
    out = subprocess.run(
        child_command("snapshot", hosts, str(warehouse), name, json.dumps(phase.options)),
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the snapshot process failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_cluster(hosts: str, znodes: int, partitions: int) -> tuple[Simulator, float]:
    """A 3.x cluster of about ``znodes`` znodes: each topic is its znode, /partitions, a config and 2 per partition."""
    topics = max(1, round(znodes / (2 * partitions + 3)))
    spec = ClusterSpec(era="3.x", brokers=30, racks=3, topics=topics, partitions=partitions, replication_factor=3,
                       groups=10, consumers_per_group=2, threads_per_consumer=2, seed=1)
    sim = Simulator(hosts=hosts)
    start = time.monotonic()
    sim.write(spec)
    return sim, time.monotonic() - start


def in_windows(samples: list, runs: list[PhaseRun]) -> list:
    return [sample for sample in samples if any(run.start <= sample[0] < run.end for run in runs)]


def latency_figures(samples: list) -> dict[str, float]:
    """count, p50, p99 and max of (sent at, latency) samples, in ms."""
    if not samples:
        return {"n": 0, "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    ms = np.array([latency for _, latency in samples]) * 1000
    return {"n": len(ms), "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
            "max": float(ms.max())}


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base and base == base and value == value else "-"


def print_table(phases: list[Phase], runs: list[PhaseRun], samples: dict[str, list]) -> dict[str, dict]:
    """One row per phase (its runs pooled); returns the figures by phase name."""
    idle_runs = [run for run in runs if run.phase.name == IDLE]
    idle = {kind: latency_figures(in_windows(samples[kind], idle_runs)) for kind in ("read", "heartbeat")}
    header = (f"  {'phase':<16}{'runs':>5}{'snap s':>8}{'znodes/s':>10}{'snap CPU':>9}"
              f"{'reads':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'p99/idle':>9}"
              f"{'hb':>6}{'hb p50':>8}{'hb p99':>8}{'hb max':>8}{'hb p99/idle':>12}{'errors':>7}{'states':>7}"
              f"{'late p99':>9}{'load1':>7}")
    print(header)
    print("  " + "-" * (len(header) - 2))
    figures: dict[str, dict] = {}
    for phase in phases:
        mine = [run for run in runs if run.phase == phase]
        read = latency_figures(in_windows(samples["read"], mine))
        heartbeat = latency_figures(in_windows(samples["heartbeat"], mine))
        errors = len(in_windows(samples["errors"], mine))
        states = len(in_windows(samples["states"], mine))
        late = latency_figures(in_windows(samples["lateness"], mine))
        load = float(np.mean([run.load_end for run in mine]))
        if phase.options is None:
            seconds = rate = cpu = "-"
        else:
            walk = sum(run.end - run.start for run in mine)
            seconds = f"{walk / len(mine):.1f}"
            rate = f"{sum(run.snapshot['znodes'] for run in mine) / walk:,.0f}"
            cpu = f"{100 * sum(run.snapshot['cpu_seconds'] for run in mine) / walk:.0f}%"
        figures[phase.name] = {"read": read, "heartbeat": heartbeat}
        print(f"  {phase.name:<16}{len(mine):>5}{seconds:>8}{rate:>10}{cpu:>9}"
              f"{read['n']:>7}{read['p50']:>8.2f}{read['p99']:>8.2f}{read['max']:>8.1f}"
              f"{ratio(read['p99'], idle['read']['p99']):>9}"
              f"{heartbeat['n']:>6}{heartbeat['p50']:>8.2f}{heartbeat['p99']:>8.2f}{heartbeat['max']:>8.1f}"
              f"{ratio(heartbeat['p99'], idle['heartbeat']['p99']):>12}{errors:>7}{states:>7}"
              f"{late['p99']:>9.2f}{load:>7.2f}")
    return figures


def run_phases(hosts: str, phases: list[Phase], args: argparse.Namespace, work: Path,
               client: subprocess.Popen) -> list[PhaseRun]:
    runs: list[PhaseRun] = []
    for round_number in range(1, args.rounds + 1):
        first = (round_number - 1) % len(phases)  # each round starts one phase later: no phase always comes first
        for phase in phases[first:] + phases[:first]:
            time.sleep(args.settle_seconds)
            if client.poll() is not None:
                raise RuntimeError(f"the client process exited with {client.returncode}")
            load_start = os.getloadavg()[0]
            if phase.options is None:
                start = time.monotonic()
                time.sleep(args.idle_seconds)
                run = PhaseRun(phase, start, time.monotonic(), load_start, os.getloadavg()[0])
            else:
                snapshot = snapshot_in_child(hosts, work / "warehouse", phase, round_number)
                run = PhaseRun(phase, snapshot["start"], snapshot["end"], load_start, os.getloadavg()[0], snapshot)
            runs.append(run)
            extra = (f", {run.snapshot['znodes']:,} znodes, {run.snapshot['reads']:,} reads in "
                     f"{run.snapshot['requests']:,} {run.snapshot['read_mode']} requests" if run.snapshot else "")
            print(f"  round {round_number} {phase.name}: {run.end - run.start:.1f}s{extra}, "
                  f"load {run.load_start:.2f} -> {run.load_end:.2f}", flush=True)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--znodes", type=int, default=None, help="tree size (default 1,000,000; --quick 100,000)")
    parser.add_argument("--quick", action="store_true", help="100,000 znodes, one round, short idle phases")
    parser.add_argument("--partitions", type=int, default=20, help="partitions per topic")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of all phases (default 3; --quick 1)")
    parser.add_argument("--idle-seconds", type=float, default=None, help="length of an idle phase (default 20; 10)")
    parser.add_argument("--settle-seconds", type=float, default=3.0, help="pause before each phase, not measured")
    parser.add_argument("--paced-rate", type=float, default=0.0,
                        help="reads_per_second of an extra paced phase (default 0: none)")
    parser.add_argument("--zk-heap-mb", type=int, default=4096)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (ZooKeeper data, logs)")
    parser.add_argument("--role", choices=["client", "snapshot"], help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.role == "client":
        run_client(rest[0], Path(rest[1]))
        return 0
    if args.role == "snapshot":
        run_snapshot(rest[0], rest[1], rest[2], json.loads(rest[3]))
        return 0
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.znodes = args.znodes or (100_000 if args.quick else 1_000_000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.idle_seconds = args.idle_seconds or (10.0 if args.quick else 20.0)
    logging.basicConfig(level=logging.WARNING)

    phases = [Phase(IDLE, None), Phase("default limits", {}), Phase("unpaced", {"reads_per_second": 0.0}),
              Phase("caps lifted", CAPS_LIFTED)]
    if args.paced_rate:
        phases.append(Phase(f"paced {args.paced_rate / 1000:g}k/s", {"reads_per_second": args.paced_rate}))
    work = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-bench-load-"))
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} cores)")
    server = ZooKeeperServer(work / "zk", port=free_port(), heap_mb=args.zk_heap_mb, c1_only=False).start()
    sim: Simulator | None = None
    client: subprocess.Popen | None = None
    try:
        hosts = f"{server.hosts}/kafka"
        sim, write_seconds = write_cluster(hosts, args.znodes, args.partitions)
        print(f"write (simulator): {sim.counts.creates:,} znodes in {write_seconds:.1f}s "
              f"= {sim.counts.creates / write_seconds:,.0f} creates/s")
        samples_file = work / "client-samples.json"
        client = subprocess.Popen(child_command("client", hosts, str(samples_file)), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        ready = json.loads(client.stdout.readline() or "{}")
        if not ready.get("ready"):
            raise RuntimeError("the client process did not start")
        print(f"client: one session ({KAFKA_SESSION_TIMEOUT_S:.0f}s timeout), getData of one of {ready['paths']:,} "
              f"partition states every {READ_INTERVAL_S * 1000:.0f} ms, exists(/controller) every "
              f"{HEARTBEAT_INTERVAL_S * 1000:.0f} ms")
        print(f"phases: {args.rounds} round(s) of {', '.join(p.name for p in phases)}; "
              f"caps lifted = {CAPS_LIFTED}")
        time.sleep(10.0)  # ZooKeeper writes its own snapshot file after the bulk write: let it settle
        runs = run_phases(hosts, phases, args, work, client)
        client.stdin.write("stop\n")
        client.stdin.flush()
        if client.wait(timeout=120) != 0:
            raise RuntimeError(f"the client process exited with {client.returncode}")
        samples = json.loads(samples_file.read_text())
        znodes = next(run.snapshot["znodes"] for run in runs if run.snapshot)
        print(f"\nwhat the Kafka-like client saw while {znodes:,} znodes were snapshotted "
              f"(latency in ms; heartbeat = exists(/controller) round trip; idle phases pooled as the baseline):")
        figures = print_table(phases, runs, samples)
        idle_p99 = figures[IDLE]["read"]["p99"]
        default_p99 = figures["default limits"]["read"]["p99"]
        met = default_p99 < TARGET_RATIO * idle_p99
        print(f"\ntarget: client read p99 under {TARGET_RATIO:g}x idle at the default limits: "
              f"{'met' if met else 'NOT met'} ({default_p99:.2f} ms vs {idle_p99:.2f} ms idle, "
              f"{default_p99 / idle_p99:.2f}x)")
        print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} cores "
              f"shared by ZooKeeper, the snapshot, the client, the simulator's sessions and anything else running)")
    finally:
        if client is not None and client.poll() is None:
            client.kill()
            client.wait()
        if sim is not None:
            sim.close()
        server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
