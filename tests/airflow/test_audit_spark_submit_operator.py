"""The audit task of the DAG as ``build_dag`` wires it: clusters -> snapshot (mapped) -> audit, run in this process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from kazoo.client import KazooClient

from kafka_zk_audit.airflow.dag import build_dag, spark_app_path
from kafka_zk_audit.airflow.operators import audit_spark_submit
from kafka_zk_audit.airflow.operators.audit_gate import GATE_IMPORTS
from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS, class_data_archive
from tests.airflow.dag_runs import run_dag


def write_znodes(hosts: str, chroot: str, broker_id: int) -> None:
    client = KazooClient(hosts=hosts + chroot)
    client.start(timeout=15)
    try:
        client.create(f"/brokers/ids/{broker_id}", b'{"host": "b", "port": 9092}', makepath=True)
    finally:
        client.stop()
        client.close()


def test_the_audit_submits_the_packaged_app_for_the_snapshots_the_run_took(airflow_db, zk_server, tmp_path,
                                                                           monkeypatch):
    """Three clusters, one of which has no files to read: the audit is submitted once, with the two snapshot ids the
    snapshot tasks pushed as one ``--snapshot-ids`` argument, on the Spark connection the run's param names.

    The run stops at the Spark provider's hook: ``SparkSubmitHook.submit`` records the command line the hook builds
    (``_build_spark_submit_command``, the provider's own) instead of starting spark-submit and its JVM."""
    for cluster, broker_id in (("eu", 1), ("us", 2)):
        zk_server.ensure_chroot(f"/airflow_audit_{cluster}")
        write_znodes(zk_server.hosts, f"/airflow_audit_{cluster}", broker_id)
        monkeypatch.setenv(f"AIRFLOW_CONN_ZK_{cluster.upper()}", json.dumps({
            "conn_type": "zookeeper", "host": zk_server.hosts, "extra": {"chroot": f"/airflow_audit_{cluster}"}}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("KAFKA_ZK_AUDIT_JVM_CACHE", str(tmp_path / "jvm"))  # no class-data archive yet
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump({
        "schedule": None, "fleet": {"task_retries": 0},
        "clusters": [{"name": "eu", "zk_conn_id": "zk_eu"}, {"name": "us", "zk_conn_id": "zk_us"},
                     {"name": "dr", "files": {"data_dir": str(tmp_path / "no-such-dir")}}],
    }))
    submitted: list[list[str]] = []

    def record(hook: SparkSubmitHook, application: str = "", **_: Any) -> None:
        submitted.append(hook._build_spark_submit_command(application))

    monkeypatch.setattr(SparkSubmitHook, "submit", record)
    warmed: list[tuple[str, ...]] = []  # when every task runs in one process, the gate's imports load meanwhile
    monkeypatch.setattr(audit_spark_submit, "warm_imports", warmed.append)
    dag = build_dag(str(settings)).partial_subset(["audit"], include_upstream=True)
    assert sorted(dag.task_dict) == ["audit", "clusters", "snapshot"]
    warehouse = tmp_path / "warehouse"
    outcome = run_dag(dag, conf={"warehouse": str(warehouse), "spark_conn_id": "spark_test", "run_label": "t1",
                                 "target_version": "3.9"})
    assert [outcome.state_of("snapshot", i) for i in range(3)] == ["success", "success", "failed"]
    assert outcome.state_of("audit") == "success"
    ids = [outcome.xcom("snapshot", map_index=i) for i in range(2)]
    assert [i.rsplit("-", 2)[1:] for i in ids] == [["eu", "t1"], ["us", "t1"]]
    [command] = submitted
    conf = [command[i + 1] for i, part in enumerate(command) if part == "--conf"]
    assert command[:3] == ["spark-submit", "--master", "local[2]"]
    assert "spark.ui.enabled=false" in conf
    [java_options] = [c.split("=", 1)[1] for c in conf if c.startswith("spark.driver.extraJavaOptions=")]
    # the first launch of the machine writes the driver's class-data archive as its JVM exits; none was written here
    archive = class_data_archive()
    assert java_options.startswith(f"{DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={archive}.")
    assert list((tmp_path / "jvm").iterdir()) == []
    assert command[command.index("--name") + 1] == "kafka-zk-audit"
    app = command.index(spark_app_path())
    assert Path(command[app]).is_file()
    assert command[app + 1:] == ["--warehouse", str(warehouse), "--snapshot-ids", ",".join(ids),
                                 "--config", str(settings), "--target-version", "3.9"]
    assert warmed == [GATE_IMPORTS] and GATE_IMPORTS == ("great_expectations", "kafka_zk_audit.gate.run")



def test_a_large_batch_s_driver_keeps_the_tiered_jit_and_a_small_one_runs_c1_only(tmp_path: Path) -> None:
    from kafka_zk_audit.airflow.operators.audit_spark_submit import audited_znodes
    from kafka_zk_audit.audit.session import (
        DRIVER_JAVA_OPTIONS_KEY,
        LONG_LIVED_DRIVER_JAVA_OPTIONS,
        SMALL_SNAPSHOT_ZNODES,
        sized_conf,
        submit_conf,
    )
    from kafka_zk_audit.contract.warehouse import Warehouse

    warehouse = Warehouse(str(tmp_path / "wh"))
    sizes = {"20261129T000000Z-a": 150_000, "20261129T000001Z-b": 60_000, "20261129T000002Z-c": 900}
    for sid, znodes in sizes.items():
        warehouse.write_json(warehouse.manifest_path(sid), {"snapshot_id": sid, "znodes": znodes})
    args = ["--warehouse", warehouse.root, "--snapshot-ids", "20261129T000000Z-a,20261129T000001Z-b",
            "--config", "", "--target-version", ""]
    assert audited_znodes(args) == 210_000 >= SMALL_SNAPSHOT_ZNODES
    assert audited_znodes(["--warehouse", warehouse.root, "--snapshot-ids", "20261129T000002Z-c,gone"]) == 900
    assert audited_znodes(["--files", "/x"]) == 0  # not an audit app's arguments
    large, small = sized_conf(submit_conf(), audited_znodes(args)), sized_conf(submit_conf(), 900)
    assert large[DRIVER_JAVA_OPTIONS_KEY] == LONG_LIVED_DRIVER_JAVA_OPTIONS
    assert "TieredStopAtLevel=1" not in large[DRIVER_JAVA_OPTIONS_KEY]
    assert small == submit_conf() and small[DRIVER_JAVA_OPTIONS_KEY] == DRIVER_JAVA_OPTIONS
    assert submit_conf(210_000) == large
    custom = {DRIVER_JAVA_OPTIONS_KEY: "-Xss4m"}  # a user's own driver options stay
    assert sized_conf(custom, 10**6) == custom
