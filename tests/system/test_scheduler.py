"""The DAG under a real Airflow scheduler, DAG processor and API server on loopback, and two runs on one warehouse.

One module-scoped run proves what ``airflow dags test`` cannot: the scheduler creates the hourly run by itself
(the default schedule, catchup off), maps the snapshot over the settings' clusters, retries the unreachable
cluster's snapshot after its delay and alerts once when it has failed for good, and a second DAG scheduled on
the live cluster's Asset is triggered by the audit's event and reads its counts. Meanwhile an operator's
``kafka-zk-audit run`` audits the same cluster into the same warehouse: the test holds the warehouse's gate
lock until both runs wait for it, so the two gates are known to contend; both must then finish with their
own, intact results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db
from kafka_zk_audit.contract.lock import warehouse_lock
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.airflow_services import AirflowServices
from kafka_zk_audit_testing.receivers import webhook_receiver
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import free_port

pytestmark = pytest.mark.dag

DAG_ID = "kafka_zk_audit"
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
    cli_returncode: int
    cli_log: str
    scheduled_gate_log: str


def _gate_log(home: Path) -> str:
    """The scheduled run's gate task log (its first attempt), '' until it exists."""
    found = sorted(home.glob(f"logs/dag_id={DAG_ID}/run_id=scheduled__*/task_id=gate/attempt=1.log"))
    return found[0].read_text(errors="replace") if found else ""


@pytest.fixture(scope="module")
def scheduled(zk_server, tmp_path_factory) -> Iterator[Scheduled]:
    tmp = tmp_path_factory.mktemp("scheduler")
    warehouse = tmp / "wh"
    settings = tmp / "settings.yaml"
    settings.write_text(yaml.safe_dump({
        # no schedule key: the packaged default (hourly) is what is proven
        "clusters": [{"name": "live", "zk_conn_id": "zk_live"}, {"name": "dead", "zk_conn_id": "zk_dead"}],
        "fleet": {"task_retries": 1, "retry_delay": f"{RETRY_DELAY_S}s"},
        "alerts": {"webhook_conn_id": "hook"},
    }, sort_keys=False))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env = airflow_env(airflow_home=tmp / "airflow", base=clean)
    consumer_output = tmp / "consumer.json"
    (Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / f"{CONSUMER}.py").write_text(CONSUMER_DAG.format(dag_id=CONSUMER))
    env.update({"KAFKA_ZK_AUDIT_CONFIG": str(settings), "KAFKA_ZK_AUDIT_WAREHOUSE": str(warehouse),
                "CONSUMER_OUTPUT": str(consumer_output)})
    env["AIRFLOW_CONN_ZK_LIVE"] = json.dumps({"conn_type": "zookeeper", "host": zk_server.hosts,
                                              "extra": {"chroot": "/sched_live"}})
    env["AIRFLOW_CONN_ZK_DEAD"] = json.dumps({"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}",
                                              "extra": {"timeout": 3}})
    ensure_metadata_db(env)

    zk_server.ensure_chroot("/sched_live")
    sim = Simulator(hosts=f"{zk_server.hosts}/sched_live")  # holds the brokers' and controller's sessions
    sim.write(SPEC)

    cli_env = airflow_env(airflow_home=tmp / "cli-airflow", base=clean)
    cli_log_path = tmp / "cli.log"
    with webhook_receiver() as webhook:
        env["AIRFLOW_CONN_HOOK"] = json.dumps({"conn_type": "http", "host": webhook.url("/hook/fleet")})
        services = AirflowServices(env)
        started = datetime.now(UTC)
        gate_lock = warehouse_lock(Warehouse(str(warehouse)), "gate")
        gate_lock.__enter__()  # both runs' gates will have to wait for it
        released = False
        try:
            services.start()
            with open(cli_log_path, "w") as cli_log:
                cli = subprocess.Popen(
                    [str(Path(sys.executable).parent / "kafka-zk-audit"), "run", "-v", "--warehouse", str(warehouse),
                     "--zk", f"live={zk_server.hosts}/sched_live"],
                    env=cli_env, stdout=cli_log, stderr=subprocess.STDOUT)
                try:
                    services.wait_for(
                        lambda: "waiting for the gate lock" in _gate_log(services.home)
                        and "waiting for the gate lock" in cli_log_path.read_text(errors="replace")
                        or cli.poll() is not None,
                        WAIT_S, "both runs' gates to wait for the warehouse's gate lock", poll_s=2)
                finally:
                    gate_lock.__exit__(None, None, None)
                    released = True
                cli_returncode = cli.wait(timeout=WAIT_S)
            run = services.wait_for(
                lambda: services.query("select run_id, state from dag_run where dag_id = ? and run_type = 'scheduled'"
                                       " and state in ('success', 'failed') order by id limit 1", DAG_ID),
                WAIT_S, "the scheduled run to end", poll_s=2)[0]
            services.wait_for(lambda: consumer_output.exists(), 180, "the Asset-triggered DAG's task")
            consumer_events = json.loads(consumer_output.read_text())
            posts = list(webhook.posts)
        finally:
            if not released:
                gate_lock.__exit__(None, None, None)
            services.stop()
            sim.close()
    yield Scheduled(services, started, warehouse, run["run_id"], posts, consumer_events, cli_returncode,
                    cli_log_path.read_text(errors="replace"), _gate_log(services.home))


