"""Event-driven audits: what the triggerer's watches cost and how they debounce, against baselines of the same run.

    .venv/bin/python bench/bench_events.py [--clusters 100] [--idle-seconds 60] [--burst 1000] [--burst-seconds 10]

It starts a private ZooKeeper on 127.0.0.1 and runs the watches as the triggerer does (one asyncio loop, one
:class:`KafkaMetadataChangeTrigger` per cluster, each with its own session on kazoo's threads):

1. idle CPU: --clusters chroots of a small Kafka tree (one real ZooKeeper), watched for --idle-seconds with nothing
   changing: the process's CPU as a share of one core, against the same number of plain kazoo sessions (no watch);
2. burst: --burst ISR updates of one partition's state within --burst-seconds, with the packaged quiet period and
   max delay: how many events (audits started) they make, against the notifications the watch received;
3. transient: an under-replicated partition seen by one audit and healed by the next, inside its check's ``for``
   (the alert lifecycle of ``report.lifecycle``): how many alerts it sends, against the same finding outliving it.

Targets: idle CPU for 100 clusters < 5 % of one core; 1,000 ISR changes in 10 s -> 1-2 audits; transient -> 0 alerts.
4. latency (--latency-runs N, 0 to skip): a real scheduler, DAG processor, triggerer and API server on loopback
   (manual-only hourly DAG, events on, quiet period 2 s), N times: a leader taken out of its ISR, then put back; the
   time from the write to the webhook's trigger alert, and from the repair to the resolve (same key), against the
   event-driven run's own duration (what the debounce and the scheduler add is the difference).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from kafka_zk_audit.airflow.triggers.metadata_changes import KafkaMetadataChangeTrigger
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.report.lifecycle import compute_lifecycle, next_state
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

STATE = "/brokers/topics/t/partitions/0/state"
TREE = ("/brokers/ids/1", "/brokers/ids/2", "/brokers/topics/t/partitions/0/state", "/controller", "/admin",
        "/config/topics/t", "/isr_change_notification")


def seed(server: ZooKeeperServer, clusters: int) -> None:
    """``clusters`` chroots ``/c000``… each with a small Kafka tree."""
    client = KazooClient(hosts=server.hosts)
    client.start(timeout=15)
    try:
        for i in range(clusters):
            for path in TREE:
                client.ensure_path(f"/c{i:03d}{path}")
    finally:
        client.stop()
        client.close()


def connect(conn_id: str, hosts: str, chroot: str) -> None:
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(
        {"conn_type": "zookeeper", "host": hosts, "extra": {"chroot": chroot}})


def trigger_of(i: int, **kwargs: Any) -> KafkaMetadataChangeTrigger:
    events = load_config(None).events
    settings = {"paths": list(events.paths), "ignore": list(events.ignore),
                "quiet_period_s": events.quiet_period.total_seconds(), "max_delay_s": events.max_delay.total_seconds()}
    return KafkaMetadataChangeTrigger(cluster=f"c{i:03d}", zk_conn_id=f"bench_zk_{i:03d}", **{**settings, **kwargs})


async def idle_cpu(hosts: str, clusters: int, seconds: float) -> dict[str, float]:
    """CPU share of one core: ``clusters`` watches, then ``clusters`` plain sessions, each idle for ``seconds``."""
    triggers = [trigger_of(i) for i in range(clusters)]
    for i in range(clusters):
        connect(f"bench_zk_{i:03d}", hosts, f"/c{i:03d}")
    runs = [asyncio.ensure_future(t.run().__anext__()) for t in triggers]
    while not all(t.watch is not None and t.watch.armed.is_set() for t in triggers):
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    watched = (time.process_time() - cpu) / (time.monotonic() - wall)
    fired = sum(r.done() for r in runs)
    for run in runs:
        run.cancel()
    await asyncio.gather(*runs, return_exceptions=True)
    for t in triggers:
        await asyncio.to_thread(t.watch.stop)
    plain = [KazooClient(hosts=f"{hosts}/c{i:03d}") for i in range(clusters)]
    for client in plain:
        client.start(timeout=15)
    await asyncio.sleep(2)
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    sessions = (time.process_time() - cpu) / (time.monotonic() - wall)
    for client in plain:
        client.stop()
        client.close()
    return {"watched": watched, "sessions": sessions, "events": fired}


async def burst(hosts: str, changes: int, seconds: float, **kwargs: Any) -> dict[str, Any]:
    """``changes`` ISR updates within ``seconds`` into one watched chroot: the events within a minute after."""
    connect("bench_zk_000", hosts, "/c000")
    trigger = trigger_of(0, **kwargs)
    received: list[str] = []
    events: list[dict] = []
    gen = trigger.run()
    first = asyncio.ensure_future(gen.__anext__())
    while trigger.watch is None or not trigger.watch.armed.is_set():
        await asyncio.sleep(0.1)
    original = trigger.watch.on_change
    trigger.watch.on_change = lambda kind, path: (received.append(path), original(kind, path))

    def write() -> None:
        client = KazooClient(hosts=f"{hosts}/c000")
        client.start(timeout=15)
        try:
            started = time.monotonic()
            for i in range(changes):
                isr = [1, 2] if i % 2 else [1]
                client.set(STATE, json.dumps({"leader": 1, "isr": isr, "leader_epoch": i}).encode())
                time.sleep(max(0.0, started + (i + 1) * seconds / changes - time.monotonic()))
        finally:
            client.stop()
            client.close()

    started = time.monotonic()
    await asyncio.to_thread(write)
    pending = first
    deadline = started + seconds + trigger.max_delay_s + trigger.quiet_period_s + 5
    while time.monotonic() < deadline:
        done, _ = await asyncio.wait({pending}, timeout=deadline - time.monotonic())
        if not done:
            break
        events.append({**pending.result().payload, "after_s": time.monotonic() - started})
        pending = asyncio.ensure_future(gen.__anext__())
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    await gen.aclose()
    return {"notifications": len(received), "events": events, "quiet": trigger.quiet_period_s,
            "max_delay": trigger.max_delay_s}


def transient() -> dict[str, int]:
    """Alerts of an under-replicated partition healed within its ``for`` (10 min), and of one that outlives it."""
    urp = {"check_id": "under_replicated", "severity": "error", "topic": "t", "partition": 0, "status": "new"}

    def pending_for(check_id: str) -> timedelta:
        return timedelta(minutes=10) if check_id == "under_replicated" else timedelta(0)

    def alerts(snapshots: list[tuple[str, list[dict]]]) -> int:
        state: dict | None = None
        sent = 0
        for snapshot_id, findings in snapshots:
            seen = [{**f, "first_seen": snapshots[0][0]} for f in findings]
            life = compute_lifecycle("bench", snapshot_id, seen, pending_for, state)
            sent += len(life.triggered) + len(life.resolved)
            state = next_state(life, state)
        return sent

    healed = alerts([("20260101T000000Z-a", [urp]), ("20260101T000300Z-b", [])])
    outlived = alerts([("20260101T000000Z-a", [urp]), ("20260101T001100Z-b", [urp]), ("20260101T001500Z-c", [])])
    return {"healed_within_for": healed, "outlived_for": outlived}


LATENCY_SPEC = {"era": "3.x", "brokers": 3, "racks": 1, "topics": 4, "partitions": 2, "replication_factor": 3,
                "groups": 1, "consumers_per_group": 1, "threads_per_consumer": 1, "topics_per_group": 1}


def latency(server: ZooKeeperServer, tmp: Path, runs: int, connect_port: int | None = None) -> dict[str, list[float]]:
    """Planted leader_not_in_isr -> trigger alert, repair -> resolve, ``runs`` times, under a real scheduler; with
    ``connect_port`` the event DAG's audit runs through the Spark Connect server on that port of 127.0.0.1
    (``events.spark_connect_conn_id``), warmed up first as ``connect-server start --warm-up`` does (the audits of
    a stored snapshot of the cluster: ``warm_up`` in the result, their seconds)."""
    import yaml

    from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db
    from kafka_zk_audit_testing.airflow_services import AirflowServices
    from kafka_zk_audit_testing.receivers import webhook_receiver
    from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

    chroot = "/lat" if connect_port is None else "/lat-connect"  # each call its own cluster
    server.ensure_chroot(chroot)
    sim = Simulator(hosts=f"{server.hosts}{chroot}")
    sim.write(ClusterSpec(**LATENCY_SPEC))
    planted = sim.plant("leader_not_in_isr")
    writer = KazooClient(hosts=f"{server.hosts}{chroot}")
    writer.start(timeout=15)
    broken = writer.get(planted.path)[0]
    replicas = json.loads(writer.get(f"/brokers/topics/{planted.topic}")[0])["partitions"]["0"]
    healthy = json.dumps({**json.loads(broken), "isr": replicas}).encode()
    writer.set(planted.path, healthy)  # healthy before the services start
    warmed: list[float] = []
    if connect_port is not None:  # connect-server start --warm-up: a stored snapshot of the cluster, audited
        from audit_identity import take

        from kafka_zk_audit.audit.connect import warm_up
        from kafka_zk_audit.contract.warehouse import Warehouse

        stored = tmp / "warm-up-wh"
        take(server.hosts, chroot, Warehouse(str(stored)), "lat", "warm-up")
        warm_up(f"sc://127.0.0.1:{connect_port}", str(stored), progress=lambda _, seconds: warmed.append(seconds))
    settings = tmp / "settings.yaml"
    events = {"enabled": True, "quiet_period": "2s", "max_delay": "10s"}
    if connect_port is not None:
        events["spark_connect_conn_id"] = "spark_connect_bench"
    settings.write_text(yaml.safe_dump({"schedule": None, "clusters": [{"name": "lat", "zk_conn_id": "zk_lat"}],
                                        "alerts": {"webhook_conn_id": "hook"}, "events": events}))
    env = airflow_env(airflow_home=tmp / "airflow", base={k: v for k, v in os.environ.items()
                                                           if not k.startswith("AIRFLOW")})
    env.update({"KAFKA_ZK_AUDIT_CONFIG": str(settings), "KAFKA_ZK_AUDIT_WAREHOUSE": str(tmp / "wh"),
                "AIRFLOW_CONN_ZK_LAT": json.dumps({"conn_type": "zookeeper", "host": server.hosts,
                                                   "extra": {"chroot": chroot}})})
    if connect_port is not None:
        env["AIRFLOW_CONN_SPARK_CONNECT_BENCH"] = json.dumps({"conn_type": "spark_connect", "host": "127.0.0.1",
                                                              "port": connect_port})
    ensure_metadata_db(env)
    result: dict[str, list[float]] = {"alert": [], "resolve": [], "run": [], "warm_up": warmed}
    with webhook_receiver() as webhook:
        env["AIRFLOW_CONN_HOOK"] = json.dumps({"conn_type": "http", "host": webhook.url("/hook/bench")})
        services = AirflowServices(env, triggerer=True).start()
        try:
            services.wait_for(lambda: services.query(
                "select id from trigger where classpath like '%KafkaMetadataChangeTrigger' and triggerer_id is not"
                " null"), 300, "the triggerer to run the watch")
            time.sleep(5)

            def listed(field: str, start: int) -> bool:
                return any(e.get("check_id") == "leader_not_in_isr" for p in webhook.posts[start:]
                           for e in p["json"].get("kafka_zk_audit", {}).get(field) or ())

            for _ in range(runs):
                for field, data in (("started_firing", broken), ("resolved", healthy)):
                    start, began = len(webhook.posts), time.monotonic()
                    writer.set(planted.path, data)
                    services.wait_for(lambda field=field, start=start: listed(field, start), 900, field, poll_s=0.2)
                    result["alert" if field == "started_firing" else "resolve"].append(time.monotonic() - began)
                    ended = services.wait_for(lambda: [r for r in services.query(
                        "select state, start_date, end_date from dag_run where dag_id = 'kafka_zk_audit_events'"
                        " order by id desc limit 1") if r["end_date"]], 900, "the run to end")[0]
                    result["run"].append((datetime.fromisoformat(ended["end_date"])
                                          - datetime.fromisoformat(ended["start_date"])).total_seconds())
        finally:
            services.stop()
            writer.stop()
            writer.close()
            sim.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--burst-seconds", type=float, default=10.0)
    parser.add_argument("--latency-runs", type=int, default=5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-events-") as tmp:
        server = ZooKeeperServer(Path(tmp) / "zk", port=free_port()).start()
        try:
            seed(server, args.clusters)
            cpu = asyncio.run(idle_cpu(server.hosts, args.clusters, args.idle_seconds))
            packaged = asyncio.run(burst(server.hosts, args.burst, args.burst_seconds))
            short = asyncio.run(burst(server.hosts, args.burst, args.burst_seconds, quiet_period_s=2.0,
                                      max_delay_s=5.0))
            lat = latency(server, Path(tmp), args.latency_runs) if args.latency_runs else None
        finally:
            server.stop()
    life = transient()
    rows = [
        (f"idle CPU, {args.clusters} watched clusters", f"{cpu['watched'] * 100:.2f} % of a core",
         f"{cpu['sessions'] * 100:.2f} % for plain sessions ({cpu['events']} events)", "< 5 %"),
    ]
    for label, result in (("packaged quiet/max", packaged), ("quiet 2s, max 5s", short)):
        audits = len(result["events"])
        at = ", ".join(f"{e['after_s']:.1f} s" for e in result["events"])
        started = f"{audits} audit{'s' if audits != 1 else ''} at {at}"
        rows.append((f"burst {args.burst} ISR changes in {args.burst_seconds:g} s, {label} "
                     f"({result['quiet']:g}s/{result['max_delay']:g}s)", started,
                     f"{result['notifications']} notifications ({result['notifications'] / max(1, audits):.0f}x "
                     "the audits)", "1-2 audits"))
    rows.append(("transient URP healed within its for (10 min)", f"{life['healed_within_for']} alerts",
                 f"{life['outlived_for']} alerts when it outlives it (trigger + resolve)", "0 alerts"))
    if lat:
        for field in ("alert", "resolve"):
            rows.append((f"planted leader_not_in_isr -> {field} received, median of {len(lat[field])}",
                         f"{statistics.median(lat[field]):.1f} s ({', '.join(f'{v:.0f}' for v in lat[field])})",
                         f"event-driven run itself: median {statistics.median(lat['run']):.1f} s", "< 60 s"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("measure", "watched", "baseline (same run)", "target")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
