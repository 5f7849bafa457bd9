"""The gate task and its alert, run in this process on a real audit: the GX checkpoint, the verdict, the failure.

The audit is run 1 of the shared system run (tests/system/fleet_run.py), copied: ``green`` is its clean cluster
alpha, ``red`` its cluster bravo, whose partition has a leader outside its ISR (a gating ``error``). A third
snapshot (``late``) is taken of alpha's tree and never audited. The DAG run gets the ids from a mapped snapshot task
as a list XCom, as the audit DAG does.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from airflow.sdk import DAG, task

from kafka_zk_audit.airflow.notifications.audit_alert import AuditAlertNotifier
from kafka_zk_audit.airflow.notifications.task_failure import TaskFailureNotifier
from kafka_zk_audit.airflow.operators.audit_gate import AuditGateOperator
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.publish import publish_run, run_failure
from kafka_zk_audit_testing.receivers import smtp_receiver, webhook_receiver
from tests.airflow.dag_runs import ALERT_ROUTES, DagRunOutcome, route_alerts, run_dag
from tests.audit.checks.test_checks import take_snapshot
from tests.system.fleet_run import CHROOTS

pytestmark = pytest.mark.zk

START = datetime(2026, 1, 1, tzinfo=UTC)
IDS: dict[str, str] = {}  # green, red and late: their snapshot ids, set by the ``audited`` fixture
CLUSTERS = {"green": "alpha", "red": "bravo"}
SMTP_PASSWORD = "smtp-secret"
RECIPIENT = ALERT_ROUTES["email_to"][0]


@pytest.fixture(scope="module")
def audited(system, zk_server, tmp_path_factory) -> Warehouse:
    """The warehouse: ``green`` and ``red`` audited, ``late`` snapshotted only."""
    root = tmp_path_factory.mktemp("gate_operator") / "warehouse"
    shutil.copytree(system.after_first, root)
    # as before run 1's alerts: its summary task sent them and recorded it (the cluster's alert state, each
    # snapshot's alerts.json), and the same snapshot's findings alert once
    shutil.rmtree(root / "alerts")
    for sent in root.glob("runs/*/alerts.json"):
        sent.unlink()
    warehouse = Warehouse(str(root))
    first = system.runs[0]
    IDS.update({role: first.snapshot_id(cluster) for role, cluster in CLUSTERS.items()})
    IDS["late"] = "20260301T000000Z-late"
    take_snapshot(zk_server.hosts, CHROOTS["alpha"], warehouse, IDS["late"], cluster="late")
    return warehouse


def gate_dag(dag_id: str, clusters: list[str], settings: Path, warehouse: Warehouse) -> DAG:
    """A mapped snapshot task pushing each cluster's id (``gone`` fails, as a cluster that could not be read), and
    the gate over its output, with the DAG's alerts as failure callbacks."""
    params = {"warehouse": warehouse.root, "audit_config": str(settings)}
    with DAG(dag_id, schedule=None, start_date=START, params=params) as dag:
        @task
        def take(cluster: str) -> str:
            if cluster not in IDS:
                raise RuntimeError(f"cannot reach cluster {cluster}")
            return IDS[cluster]

        ids = take.expand(cluster=clusters)
        AuditGateOperator(
            task_id="gate", trigger_rule="all_done", warehouse="{{ params.warehouse }}", snapshot_ids=ids,
            audit_config="{{ params.audit_config }}",
            on_failure_callback=[
                AuditAlertNotifier(warehouse="{{ params.warehouse }}", snapshot_id=ids,
                                   audit_config="{{ params.audit_config }}"),
                TaskFailureNotifier(audit_config="{{ params.audit_config }}"),
            ],
        )
    return dag


@pytest.fixture(scope="module")
def gate_runs(airflow_db, audited, tmp_path_factory) -> Iterator[dict[str, Any]]:
    """Three DAG runs: the fleet (green, red, late and a cluster that failed), green alone, late alone."""
    settings = tmp_path_factory.mktemp("gate_settings") / "settings.yaml"
    settings.write_text(yaml.safe_dump({"alerts": ALERT_ROUTES}))
    with smtp_receiver(SMTP_PASSWORD) as (smtp_port, inbox), webhook_receiver() as webhook, \
            pytest.MonkeyPatch.context() as patch:
        route_alerts(patch, smtp_port, SMTP_PASSWORD, webhook)
        fleet = run_dag(gate_dag("gate_fleet", ["green", "red", "late", "gone"], settings, audited))
        fleet_alerts = {"inbox": inbox.messages(), "webhook": list(webhook.posts)}
        green = run_dag(gate_dag("gate_green", ["green"], settings, audited))
        late = run_dag(gate_dag("gate_late", ["late", "gone"], settings, audited))
        yield {"fleet": fleet, "green": green, "late": late, **fleet_alerts,
               "later_inbox": inbox.messages()[len(fleet_alerts["inbox"]):]}