def test_the_scheduler_creates_the_hourly_run_itself_with_catchup_off(scheduled):
    services = scheduled.services
    runs = services.query("select run_id, run_type, logical_date, run_after, queued_at from dag_run where dag_id = ?"
                          " order by id", DAG_ID)
    assert runs[0]["run_type"] == "scheduled", [dict(r) for r in runs]
    # the hour in which the scheduler created it (not the test's start: the two may straddle an hour boundary)
    created = datetime.fromisoformat(runs[0]["queued_at"]).replace(tzinfo=UTC)
    hour = created.replace(minute=0, second=0, microsecond=0)
    assert scheduled.started - timedelta(minutes=1) <= created
    # catchup off: the one run for the latest hour boundary (its start_date is years back), none before it
    first_after = datetime.fromisoformat(runs[0]["run_after"]).replace(tzinfo=UTC)
    assert first_after == hour, (first_after, hour)
    assert all(r["run_type"] == "scheduled" for r in runs)
    assert len(runs) <= 2  # a second one only if the test crossed the next hour
    dag = services.query("select is_paused, next_dagrun_create_after, timetable_summary from dag where dag_id = ?",
                         DAG_ID)[0]
    assert not dag["is_paused"]
    assert dag["timetable_summary"] in ("@hourly", "0 * * * *"), dag["timetable_summary"]
    next_after = datetime.fromisoformat(dag["next_dagrun_create_after"]).replace(tzinfo=UTC)
    assert next_after == hour + timedelta(hours=len(runs)), next_after


def test_the_snapshot_is_mapped_over_the_clusters_and_the_dead_one_is_retried_after_its_delay(scheduled):
    services = scheduled.services
    tis = {r["map_index"]: r for r in services.query(
        "select map_index, rendered_map_index, state, try_number from task_instance"
        " where dag_id = ? and run_id = ? and task_id = 'snapshot'", DAG_ID, scheduled.run_id)}
    assert {i: (t["state"], t["try_number"]) for i, t in tis.items()} == {0: ("success", 1), 1: ("failed", 2)}
    assert (tis[0]["rendered_map_index"], tis[1]["rendered_map_index"]) == ("live", "dead")
    first_try = services.query("select state, end_date from task_instance_history where dag_id = ? and run_id = ?"
                               " and task_id = 'snapshot' and map_index = 1 and try_number = 1",
                               DAG_ID, scheduled.run_id)
    assert len(first_try) == 1 and first_try[0]["state"] in ("failed", "up_for_retry"), [dict(r) for r in first_try]
    second_start = services.query("select start_date from task_instance where dag_id = ? and run_id = ?"
                                  " and task_id = 'snapshot' and map_index = 1", DAG_ID, scheduled.run_id)[0]
    waited = (datetime.fromisoformat(second_start["start_date"])
              - datetime.fromisoformat(first_try[0]["end_date"])).total_seconds()
    assert waited >= RETRY_DELAY_S, waited
    states = {r["task_id"]: r["state"] for r in services.query(
        "select task_id, state from task_instance where dag_id = ? and run_id = ? and task_id != 'snapshot'",
        DAG_ID, scheduled.run_id)}
    assert states == {"clusters": "success", "audit": "success", "gate": "success", "history": "skipped",
                      "summary": "success", "retention": "success", "verdict": "failed"}, states  # no files: no history


