"""The scheduler's run, shared by tests/system/test_scheduler.py and test_install.py: the package as a user installs
it (a wheel in a new venv, one copied DAG file, nothing of the checkout) under a real Airflow scheduler, DAG
processor, triggerer and API server of that venv on loopback. They schedule the hourly run of a two-cluster fleet
(one dead) while the test holds the warehouse's gate lock until the run's gate waits for it. The live cluster carries
a leader outside its ISR (the hourly run's trigger alert) and a transient ISR member outside the replicas (a check
with a ``for`` of ten minutes: pending). Then the event-driven audit: the test repairs both in the live cluster, the
triggerer's watch fires and the event DAG audits just that cluster: a resolve with the trigger's key, and the
transient violation healed within its ``for``, so it sends nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from kafka_zk_audit.contract.lock import warehouse_lock
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.airflow_services import AirflowServices
from kafka_zk_audit_testing.receivers import webhook_receiver
from kafka_zk_audit_testing.simulator import ClusterSpec, Planted, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parents[2]


def outside_env() -> dict[str, str]:
    """This process's environment without what would put the checkout on the installed side (PYTHONPATH & co,
    Airflow's and the project's settings)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON", "KAFKA_ZK_AUDIT"))}


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("env", outside_env())
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@dataclass
class Installed:
    venv: Path
    wheel: Path


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    """A new venv with the wheel built from this checkout, installed as the README says."""
    root = tmp_path_factory.mktemp("install")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "dist"), str(REPO)])
    wheel = next((root / "dist").glob("kafka_zk_audit-*.whl"))
    venv = root / "venv"
    # the current pip, as scripts/setup.sh installs into .venv, is this interpreter's, pointed at the new venv with
    # --python: the venv needs no pip of its own (Python 3.11's bundled pip 23.2 takes twice the CPU to resolve the
    # constraints, 36 CPU-seconds against 19, and upgrading it in the venv 8 more)
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)])
    # --no-compile: Python compiles what the run imports, not the ~20,000 modules of the install (a third faster)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile",
           "-c", str(REPO / "constraints.txt")]
    _run([*pip, str(wheel)], cwd=root)
    _run([*pip, "--force-reinstall", "--no-deps", "pyspark"], cwd=root)  # README: pyspark-client shares pyspark/
    return Installed(venv, wheel)


DAG_ID = "kafka_zk_audit"
EVENTS_DAG_ID = "kafka_zk_audit_events"
PLANTED = "leader_not_in_isr"
TRANSIENT = "isr_not_subset_of_replicas"  # planted with PLANTED, healed with its repair, inside its ``for``
CONSUMER = "react_to_kafka_zk_audit"
SPEC = ClusterSpec(era="3.x", brokers=3, racks=1, topics=4, partitions=2, replication_factor=3, groups=1,
                   consumers_per_group=1, threads_per_consumer=1, topics_per_group=1)
RETRY_DELAY_S = 5
WAIT_S = 900

# A DAG of the user's, scheduled on the live cluster's Asset: it records the triggering event's extra.
CONSUMER_DAG = '''
import json
import os

from airflow.sdk import DAG, Asset, task

LIVE = Asset(name="kafka_zk_audit.live", uri="kafka-zk-audit://live", group="kafka_zk_audit")

with DAG(dag_id="{dag_id}", schedule=[LIVE], catchup=False):

    @task
    def record(triggering_asset_events=None):
        # an event published through an alias is listed under the alias and under the asset: one entry per event
        events = {{(event.asset.uri, str(event.timestamp)): {{"uri": event.asset.uri, "extra": dict(event.extra)}}
                  for asset_events in triggering_asset_events.values() for event in asset_events}}
        with open(os.environ["CONSUMER_OUTPUT"], "w") as out:
            json.dump(list(events.values()), out)

    record()
'''


@dataclass
class Scheduled:
    services: AirflowServices
    started: datetime
    warehouse: Path
    run_id: str
    posts: list[dict]
    consumer_events: list[dict]
    installed: Path  # the venv the wheel was installed into: its airflow runs the services
    scheduled_gate_log: str
    scheduled_audit_log: str  # the hourly run's audit task log (its spark-submit command line)
    consumer_runs: list[dict]  # the Asset-triggered DAG's runs after the hourly run (before the event-driven one)
    hourly_snapshot_ids: set[str]  # the snapshots the scheduled run took
    events: EventAudits


