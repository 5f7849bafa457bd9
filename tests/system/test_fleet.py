"""A fleet in one DAG run: three clusters in three chroots of one real ZooKeeper plus one dead address.

Two DAG runs with ``airflow dags test``: the three live clusters are snapshotted by mapped tasks and audited
in one Spark app, each with its own findings, baseline and Data Docs entries; the dead one fails its own
snapshot task and alerts on its own; between the runs one cluster loses most of its topics, and the drift
suite fires for it alone; after the second run retention prunes the first run's raw snapshots and keeps
every cluster's baseline.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from kazoo.client import KazooClient

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit_testing.receivers import WebhookReceiver, webhook_receiver
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import free_port

pytestmark = pytest.mark.dag

LIVE = ("alpha", "bravo", "charlie")
DEAD = "delta"
SPEC = ClusterSpec(era="3.x", brokers=3, racks=1, topics=6, partitions=2, replication_factor=3, groups=1,
                   consumers_per_group=1, threads_per_consumer=1, topics_per_group=1)


@dataclass
class FleetRun:
    returncode: int
    fleet: dict
    log: str
    posts: list[dict]


def settings_file(tmp: Path) -> Path:
    clusters = [{"name": name, "zk_conn_id": f"zk_{name}"} for name in (*LIVE, DEAD)]
    clusters[0]["overrides"] = {"alerts": {"webhook_conn_id": "hook_alpha"}}
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump({
        "schedule": None,
        "clusters": clusters,
        "fleet": {"max_parallel_snapshots": 2, "task_retries": 0},
        "alerts": {"webhook_conn_id": "hook_fleet"},
        "retention": {"keep_snapshots": 1, "keep_snapshots_for": "0s", "keep_findings_for": "90d"},
    }, sort_keys=False))
    return path


def connections(zk_hosts: str, webhook: WebhookReceiver) -> dict[str, str]:
    env = {f"AIRFLOW_CONN_ZK_{name.upper()}": json.dumps(
        {"conn_type": "zookeeper", "host": zk_hosts, "extra": {"chroot": f"/fleet_{name}"}}) for name in LIVE}
    env[f"AIRFLOW_CONN_ZK_{DEAD.upper()}"] = json.dumps(
        {"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}", "extra": {"timeout": 3}})
    env["AIRFLOW_CONN_HOOK_FLEET"] = json.dumps({"conn_type": "http", "host": webhook.url("/hook/fleet")})
    env["AIRFLOW_CONN_HOOK_ALPHA"] = json.dumps({"conn_type": "http", "host": webhook.url("/hook/alpha")})
    return env


@dataclass
class Fleet:
    warehouse: Path
    runs: list[FleetRun]
    dropped_topics: list[str]


@pytest.fixture(scope="module")
def fleet(zk_server, tmp_path_factory) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("fleet")
    warehouse = tmp / "wh"
    settings = settings_file(tmp)
    env = airflow_env(airflow_home=tmp / "airflow",
                      base={k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")})
    env["KAFKA_ZK_AUDIT_CONFIG"] = str(settings)
    ensure_metadata_db(env)
    admin = KazooClient(hosts=zk_server.hosts)
    admin.start(timeout=15)
    sims = {name: Simulator(hosts=f"{zk_server.hosts}/fleet_{name}") for name in LIVE}
    runs: list[FleetRun] = []
    try:
        for name in LIVE:
            admin.ensure_path(f"/fleet_{name}")
        with webhook_receiver() as webhook:
            env.update(connections(zk_server.hosts, webhook))
            for sim in sims.values():
                sim.write(SPEC)
            sims["bravo"].plant("leader_not_in_isr")

            def run(label: str) -> None:
                posted = len(webhook.posts)
                result = run_dag_once(env, {"warehouse": str(warehouse), "run_label": label},
                                      warehouse / f"{label}.log")
                found = list(warehouse.glob(f"runs/fleet-*-{label}/fleet.json"))
                log = result.log_path.read_text()
                assert found, f"no fleet summary; log tail:\n{log[-5000:]}"
                runs.append(FleetRun(result.returncode, json.loads(found[0].read_text()), log,
                                     webhook.posts[posted:]))

            run("first")
            # charlie loses 4 of its 6 topics (and their partitions) between the runs
            topics = sorted(admin.get_children("/fleet_charlie/brokers/topics"))
            dropped = [t for t in topics if not t.startswith("__")][:4]
            for topic in dropped:
                admin.delete(f"/fleet_charlie/brokers/topics/{topic}", recursive=True)
            run("second")
    finally:
        for sim in sims.values():
            sim.close()
        admin.stop()
        admin.close()
    yield Fleet(warehouse, runs, dropped)


def findings_of(warehouse: Path, snapshot_id: str) -> list[dict]:
    return pq.read_table(warehouse / "findings" / f"snapshot_id={snapshot_id}").to_pylist()


def test_each_live_cluster_is_audited_in_one_spark_app_with_its_own_findings(fleet):
    first = fleet.runs[0]
    clusters = first.fleet["clusters"]
    assert set(clusters) == {*LIVE, DEAD}
    assert first.fleet["red"] == ["bravo"] and first.fleet["green"] == ["alpha", "charlie"]
    assert first.fleet["not_audited"] == [DEAD]
    assert first.returncode != 0
    assert first.log.count("Spark-Submit cmd:") == 1
    ids = {name: clusters[name]["snapshot_id"] for name in LIVE}
    submit = next(line for line in first.log.splitlines() if "Spark-Submit cmd:" in line)
    assert all(sid in submit for sid in ids.values()), submit
    for name, sid in ids.items():
        # the first run's raw snapshots are pruned by the second run (see the retention test): read the second's
        kept = fleet.runs[1].fleet["clusters"][name]["snapshot_id"]
        manifest = json.loads((fleet.warehouse / "snapshots" / f"snapshot_id={kept}" / "_MANIFEST.json").read_text())
        assert manifest["cluster"] == name and manifest["chroot"] == f"/fleet_{name}"
        checks = {f["check_id"] for f in findings_of(fleet.warehouse, sid)}
        if name == "bravo":
            assert "leader_not_in_isr" in checks
        else:
            assert not checks & {"leader_not_in_isr", "under_replicated"}, (name, checks)


def test_the_dead_cluster_alerts_on_its_own(fleet):
    first = fleet.runs[0]
    failures = [p["json"]["kafka_zk_audit"] for p in first.posts
                if p["json"].get("kafka_zk_audit", {}).get("kind") == "task_failure"]
    assert [(f["task_id"], f["cluster"]) for f in failures] == [("snapshot", DEAD)], failures
    assert "could NOT complete" in first.posts[0]["json"]["text"] or any(
        "could NOT complete" in p["json"]["text"] for p in first.posts)
    assert first.fleet["clusters"][DEAD]["status"] == "not audited"
    # the gate alert goes to the red cluster only, through the fleet's route
    gate_alerts = [p for p in first.posts if p["json"].get("kafka_zk_audit", {}).get("kind") != "task_failure"]
    assert gate_alerts and all("bravo" in json.dumps(p["json"]) for p in gate_alerts)
    assert all(p["path"] == "/hook/fleet" for p in gate_alerts)


def test_baselines_are_per_cluster_and_drift_fires_for_the_cluster_that_lost_topics(fleet):
    first, second = fleet.runs
    for name in LIVE:
        snapshot_id = second.fleet["clusters"][name]["snapshot_id"]
        audit = json.loads((fleet.warehouse / "runs" / snapshot_id / "audit.json").read_text())
        assert audit["baseline_snapshot_id"] == first.fleet["clusters"][name]["snapshot_id"], name
    assert second.fleet["red"] == ["bravo", "charlie"]
    charlie = json.loads(Path(second.fleet["clusters"]["charlie"]["summary"]).read_text())
    assert charlie["gate"]["failed_expectations"] >= 1
    log = second.log
    assert ("[charlie] error expectation failed (gating): drift: "
            "expect_column_pair_values_a_to_be_greater_than_b(topics), 1 unexpected rows") in log, log[-3000:]
    assert "[alpha] error expectation failed (gating): drift" not in log


def test_data_docs_show_each_suite_once_per_run_with_the_cluster_of_every_unexpected_row(fleet):
    docs = fleet.warehouse / "data_docs"
    index = (docs / "index.html").read_text()
    assert "audit_partitions" in index and "drift" in index
    for suite in ("partitions", "drift"):
        pages = sorted((docs / "validations" / suite).rglob("*.html"))
        assert len(pages) == len(fleet.runs), suite  # one validation per run for all the clusters
    drift = sorted((docs / "validations" / "drift").rglob("*.html"))[-1].read_text()
    assert "charlie" in drift and "bravo" not in drift  # the one row that dropped topics (the run is named by alpha's)


def test_retention_prunes_the_first_run_and_keeps_the_baselines(fleet):
    first, second = fleet.runs
    for name in LIVE:
        old, new = first.fleet["clusters"][name]["snapshot_id"], second.fleet["clusters"][name]["snapshot_id"]
        assert not (fleet.warehouse / "snapshots" / f"snapshot_id={old}").exists(), name
        assert not (fleet.warehouse / "tables" / "partitions" / f"snapshot_id={old}").exists(), name
        assert (fleet.warehouse / "findings" / f"snapshot_id={old}").exists(), name  # findings outlive data
        assert (fleet.warehouse / "snapshots" / f"snapshot_id={new}" / "_MANIFEST.json").exists(), name


def test_each_audited_cluster_publishes_an_asset_event_with_its_counts(fleet):
    import sqlite3

    db = sqlite3.connect(fleet.warehouse.parent / "airflow" / "airflow.db")
    events = [(uri, json.loads(extra)) for uri, extra in db.execute(
        "select a.uri, e.extra from asset_event e join asset a on a.id = e.asset_id order by e.id")]
    db.close()
    assert [uri.rstrip("/") for uri, _ in events] == [f"kafka-zk-audit://{n}" for n in sorted(LIVE)] * 2
    by_snapshot = {extra["snapshot_id"]: extra for _, extra in events}
    for run in fleet.runs:
        for name in LIVE:
            extra = by_snapshot[run.fleet["clusters"][name]["snapshot_id"]]
            assert extra["gate_success"] is (run.fleet["clusters"][name]["status"] == "green"), (name, extra)
            assert extra["findings"] == run.fleet["clusters"][name]["findings"]
    assert by_snapshot[fleet.runs[0].fleet["clusters"]["bravo"]["snapshot_id"]]["checks"]["leader_not_in_isr"] == 1
