"""The event-driven DAG's audit through a real, long-lived Spark Connect server (``audit.connect.ConnectServer``, one
for the module: it is slow to start), reached through the Spark provider's ``spark_connect`` connection: the task
run in this process (``dag.test()``) writes what the classic session's audit of the same snapshot writes; a server
that does not answer makes it audit with spark-submit; without the setting the DAG keeps spark-submit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from kafka_zk_audit.airflow.dag import build_event_dag
from kafka_zk_audit.airflow.operators.audit_spark_connect import AuditSparkConnectOperator
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.audit.connect import ConnectServer
from kafka_zk_audit.audit.job import run_audit
from kafka_zk_audit.audit.session import C1_ONLY_JAVA_OPTION, CONNECT_MODE_ENV
from kafka_zk_audit.cli.connect_server import warm_up_server
from kafka_zk_audit.cli.main import main as cli
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import free_port
from tests.airflow.dag_runs import run_dag

SPEC = ClusterSpec(era="3.x", brokers=3, racks=3, topics=4, partitions=2, replication_factor=3, groups=1,
                   consumers_per_group=2, threads_per_consumer=1, seed=11)


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """A real Spark Connect server on 127.0.0.1 (``local[2]``), started by ``kafka-zk-audit connect-server start``.
    Its JVM compiles with C1 only, as the audit app's driver does (``C1_ONLY_JAVA_OPTION``, through
    ``JAVA_TOOL_OPTIONS``): it serves this module's two audits, too few for the full tiered JIT of a server that
    serves many (its C2 compilations would take CPU from the audits on two cores)."""
    folder = tmp_path_factory.mktemp("connect-server")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAVA_TOOL_OPTIONS", C1_ONLY_JAVA_OPTION)
        started = cli(["connect-server", "start", "--port", str(free_port()), "--master", "local[2]", "--dir",
                       str(folder)])
    assert started == 0
    server = ConnectServer.recorded(folder)
    assert server is not None and server.is_serving() and server.master == "local[2]"
    yield server
    server.stop()


def event_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zk_hosts: str, connect_port: int | None) -> str:
    """A watched cluster ``ev`` on ``zk_hosts`` and, with ``connect_port``, the Spark Connect connection the event
    DAG's audit runs through; returns the settings file."""
    monkeypatch.setenv("AIRFLOW_CONN_ZK_EV", json.dumps({"conn_type": "zookeeper", "host": zk_hosts.split("/")[0],
                                                         "extra": {"chroot": "/" + zk_hosts.split("/", 1)[1]}}))
    events: dict[str, Any] = {"enabled": True}
    if connect_port is not None:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT_TEST", json.dumps({
            "conn_type": "spark_connect", "host": "127.0.0.1", "port": connect_port}))
        events["spark_connect_conn_id"] = "spark_connect_test"
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump({"schedule": None, "fleet": {"task_retries": 0}, "events": events,
                                        "clusters": [{"name": "ev", "zk_conn_id": "zk_ev"}]}))
    return str(settings)


def written(root: Path, snapshot_id: str) -> dict[str, list[str]]:
    """Every table and the findings the audit wrote for the snapshot: name -> its rows, sorted."""
    folders = [*sorted((root / "tables").iterdir()), root / "findings"]
    return {folder.name: sorted(repr(sorted(row.items())) for row in pq.read_table(
        folder / f"snapshot_id={snapshot_id}").to_pylist()) for folder in folders
        if (folder / f"snapshot_id={snapshot_id}").is_dir()}