@dataclass
class EventAudits:
    """The event-driven audit of the live cluster after the repair of what the hourly run found."""

    trigger_posts: list[dict]  # the webhook's alerts (the hourly run's) whose started_firing lists the planted check
    resolve_posts: list[dict]  # the event phase's whose resolved lists it
    posts: list[dict]  # every webhook post of the event phase
    runs: list[dict]  # the event DAG's runs
    snapshot_ids: list[str]  # the snapshots they took, in order
    resolve_latency_s: float  # from the repair's write to the resolve


def _task_log(home: Path, task_id: str) -> str:
    """The scheduled run's log of ``task_id`` (its first attempt), '' until it exists."""
    found = sorted(home.glob(f"logs/dag_id={DAG_ID}/run_id=scheduled__*/task_id={task_id}/attempt=1.log"))
    return found[0].read_text(errors="replace") if found else ""


def installed_env(installed: Path, tmp: Path) -> dict[str, str]:
    """The environment of the installed package's ``airflow``: its own home, a DAGs folder with a copy of the DAG
    file, nothing of the checkout."""
    python = installed / "bin" / "python"
    home, dags = tmp / "installed-airflow", tmp / "installed-dags"
    dags.mkdir(parents=True)
    shutil.copy(REPO / "dags" / "kafka_zk_audit.py", dags / "kafka_zk_audit.py")
    env = outside_env()
    env.update({
        "PATH": f"{installed / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "VIRTUAL_ENV": str(installed),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "GX_ANALYTICS_ENABLED": "false",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "NO_PROXY": "*",
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_DRIVER_PYTHON": str(python),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        # the installed Spark's own class-data archive, in a folder of the test (not the user's cache)
        "KAFKA_ZK_AUDIT_JVM_CACHE": str(tmp / "installed-jvm-cache"),
    })
    return env


@pytest.fixture(scope="session")
def scheduled(zk_server, installed: Installed, tmp_path_factory) -> Iterator[Scheduled]:
    tmp = tmp_path_factory.mktemp("scheduler")
    warehouse = tmp / "wh"
    settings = tmp / "settings.yaml"
    settings.write_text(yaml.safe_dump({
        # no schedule key: the packaged default (hourly) is what is proven
        "clusters": [{"name": "live", "zk_conn_id": "zk_live"}, {"name": "dead", "zk_conn_id": "zk_dead"}],
        "fleet": {"task_retries": 1, "retry_delay": f"{RETRY_DELAY_S}s"},
        "events": {"enabled": True, "quiet_period": "2s", "max_delay": "10s"},
        "alerts": {"webhook_conn_id": "hook", "for": {TRANSIENT: "10m"}},
    }, sort_keys=False))
    env = installed_env(installed.venv, tmp)
    consumer_output = tmp / "consumer.json"
    (Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / f"{CONSUMER}.py").write_text(CONSUMER_DAG.format(dag_id=CONSUMER))
    env.update({"KAFKA_ZK_AUDIT_CONFIG": str(settings), "KAFKA_ZK_AUDIT_WAREHOUSE": str(warehouse),
                "CONSUMER_OUTPUT": str(consumer_output)})
    env["AIRFLOW_CONN_ZK_LIVE"] = json.dumps({"conn_type": "zookeeper", "host": zk_server.hosts,
                                              "extra": {"chroot": "/sched_live"}})
    env["AIRFLOW_CONN_ZK_DEAD"] = json.dumps({"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}",
                                              "extra": {"timeout": 3}})
    airflow = installed.venv / "bin" / "airflow"
    subprocess.run([str(airflow), "db", "migrate"], env=env, cwd=tmp, capture_output=True, check=True)

    zk_server.ensure_chroot("/sched_live")
    sim = Simulator(hosts=f"{zk_server.hosts}/sched_live")  # holds the brokers' and controller's sessions
    sim.write(SPEC)
    planted, transient = sim.plant(PLANTED), sim.plant(TRANSIENT)

    with webhook_receiver() as webhook:
        env["AIRFLOW_CONN_HOOK"] = json.dumps({"conn_type": "http", "host": webhook.url("/hook/fleet")})
        services = AirflowServices(env, triggerer=True, airflow=airflow)
        started = datetime.now(UTC)
        gate_lock = warehouse_lock(Warehouse(str(warehouse)), "gate")
        gate_lock.__enter__()  # the run's gate will have to wait for it
        released = False
        try:
            services.start()
            try:
                services.wait_for(lambda: "waiting for the gate lock" in _task_log(services.home, "gate"),
                                  WAIT_S, "the scheduled run's gate to wait for the warehouse's gate lock", poll_s=2)
            finally:
                gate_lock.__exit__(None, None, None)
                released = True
            run = services.wait_for(
                lambda: services.query("select run_id, state from dag_run where dag_id = ? and run_type = 'scheduled'"
                                       " and state in ('success', 'failed') order by id limit 1", DAG_ID),
                WAIT_S, "the scheduled run to end", poll_s=2)[0]
            services.wait_for(lambda: consumer_output.exists(), 180, "the Asset-triggered DAG's task")
            consumer_events = json.loads(consumer_output.read_text())
            posts = list(webhook.posts)
            consumer_runs = [dict(r) for r in services.wait_for(lambda: [
                r for r in services.query("select run_type, state from dag_run where dag_id = ?", CONSUMER)
                if r["state"] in ("success", "failed")], 120, "the Asset-triggered DAG's run to end")]
            hourly_ids = set(_snapshots_taken(services, DAG_ID, run["run_id"]))
            events = _event_driven_audit(services, (planted, transient), webhook.posts, zk_server)
        finally:
            if not released:
                gate_lock.__exit__(None, None, None)
            services.stop()
            sim.close()
    yield Scheduled(services, started, warehouse, run["run_id"], posts, consumer_events, installed.venv,
                    _task_log(services.home, "gate"), _task_log(services.home, "audit"), consumer_runs, hourly_ids,
                    events)