def test_a_red_cluster_fails_the_gate_with_the_fleet_verdict_in_xcom(gate_runs, audited):
    fleet: DagRunOutcome = gate_runs["fleet"]
    assert [fleet.state_of("take", i) for i in range(4)] == ["success", "success", "success", "failed"]
    assert fleet.state_of("gate") == "failed"
    verdict = fleet.xcom("gate", "verdict")
    assert set(verdict["snapshots"]) == {IDS["green"], IDS["red"]}  # late was not audited: not validated
    assert verdict["snapshots"][IDS["green"]]["success"] is True
    assert verdict["snapshots"][IDS["red"]]["success"] is False and verdict["success"] is False
    gating = [f for f in verdict["failed"] if f["gating"]]
    assert gating and {f["cluster"] for f in gating} == {"bravo"}
    assert {f["check_id"] for f in gating} == {"leader_not_in_isr"}
    assert verdict["data_docs"] == audited.data_docs_index and Path(audited.data_docs_index).is_file()
    assert fleet.xcom("gate") is None  # a failed gate returns nothing: its verdict is the XCom "verdict"
    assert f"not validated (their audit did not complete): {IDS['late']}" in fleet.log
    assert "[bravo] error expectation failed (gating): partitions: leader_not_in_isr" in fleet.log
    assert f"Data Docs: {audited.data_docs_index}" in fleet.log
    assert "AuditGateFailed: audit gate failed for bravo (1): 1 expectation(s) of a gating severity failed" in fleet.log


def test_the_gate_alert_goes_out_for_the_red_cluster_only(gate_runs):
    """AuditAlertNotifier (the gate's failure callback) gets the run's ids as the list XCom of the snapshot task;
    TaskFailureNotifier leaves a failed gate to it: one e-mail and one webhook POST, for red."""
    [message] = gate_runs["inbox"]
    assert message["To"] == RECIPIENT and IDS["red"] in message["Subject"]
    assert "leader_not_in_isr" in message.get_body(("html",)).get_content()
    [post] = gate_runs["webhook"]
    assert post["path"] == "/hook/alerts" and IDS["red"] in json.dumps(post["json"])
    assert IDS["green"] not in message["Subject"] + json.dumps(post["json"])


def test_a_green_run_passes_and_a_run_without_an_audit_is_skipped(gate_runs):
    green: DagRunOutcome = gate_runs["green"]
    assert green.state_of("gate") == "success"
    verdict = green.xcom("gate", "verdict")
    assert verdict["success"] is True and list(verdict["snapshots"]) == [IDS["green"]]
    assert green.xcom("gate") == verdict  # returned as well
    late: DagRunOutcome = gate_runs["late"]
    assert late.state_of("gate") == "skipped" and late.xcom("gate", "verdict") is None
    assert "no audited snapshot to validate; see the snapshot and audit tasks" in late.log
    assert gate_runs["later_inbox"] == []  # neither run alerted


def test_the_summary_publishes_the_gated_run_and_the_verdict_task_names_the_red_clusters(gate_runs, audited):
    """The functions the DAG's summary and verdict tasks call, on the fleet run's warehouse and verdict."""
    lines: list[str] = []
    published = publish_run(audited, ["alpha", "bravo", "gone"], [IDS["green"], IDS["red"]],
                            gate_runs["fleet"].xcom("gate", "verdict"), None, run_id="manual__1", emit=lines.append)
    result = published.result
    assert (result["green"], result["red"], result["not_audited"]) == (["alpha"], ["bravo"], ["gone"])
    assert set(published.asset_extras) == {"alpha", "bravo"}
    assert published.asset_extras["bravo"]["gate_success"] is False
    assert published.asset_extras["bravo"]["checks"].get("leader_not_in_isr", 0) >= 1
    assert result["run_id"] == "manual__1" and result["histories"] == {} and "text" not in result
    assert lines[0].startswith("fleet: 3 cluster(s); red 1, not audited 1, green 1")
    assert lines[1].startswith("fleet summary: ") and lines[1].endswith("/fleet.json")
    assert run_failure(result) == "the gate failed for bravo; not audited: gone"
    assert run_failure(None) == "no summary was written; see the failed tasks' logs"
