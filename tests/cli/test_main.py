"""``kafka-zk-audit run``: exit codes, and a whole run against a real ZooKeeper."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import free_port

CLI = str(Path(sys.executable).parent / "kafka-zk-audit")


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture
def cli_env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow")
    return env


def test_usage_and_connection_errors_exit_2(cli_env, tmp_path):
    assert cli(["run"], cli_env).returncode == 2
    bad = cli(["run", "--zk", "no-port-here"], cli_env)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
    down = cli(["run", "--zk", f"127.0.0.1:{free_port()}", "--warehouse", str(tmp_path / "wh")], cli_env)
    assert down.returncode == 2 and "cannot reach ZooKeeper" in down.stderr
    bad_auth = cli(["run", "--zk", f"127.0.0.1:{free_port()}"], {**cli_env, "KAFKA_ZK_AUDIT_ZK_AUTH": "oops"})
    assert bad_auth.returncode == 2 and "digest:USER:PASSWORD" in bad_auth.stderr


@pytest.mark.dag
def test_run_prints_summary_and_exits_1_when_the_gate_fails(cli_env, zk_server, zk_chroot, tmp_path):
    sim = Simulator(hosts=zk_server.hosts + zk_chroot, auth=("digest", "kafka:cli-secret"))
    try:
        sim.write(ClusterSpec(era="2.x", brokers=3, racks=1, topics=3, partitions=3, replication_factor=2,
                              groups=1, consumers_per_group=2, threads_per_consumer=1, seed=5))
        planted = sim.plant("controller_missing")
        env = {**cli_env, "KAFKA_ZK_AUDIT_ZK_AUTH": "digest:kafka:cli-secret"}
        result = cli(["run", "--zk", zk_server.hosts + zk_chroot, "--warehouse", str(tmp_path / "wh")], env)
    finally:
        sim.close()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "controller_missing: 1" in result.stdout
    assert "gate: FAILED" in result.stdout
    assert "data docs:" in result.stdout and (tmp_path / "wh" / "data_docs" / "index.html").exists()
    assert planted.path == "/controller"
    log_line = next(line for line in result.stderr.splitlines() if line.startswith("Airflow log:"))
    log_text = Path(log_line.split(":", 1)[1].strip()).read_text()
    assert "cli-secret" not in result.stdout + result.stderr + log_text