def _snapshots_taken(services: AirflowServices, dag_id: str, run_id: str | None = None) -> list[str]:
    """The snapshot ids the snapshot tasks of a DAG's runs (of one run) returned, in the runs' order."""
    rows = services.query(
        "select x.value from xcom x join dag_run r on r.dag_id = x.dag_id and r.run_id = x.run_id where x.dag_id = ?"
        " and x.task_id = 'snapshot' and x.key = 'return_value' and (? is null or x.run_id = ?)"
        " order by r.id, x.map_index", dag_id, run_id, run_id)
    return [json.loads(row["value"]) for row in rows]


def _alerts_listing(posts: list[dict], field: str, check_id: str) -> list[dict]:
    return [p for p in posts if any(e.get("check_id") == check_id
                                    for e in p["json"].get("kafka_zk_audit", {}).get(field) or ())]


def _event_runs_ended(services: AirflowServices, count: int) -> list:
    rows = services.query("select run_id, run_type, state, start_date, end_date from dag_run where dag_id = ?"
                          " order by id", EVENTS_DAG_ID)
    return rows if len(rows) >= count and all(r["state"] in ("success", "failed") for r in rows) else []


def _event_driven_audit(services: AirflowServices, plants: tuple[Planted, Planted], posts: list[dict],
                        zk_server: ZooKeeperServer) -> EventAudits:
    """Once the triggerer runs the clusters' watches, repair the planted leader outside its ISR and the transient ISR
    member outside the replicas in the live cluster; wait for the event-driven audit's resolve and its run's end."""
    from kazoo.client import KazooClient

    services.wait_for(lambda: len(services.query(
        "select id from trigger where classpath like '%KafkaMetadataChangeTrigger' and triggerer_id is not null"
    )) >= 2, 180, "the triggerer to run the clusters' watches", poll_s=1)
    time.sleep(5)  # the watch's session connects and arms its watches
    triggered = _alerts_listing(posts, "started_firing", PLANTED)
    start = len(posts)
    client = KazooClient(hosts=f"{zk_server.hosts}/sched_live")
    client.start(timeout=15)
    try:
        repaired = {}
        for plant in plants:  # the ISR of each back to its partition's replicas
            replicas = json.loads(client.get(f"/brokers/topics/{plant.topic}")[0])["partitions"][str(plant.partition)]
            repaired[plant.path] = json.dumps({**json.loads(client.get(plant.path)[0]), "isr": replicas}).encode()
        repaired_at = time.monotonic()
        for path, data in repaired.items():
            client.set(path, data)
    finally:
        client.stop()
        client.close()
    resolved = services.wait_for(lambda: _alerts_listing(posts[start:], "resolved", PLANTED), WAIT_S,
                                 "the event-driven audit's resolve", poll_s=0.5)
    resolve_latency = time.monotonic() - repaired_at
    runs = services.wait_for(lambda: _event_runs_ended(services, 1), WAIT_S, "the repair's run to end")
    return EventAudits(triggered, resolved, list(posts[start:]), [dict(r) for r in runs],
                       _snapshots_taken(services, EVENTS_DAG_ID), resolve_latency)