def test_the_dead_cluster_alerts_once_after_its_last_try(scheduled):
    failures = [p["json"]["kafka_zk_audit"] for p in scheduled.posts
                if p["json"].get("kafka_zk_audit", {}).get("kind") == "task_failure"]
    assert [(f["task_id"], f["cluster"]) for f in failures] == [("snapshot", "dead")], scheduled.posts
    text = next(p["json"]["text"] for p in scheduled.posts if "kafka_zk_audit" in p["json"])
    assert "dead" in text and "snapshot" in text


def test_the_audits_asset_event_triggers_a_dag_scheduled_on_it(scheduled):
    runs = scheduled.services.query("select run_type, state from dag_run where dag_id = ?", CONSUMER)
    assert [(r["run_type"], r["state"]) for r in runs] == [("asset_triggered", "success")]
    assert [e["uri"].rstrip("/") for e in scheduled.consumer_events] == ["kafka-zk-audit://live"]
    extra = scheduled.consumer_events[0]["extra"]
    summary_path = next(scheduled.warehouse.glob(f"runs/{extra['snapshot_id']}/summary.json"))
    summary = json.loads(summary_path.read_text())
    assert extra["gate_success"] is summary["gate"]["success"] is True
    assert extra["findings"] == sum(summary["checks"].values()), (extra, summary["checks"])


def test_one_active_run_at_a_time(scheduled):
    runs = scheduled.services.query("select start_date, end_date from dag_run where dag_id = ? and start_date"
                                    " is not null order by start_date", DAG_ID)
    for earlier, later in zip(runs, runs[1:], strict=False):
        assert earlier["end_date"] and earlier["end_date"] <= later["start_date"]


def test_two_runs_sharing_a_warehouse_wait_for_each_other_and_both_finish_intact(scheduled):
    assert "waiting for the gate lock" in scheduled.scheduled_gate_log
    assert "waiting for the gate lock" in scheduled.cli_log
    assert scheduled.cli_returncode == 0, scheduled.cli_log[-4000:]
    summaries = {}
    for path in scheduled.warehouse.glob("runs/*/summary.json"):
        summary = json.loads(path.read_text())
        summaries[summary["snapshot_id"]] = summary
    assert len(summaries) == 2, sorted(summaries)
    for snapshot_id, summary in summaries.items():
        manifest = json.loads((scheduled.warehouse / "snapshots" / f"snapshot_id={snapshot_id}"
                               / "_MANIFEST.json").read_text())
        rows = pq.read_table(scheduled.warehouse / "snapshots" / f"snapshot_id={snapshot_id}").num_rows
        assert rows == manifest["znodes"], snapshot_id
        assert summary["gate"]["success"], summary
        # the same healthy cluster read twice: no finding in either, whichever was the other's baseline
        assert not any(summary["checks"].values()), summary["checks"]
        assert summary["baseline_snapshot_id"] in ({None} | set(summaries)) - {snapshot_id}
    index = (scheduled.warehouse / "data_docs" / "index.html").read_text()
    for snapshot_id in summaries:
        assert snapshot_id in index, snapshot_id
