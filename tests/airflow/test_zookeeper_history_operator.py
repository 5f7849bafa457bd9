"""The history task: its window (from the cluster's previous history on), when it skips, and the files it fetches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowSkipException

from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_zookeeper_files
from kafka_zk_audit.airflow.operators.zookeeper_history import (
    ZooKeeperHistoryOperator,
    history_app_path,
    next_history_zxid,
    previous_history,
)
from kafka_zk_audit.contract.warehouse import Warehouse


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
