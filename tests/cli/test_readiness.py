"""``kafka-zk-audit readiness`` end to end: a simulated 3.x cluster in the real ZooKeeper with one blocker planted
by hand, snapshotted, audited by spark-submit for a migration with Kafka 3.9, reported as text, JSON and pages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import free_port
from tests.cli.console_script import Background, clean_env, cli
from tests.cli.in_process import run_main

SPEC = ClusterSpec(era="3.x", brokers=3, racks=1, topics=3, partitions=2, replication_factor=2,
                   groups=1, consumers_per_group=1, threads_per_consumer=1, seed=12)
PASSWORD = "readiness-5ecret-pw"


@pytest.fixture(scope="module")
def unreachable_readiness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Background, int, Path]]:
    """``readiness`` of an ensemble nobody listens for, through the console script: (the call, its port, its
    warehouse). Started in the background before the module's readiness run, so that its 10 s pre-flight waits
    while that run's Spark audit works."""
    warehouse = tmp_path_factory.mktemp("unreachable") / "wh"
    port = free_port()  # nothing listens there
    call = Background(["readiness", "--zk", f"127.0.0.1:{port}", "--warehouse", str(warehouse)])
    yield call, port, warehouse
    call.stop()


@pytest.fixture(scope="module")
def blocked_run(zk_server, tmp_path_factory, unreachable_readiness):
    """The CLI's readiness run on a 3.x cluster whose /cluster/id was deleted (R17, a blocker at every target); the
    module's unreachable readiness call (a parameter) runs in the background meanwhile."""
    chroot = "/cli_readiness"
    zk_server.ensure_chroot(chroot)
    warehouse = tmp_path_factory.mktemp("readiness") / "wh"
    sim = Simulator(hosts=zk_server.hosts + chroot)  # open while the snapshot runs: brokers are ephemeral
    client = KazooClient(hosts=zk_server.hosts + chroot)
    client.start(timeout=15)
    try:
        sim.write(SPEC)
        client.delete("/cluster/id")
        broker_ids = sorted(int(b) for b in client.get_children("/brokers/ids"))
        # a digest identity the snapshot logs in with: it must reach no output, no file and no process argument
        result = cli(["readiness", "--zk", zk_server.hosts + chroot, "--target", "3.9", "--warehouse",
                      str(warehouse), "--spark-master", "local[2]"],
                     clean_env({"KAFKA_ZK_AUDIT_ZK_AUTH": f"digest:auditor:{PASSWORD}"}))
    finally:
        client.stop()
        client.close()
        sim.close()
    return {"result": result, "warehouse": warehouse, "broker_ids": broker_ids}


def test_readiness_reports_the_planted_blocker_and_exits_1(blocked_run):
    result, warehouse = blocked_run["result"], blocked_run["warehouse"]
    assert result.returncode == 1, result.stderr[-5000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("cluster cli_readiness (snapshot ") and "BLOCKED" in lines[0] and "Kafka 3.9" in lines[0]
    reports = list(warehouse.glob("runs/*/readiness.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["verdict"] == "blocked" and report["target_version"] == "3.9"
    blockers = [row for row in report["rows"] if row["level"] == "blocker"]
    assert [(r["condition_id"], r["check_id"], r["path"]) for r in blockers] == [
        ("R17", "kraft_cluster_id_missing", "/cluster/id")
    ]
    assert report["counts"]["blocker"] == 1
    assert len(blocked_run["broker_ids"]) == SPEC.brokers
    assert set(blocked_run["broker_ids"]) <= set(report["node_ids"])

    heading = lines.index("Blockers: fix these before migrating (1):")
    assert "kraft_cluster_id_missing" in lines[heading + 1] and "/cluster/id" in lines[heading + 1]
    assert lines[heading + 2] == f"      remedy: {blockers[0]['remedy']}" and blockers[0]["remedy"]
    assert "ZooKeeper cannot show these: check them yourself:" in lines

    index, page = warehouse / "readiness" / "index.html", warehouse / "readiness" / "cli_readiness.html"
    assert index.is_file() and page.is_file()
    assert blockers[0]["remedy"] in page.read_text() and "BLOCKED" in index.read_text()
    assert f"readiness pages: {index}, {page}" in result.stderr


def test_readiness_keeps_the_zookeeper_password_out_of_every_output(blocked_run):
    result, warehouse = blocked_run["result"], blocked_run["warehouse"]
    assert "spark-submit --master local[2]" in result.stderr and "--target-version 3.9" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    written = b"".join(p.read_bytes() for p in warehouse.rglob("*") if p.is_file())
    assert PASSWORD.encode() not in written


def test_readiness_usage_errors_exit_2_before_anything_starts(zk_server, unreachable_readiness, tmp_path, capsys,
                                                             monkeypatch):
    bad_target = run_main(["readiness", "--zk", zk_server.hosts, "--target", "4.0", "--warehouse",
                           str(tmp_path / "wh")], capsys, monkeypatch)
    assert bad_target.returncode == 2, bad_target.stderr
    assert "--target: target version '4.0' is not a Kafka release" in bad_target.stderr and bad_target.stdout == ""
    call, port, warehouse = unreachable_readiness
    down = call.result()
    assert down.returncode == 2 and f"cannot reach ZooKeeper at 127.0.0.1:{port}" in down.stderr
    assert not warehouse.exists() and not (tmp_path / "wh").exists()
    neither = run_main(["readiness", "--target", "3.9"], capsys, monkeypatch)
    assert neither.returncode == 2 and "--zk" in neither.stderr