def test_the_event_dag_audits_through_the_connect_server_as_the_classic_session_does(
        airflow_db, zk_server, connect_server, spark, tmp_path, monkeypatch, capsys):
    """The event DAG with ``events.spark_connect_conn_id``: its audit task is the Connect one, and run (clusters ->
    snapshot -> audit, in this process) it audits through the server (spark-submit would fail the test), writing the
    same tables and findings as an audit of the same snapshot in the classic session."""
    chroot = zk_server.ensure_chroot("/connect_event")
    with Simulator(hosts=chroot) as simulator:
        simulator.write(SPEC)
        simulator.plant("under_replicated")
    settings = event_settings(tmp_path, monkeypatch, chroot, connect_server.port)

    def no_spark_submit(*_: Any, **__: Any) -> None:
        raise AssertionError("the audit fell back to spark-submit")

    monkeypatch.setattr(SparkSubmitHook, "submit", no_spark_submit)
    dag = build_event_dag(settings).partial_subset(["audit"], include_upstream=True)
    audit = dag.get_task("audit")
    assert isinstance(audit, AuditSparkConnectOperator) and audit.connect_conn_id == "spark_connect_test"
    through = tmp_path / "through-connect"
    outcome = run_dag(dag, conf={"warehouse": str(through), "run_label": "c1"})
    assert outcome.state_of("audit") == "success", outcome.log[-3000:]
    assert "auditing through the Spark Connect server of connection 'spark_connect_test'" in outcome.log
    assert CONNECT_MODE_ENV not in os.environ  # the process builds classic frames again
    snapshot_id = outcome.xcom("snapshot", map_index=0)
    connect_figures = json.loads((through / "runs" / snapshot_id / "audit.json").read_text())
    assert connect_figures["checks"]["under_replicated"] > 0

    classic = tmp_path / "classic"
    classic.mkdir()
    (classic / "snapshots").symlink_to(through / "snapshots")
    classic_figures = run_audit(spark, Warehouse(str(classic)), [snapshot_id], settings)[snapshot_id]
    assert {k: v for k, v in connect_figures.items() if k != "seconds"} == \
        {k: v for k, v in classic_figures.items() if k != "seconds"}
    through_rows, classic_rows = written(through, snapshot_id), written(classic, snapshot_id)
    assert "findings" in through_rows and len(through_rows) > 30
    assert through_rows == classic_rows

    # connect-server start --warm-up --warm-up-rounds 1: one more audit of the newest snapshot through the server
    # (the rounds asked for, not the default 5), the warehouse only read
    files = sorted(str(path) for path in through.rglob("*"))
    capsys.readouterr()
    warm_up_server(connect_server, str(through), 1)
    said = capsys.readouterr().err
    assert "warm-up audit 1 of 1:" in said and said.count("warm-up audit ") == 1, said
    assert f"warmed up with 1 audit(s) of {snapshot_id}" in said, said
    assert sorted(str(path) for path in through.rglob("*")) == files


def test_a_connect_server_that_does_not_answer_makes_the_audit_a_spark_submit(airflow_db, zk_server, tmp_path,
                                                                             monkeypatch):
    """The connection names a port nothing listens on: the task says so, with what to do, and submits the audit app
    (the provider's hook records the command instead of starting its JVM)."""
    chroot = zk_server.ensure_chroot("/connect_fallback")
    with Simulator(hosts=chroot) as simulator:
        simulator.write(SPEC)
    settings = event_settings(tmp_path, monkeypatch, chroot, free_port())
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    submitted: list[list[str]] = []

    def record(hook: SparkSubmitHook, application: str = "", **_: Any) -> None:
        submitted.append(hook._build_spark_submit_command(application))

    monkeypatch.setattr(SparkSubmitHook, "submit", record)
    dag = build_event_dag(settings).partial_subset(["audit"], include_upstream=True)
    outcome = run_dag(dag, conf={"warehouse": str(tmp_path / "wh"), "spark_conn_id": "spark_test",
                                 "run_label": "f1"})
    assert outcome.state_of("audit") == "success"
    assert "does not answer; auditing with spark-submit instead" in outcome.log
    assert "kafka-zk-audit connect-server start" in outcome.log
    [command] = submitted
    assert command[command.index("--snapshot-ids") + 1] == outcome.xcom("snapshot", map_index=0)


def test_without_the_setting_the_event_dag_audits_with_spark_submit(zk_server, tmp_path, monkeypatch):
    settings = event_settings(tmp_path, monkeypatch, zk_server.hosts + "/connect_none", None)
    audit = build_event_dag(settings).get_task("audit")
    assert type(audit) is AuditSparkSubmitOperator


def test_the_command_line_reports_and_stops_the_server(connect_server, capsys):
    """``connect-server status`` and ``stop`` on the module's server, last: it is stopped by its recorded pid."""
    folder = str(connect_server.state_dir)
    assert cli(["connect-server", "status", "--dir", folder]) == 0
    assert f"serving on {connect_server.url}" in capsys.readouterr().out
    assert cli(["connect-server", "stop", "--dir", folder]) == 0
    assert not connect_server.is_serving()
    assert cli(["connect-server", "status", "--dir", folder]) == 1
    assert "not running" in capsys.readouterr().out
