"""The whole DAG, end to end, with ``airflow dags test`` on a SQLite metadata DB.

Real parts only: the session's ZooKeeper, the simulator writing a Kafka cluster in Kafka's
encodings, spark-submit (local), Great Expectations with Data Docs, Airflow 3. Each run plants
many problems at once on distinct subjects instead of one run per problem.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.catalogue import BY_ID, CHECK_IDS
from kafka_zk_audit.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit.simulator import ClusterSpec, Simulator

pytestmark = pytest.mark.dag

# Planted together in one run (distinct subjects). The /controller plants exclude each other:
# controller_session_mismatch runs here, controller_not_alive in the history run, and
# controller_missing in the CLI run.
PLANTED_TOGETHER = tuple(
    c for c in CHECK_IDS
    if not BY_ID[c].history and c not in {"controller_missing", "controller_not_alive"}
)
SPEC = ClusterSpec(era="3.x", brokers=4, racks=2, topics=4, partitions=4, replication_factor=3,
                   groups=2, consumers_per_group=2, threads_per_consumer=2, seed=11)
TEST_CONFIG = """
sla:
  delete_topic: 0s
  reassignment: 0s
  preferred_election: 0s
"""


@pytest.fixture(scope="session")
def airflow_session(tmp_path_factory) -> dict[str, str]:
    """An Airflow home with a migrated SQLite DB, shared by every DAG run of the session."""
    home = tmp_path_factory.mktemp("airflow")
    env = airflow_env(airflow_home=home, base={k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")})
    ensure_metadata_db(env)
    return env


@pytest.fixture
def audit_config(tmp_path) -> str:
    path = tmp_path / "audit.yaml"
    path.write_text(TEST_CONFIG)
    return str(path)


def run_audit_dag(env: dict[str, str], zk_hosts: str, chroot: str, warehouse: Path, config: str | None,
                  label: str) -> tuple[int, dict, list[dict]]:
    env = dict(env)
    env["AIRFLOW_CONN_ZOOKEEPER_DEFAULT"] = json.dumps(
        {"conn_type": "zookeeper", "host": zk_hosts, "extra": {"chroot": chroot}}
    )
    conf = {"warehouse": str(warehouse), "audit_config": config, "run_label": label}
    result = run_dag_once(env, conf, warehouse / f"{label}.log")
    summaries = list(warehouse.glob(f"runs/*-{label}/summary.json"))
    assert summaries, f"no summary; log tail:\n{result.log_path.read_text()[-4000:]}"
    summary = json.loads(summaries[0].read_text())
    findings = pq.read_table(warehouse / "findings" / f"snapshot_id={summary['snapshot_id']}").to_pylist()
    return result.returncode, summary, findings


def subjects(findings: list[dict], check_id: str) -> list[tuple]:
    return [(f["topic"], f["partition"], f["group_id"], f["broker_id"], f["path"])
            for f in findings if f["check_id"] == check_id]


def assert_planted_found(planted, findings: list[dict], earlier=()) -> None:
    """Each plant is reported on its subject; nothing is reported that no plant (or earlier plant) explains."""
    expected_ids = {c for p in earlier for c in (p.check_id, *p.implied)}
    for plant in planted:
        found = [f for f in findings if f["check_id"] == plant.check_id]
        match = [f for f in found if f["path"] == plant.path
                 and (plant.topic is None or f["topic"] == plant.topic)
                 and (plant.group_id is None or f["group_id"] == plant.group_id)]
        assert match, f"{plant.check_id} not reported on {plant}; got {found}"
        expected_ids |= {plant.check_id, *plant.implied}
    planted_subjects = {
        s for p in (*planted, *earlier) for s in (p.topic, p.group_id, p.broker_id, p.path) if s is not None
    }
    for f in findings:
        if f["check_id"] in expected_ids:
            continue
        touches = {f["topic"], f["group_id"], f["broker_id"], f["path"]} & planted_subjects
        assert touches, f"unexpected finding on an unplanted subject: {f}"


def test_dag_folder_imports_without_errors(airflow_session):
    code = (
        "from airflow.dag_processing.dagbag import DagBag; import sys; "
        f"b = DagBag(dag_folder={airflow_session['AIRFLOW__CORE__DAGS_FOLDER']!r}); "
        "print(b.import_errors); sys.exit(1 if b.import_errors or 'kafka_zk_audit' not in b.dags else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=airflow_session, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_clean_cluster_passes_the_gate(airflow_session, zk_server, zk_chroot, tmp_path, audit_config):
    sim = Simulator(hosts=zk_server.hosts + zk_chroot)
    try:
        sim.write(SPEC)
        code, summary, findings = run_audit_dag(airflow_session, zk_server.hosts, zk_chroot, tmp_path / "wh",
                                                audit_config, "clean")
    finally:
        sim.close()
    bad = [f for f in findings if f["severity"] in ("error", "critical")]
    assert bad == [], bad
    assert summary["gate"]["success"] is True and code == 0
    assert set(summary["checks"]) == set(CHECK_IDS)
    assert summary["baseline_snapshot_id"] is None
    assert (tmp_path / "wh" / "data_docs" / "index.html").exists()


def test_planted_problems_then_history(airflow_session, zk_server, zk_chroot, zk_client, tmp_path, audit_config):
    warehouse = tmp_path / "wh"
    sim = Simulator(hosts=zk_server.hosts + zk_chroot)
    try:
        sim.write(SPEC)
        planted = [sim.plant(check_id) for check_id in PLANTED_TOGETHER]
        code, summary, findings = run_audit_dag(airflow_session, zk_server.hosts, zk_chroot, warehouse,
                                                audit_config, "planted")
        assert code != 0 and summary["gate"]["success"] is False
        assert_planted_found(planted, findings)
        for plant in planted:
            assert summary["checks"][plant.check_id] >= 1
        assert {f["status"] for f in findings} == {"new"}
        assert summary["new_findings"] == len(findings) and summary["resolved_findings"] == 0
        docs = (warehouse / "data_docs" / "index.html").read_text()
        assert "partitions" in docs

        # Between the runs: time passes, epochs and an offset go back, one problem is fixed.
        sim.advance(steps=1)
        history = [sim.plant(c) for c in ("leader_epoch_regressed", "controller_epoch_regressed",
                                          "offset_regressed", "controller_not_alive")]
        fixed = next(p for p in planted if p.check_id == "delete_marker_orphaned")
        zk_client.delete(fixed.path)
        code2, summary2, findings2 = run_audit_dag(airflow_session, zk_server.hosts, zk_chroot, warehouse,
                                                   audit_config, "history")
    finally:
        sim.close()
    assert code2 != 0
    assert summary2["baseline_snapshot_id"] == summary["snapshot_id"]
    assert_planted_found(history, findings2, earlier=planted)
    by_id = {f["check_id"]: f for f in findings2}
    assert by_id["leader_not_in_isr"]["status"] == "ongoing"
    assert by_id["leader_not_in_isr"]["first_seen"] == summary["snapshot_id"]
    for plant in history:
        assert by_id[plant.check_id]["status"] == "new"
    assert "delete_marker_orphaned" not in by_id
    assert summary2["resolved_findings"] >= 1
