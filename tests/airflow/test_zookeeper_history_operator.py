"""The history task: its window (from the cluster's previous history on), when it skips, the files it fetches, and
``execute`` in a DAG run."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_zookeeper_files
from kafka_zk_audit.airflow.operators.zookeeper_history import ZooKeeperHistoryOperator, history_app_path
from kafka_zk_audit.audit.session import submit_conf
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.history.task import next_history_zxid, previous_history
from tests.airflow.dag_runs import run_dag


def write_history(warehouse: Path, history_id: str, cluster: str | None, last_zxid: int | None) -> None:
    """A finished history as the app leaves it: its folder, with history.json last."""
    folder = warehouse / "history" / history_id
    (folder / "intervals").mkdir(parents=True)
    (folder / "history.json").write_text(json.dumps({"history_id": history_id, "cluster": cluster,
                                                     "last_zxid": last_zxid}))


def test_the_first_history_of_a_cluster_reads_every_log(tmp_path):
    assert next_history_zxid(Warehouse(str(tmp_path)), "eu") is None
    write_history(tmp_path, "20261101T000000Z-0000aaaa", "us", 500)
    assert next_history_zxid(Warehouse(str(tmp_path)), "eu") is None  # another cluster's history is not eu's


def test_the_next_window_starts_after_the_newest_history_of_the_same_cluster(tmp_path):
    warehouse = Warehouse(str(tmp_path))
    write_history(tmp_path, "20261102T000000Z-0000bbbb", "eu", 0x2_0000_00fa)  # written first, but the newer id
    write_history(tmp_path, "20261101T000000Z-0000aaaa", "eu", 100)
    write_history(tmp_path, "20261103T000000Z-0000cccc", "us", 999)  # newer, another cluster
    write_history(tmp_path, "20261104T000000Z-0000dddd", "eu", None)  # newer, but read no transaction
    (tmp_path / "history" / "20261105T000000Z-0000eeee" / "changes").mkdir(parents=True)  # unfinished: no summary
    broken = tmp_path / "history" / "20261106T000000Z-0000ffff"
    broken.mkdir()
    (broken / "history.json").write_text('{"cluster": "eu", "last_')  # cut short
    assert previous_history(warehouse, "eu")["history_id"] == "20261102T000000Z-0000bbbb"
    assert next_history_zxid(warehouse, "eu") == 0x2_0000_00fb
    assert next_history_zxid(warehouse, "us") == 1000


@pytest.mark.parametrize(
    ("kwargs", "settings", "reason"),
    [
        ({"files": None}, "", "cluster dr has no files setting"),
        ({"files": {"data_dir": "/var/lib/zookeeper"}}, "history: {enabled: false}\n",
         "the setting history.enabled is false"),
        ({"files": {"data_dir": "/var/lib/zookeeper"}, "at_zxid": "0x1f"}, "", "at a past point in time"),
        ({"files": {"data_dir": "/var/lib/zookeeper"}, "at_time": "2026-11-01T00:00:00Z"}, "",
         "at a past point in time"),
    ],
)
def test_it_skips_without_files_when_disabled_and_for_a_run_in_the_past(tmp_path, kwargs, settings, reason):
    config = tmp_path / "settings.yaml"
    config.write_text(settings)
    operator = ZooKeeperHistoryOperator(task_id="history", cluster="dr", warehouse=str(tmp_path / "wh"),
                                        audit_config=str(config), **kwargs)
    with pytest.raises(AirflowSkipException, match=reason):
        operator.execute({})
    assert not (tmp_path / "wh" / "history").exists()


def test_it_submits_the_packaged_history_app_without_spark_files(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    operator = ZooKeeperHistoryOperator(task_id="history", spark_conn_id="spark_cluster",
                                        files={"data_dir": "/var/lib/zookeeper", "log_dir": None, "sftp_conn_id": None})
    assert operator.application == history_app_path() and Path(history_app_path()).is_file()
    assert {"warehouse", "cluster", "zk_conn_id", "spark_conn_id", "application_args"} <= set(operator.template_fields)
    operator._conn_id = operator.spark_conn_id
    operator.application_args = ["--warehouse", "/wh", "--files", "/var/lib/zookeeper"]
    command = operator._get_hook()._build_spark_submit_command(operator.application)
    assert command[:3] == ["spark-submit", "--master", "local[2]"] and command[-1] == "/var/lib/zookeeper"
    assert command.count("--files") == 1 and all(isinstance(part, str) for part in command)  # the app's, not Spark's


def zxids(names: list[str], kind: str) -> list[int]:
    return sorted(int(name.split(".")[1], 16) for name in names if name.startswith(f"{kind}."))


def test_a_window_fetches_the_snapshot_before_it_and_every_log_after(zookeeper_data):
    """Over fsspec (a file:// URL is fetched like any remote store): the snapshot task's fetch at a zxid stops at
    it, the history's goes on to the newest log."""
    held = sorted(path.name for path in (zookeeper_data / "version-2").iterdir())
    snapshots, logs = zxids(held, "snapshot"), zxids(held, "log")
    # the previous history ended at the newest snapshot that a log starts after (the second newest one, unless
    # ZooKeeper rolled its log on the very last txn): the two fetches below differ by that log
    base = max(zxid for zxid in snapshots if zxid < logs[-1])
    window_start = base + 1
    files = {"data_dir": f"file://{zookeeper_data}", "log_dir": None, "sftp_conn_id": None}
    with cluster_zookeeper_files(files, at_zxid=window_start - 1, logs_to_end=True) as staged:
        fetched = list(staged.fetched)
        assert Path(staged.data_dir) != zookeeper_data and (Path(staged.data_dir) / "version-2").is_dir()
    assert max(zxids(fetched, "snapshot")) == base  # the state the window starts from
    assert max(zxids(fetched, "log")) == logs[-1]  # and every change after it
    assert min(zxids(fetched, "log")) <= base
    with cluster_zookeeper_files(files, at_zxid=window_start - 1) as staged:
        assert all(zxid <= window_start - 1 for zxid in zxids(staged.fetched, "log"))
    assert not Path(staged.data_dir).exists()  # the staging folder is gone after the block


# --- execute in a DAG run -------------------------------------------------------------------------------------------


def app_arguments(command: list[str]) -> dict[str, str]:
    """The history app's ``--name value`` arguments in a spark-submit command line."""
    args = command[command.index(history_app_path()) + 1:]
    return dict(zip(args[::2], args[1::2], strict=True))


def test_execute_in_a_dag_run_submits_each_window_and_skips_the_clusters_without_one(
        airflow_db, zookeeper_data, tmp_path, monkeypatch):
    """The history task mapped over three clusters, run twice: ``eu`` reads its files (a file:// URL, fetched like
    a remote store), ``us`` has none and ``dr`` is rebuilt at a past time (both skipped). The first run reads every
    log; the second starts after the first one's last zxid. A log the app could not read to its end (its exit 1,
    history.json written) is a warning: the task succeeds and returns what the history found.

    The runs stop at the Spark provider's hook: ``SparkSubmitHook.submit`` records the command line the hook builds
    (``_build_spark_submit_command``, the provider's own) and writes the ``history.json`` the app would, instead of
    starting spark-submit and its JVM (the app itself is tested in tests/history and tests/cli)."""
    held = sorted(path.name for path in (zookeeper_data / "version-2").iterdir())
    newest_snapshot = max(int(name.split(".")[1], 16) for name in held if name.startswith("snapshot."))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("AIRFLOW_CONN_ZK_EU", json.dumps({"conn_type": "zookeeper", "host": "zk1:2181",
                                                         "extra": {"chroot": "/kafka"}}))
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    submitted: list[dict[str, Any]] = []

    def app(hook: SparkSubmitHook, application: str = "", **_: Any) -> None:
        command = hook._build_spark_submit_command(application)
        args = app_arguments(command)
        submitted.append({"command": command, "args": args, "staged": sorted(
            p.name for p in (Path(args["--files"]) / "version-2").iterdir())})
        root = warehouse.history_dir(args["--history-id"])
        first = len(submitted) == 1
        warehouse.write_json(f"{root}/history.json", {
            "history_id": args["--history-id"], "cluster": args["--cluster"], "path": root,
            "page": f"{root}/timeline.html", "first_zxid": int(args.get("--from-zxid", 1)),
            "last_zxid": newest_snapshot if first else newest_snapshot + 5, "txns": 7,
            "checks": {"under_replicated": {"listed": 2, "short": 1}},
            "log_errors": [{"file": "log.1", "after_zxid": 3, "error": "truncated"}] if first else []})
        if first:
            raise AirflowException("Cannot execute: spark-submit. Error code is: 1.")  # as the hook says it

    monkeypatch.setattr(SparkSubmitHook, "submit", app)
    files = {"data_dir": f"file://{zookeeper_data}", "log_dir": None, "sftp_conn_id": None}
    with DAG("history_operator", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC),
             params={"spark_conn_id": "spark_test"}) as dag:
        ZooKeeperHistoryOperator.partial(
            task_id="history", spark_conn_id="{{ params.spark_conn_id }}", warehouse=warehouse.root,
            conf=submit_conf(), map_index_template="{{ task.cluster }}",
        ).expand_kwargs([
            {"cluster": "eu", "zk_conn_id": "zk_eu", "files": files, "at_zxid": None, "at_time": None},
            {"cluster": "us", "zk_conn_id": None, "files": None, "at_zxid": None, "at_time": None},
            {"cluster": "dr", "zk_conn_id": None, "files": files, "at_zxid": None, "at_time": "2026-01-01T00:00:00Z"},
        ])
    first, second = run_dag(dag), run_dag(dag)
    for outcome in (first, second):
        assert [outcome.state_of("history", i) for i in range(3)] == ["success", "skipped", "skipped"]
        assert outcome.xcom("history", map_index=1) is None and outcome.xcom("history", map_index=2) is None
    assert "skipped: cluster us has no files setting" in first.log
    assert "skipped: this run rebuilds cluster dr at a past point in time" in first.log
    [one, two] = submitted
    assert one["command"][:3] == ["spark-submit", "--master", "local[2]"]
    assert one["command"].count("--files") == 1  # the app's, not spark-submit's
    assert {k: one["args"][k] for k in ("--warehouse", "--cluster", "--chroot", "--min-interval", "--origin")} == {
        "--warehouse": warehouse.root, "--cluster": "eu", "--chroot": "/kafka", "--min-interval": "1",
        "--origin": f"file://{zookeeper_data}"}
    assert "--from-zxid" not in one["args"] and two["args"]["--from-zxid"] == str(newest_snapshot + 1)
    assert f"snapshot.{newest_snapshot:x}" in two["staged"]  # the state the second window starts from
    assert not Path(one["args"]["--files"]).exists()  # the staging folder is gone after the task
    found = first.xcom("history", map_index=0)
    assert found == {"cluster": "eu", "history_id": one["args"]["--history-id"], "page": found["page"],
                     "path": warehouse.history_dir(one["args"]["--history-id"]), "from_zxid": None, "first_zxid": 1,
                     "last_zxid": newest_snapshot, "txns": 7, "listed": 2, "short": 1, "log_errors": 1}
    assert "log.1 could NOT be read to its end (after zxid 3): truncated" in first.log
    assert second.xcom("history", map_index=0)["from_zxid"] == newest_snapshot + 1
    assert second.xcom("history", map_index=0)["log_errors"] == 0
