"""``kafka-zk-audit run --from-files DIR``: the whole DAG on a snapshot rebuilt from a real ZooKeeper's dataDir,
with a planted problem its findings must show, and a snapshot table equal to a live walk's of the same tree."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.walker import write_snapshot
from kafka_zk_audit_testing.simulator import Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port
from tests.cli.test_main import SMALL_CLUSTER, cli, cli_env  # noqa: F401 (cli_env is a fixture)

LIVE_ID = "20260101T000000Z-live"


def _rows(warehouse: Path, snapshot_id: str) -> list[dict]:
    table = pq.read_table(warehouse / "snapshots" / f"snapshot_id={snapshot_id}")
    return sorted(table.to_pylist(), key=lambda row: row["path"])


def test_usage_errors_of_from_files_exit_2(cli_env, tmp_path):  # noqa: F811
    missing = cli(["run", "--from-files", str(tmp_path / "absent")], cli_env)
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    secret = cli(["run", "--from-files", "https://auditor:pw-in-url@127.0.0.1:1/zk/"], cli_env)
    assert secret.returncode == 2 and "carries a password" in secret.stderr and "pw-in-url" not in secret.stderr
    zxid = cli(["run", "--from-files", str(tmp_path), "--at-zxid", "zero"], cli_env)
    assert zxid.returncode == 2 and "at_zxid 'zero'" in zxid.stderr
    assert not Path(cli_env["AIRFLOW_HOME"]).exists()


@pytest.mark.dag
def test_run_from_files_audits_the_rebuilt_tree(cli_env, tmp_path):  # noqa: F811
    server = ZooKeeperServer(tmp_path / "zk", port=free_port(), extra_config=("snapCount=50",)).start()
    sim = Simulator(hosts=server.hosts)
    try:
        sim.write(SMALL_CLUSTER)
        planted = sim.plant("leader_not_in_isr")
        data_dir = server.data_dir / "data"
        result = cli(["run", "--from-files", str(data_dir), "--warehouse", str(tmp_path / "wh")], cli_env)
        assert result.returncode == 1, result.stdout + result.stderr[-4000:]
        # the live tree, walked into the same warehouse (same secrets key) while the sessions still hold it
        client = KazooClient(hosts=server.hosts)
        client.start(timeout=15)
        try:
            write_snapshot(client, ZkSettings(hosts=server.hosts), Warehouse(str(tmp_path / "wh")), LIVE_ID)
        finally:
            client.stop()
            client.close()
    finally:
        sim.close()
        server.stop()
    assert planted.check_id == "leader_not_in_isr"
    assert "leader_not_in_isr: 1" in result.stdout and "gate: FAILED" in result.stdout
    assert "from the ZooKeeper files in" in result.stderr
    manifests = [json.loads(p.read_text()) for p in (tmp_path / "wh").glob("snapshots/*/_MANIFEST.json")]
    offline = next(m for m in manifests if m.get("source") == "files")
    assert offline["source_files"]["dir"] == str(data_dir) and offline["ensemble"] == f"files:{data_dir}"
    assert offline["source_files"]["snapshot"].startswith("snapshot.") and offline["source_files"]["logs"]
    assert offline["digest_verified"] is True and offline["file_format"] == "3.6+"
    assert _rows(tmp_path / "wh", offline["snapshot_id"]) == _rows(tmp_path / "wh", LIVE_ID)
