"""``kafka-zk-audit reaudit``: the stored history of a cluster re-audited in one Spark app, in two batches (real
ZooKeeper, the simulator, real spark-submit on ``local[2]``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.audit.reaudit import parse_moment, select_snapshots
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from tests.audit.checks.test_checks import take_snapshot

CLI = str(Path(sys.executable).parent / "kafka-zk-audit")
SPEC = ClusterSpec(era="2.x", brokers=3, racks=1, topics=4, partitions=3, replication_factor=2,
                   groups=1, consumers_per_group=2, threads_per_consumer=1, seed=23)
CLUSTER = "hist"
PLANTED = ("controller_missing", "offset_regressed")  # one of a single snapshot, one against the previous


def reaudit(warehouse: Path, master: str, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KAFKA_ZK_AUDIT"))}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return subprocess.run([CLI, "reaudit", "--warehouse", str(warehouse), "--cluster", CLUSTER, "--spark-master",
                           master, "--json", *extra], env=env, capture_output=True, text=True, timeout=900)


def take(sim: Simulator, hosts: str, chroot: str, warehouse: Warehouse, label: str) -> str:
    snapshot_id = new_snapshot_id(suffix=f"{CLUSTER}-{label}")
    take_snapshot(hosts, chroot, warehouse, snapshot_id, cluster=CLUSTER)
    return snapshot_id


def live_files(root: Path) -> dict[str, str]:
    """Every file of the warehouse outside reaudits/, with the hash of its content."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] != "reaudits"}


def counts_by_snapshot(timeline: list[dict]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for row in timeline:
        per_check = counts.setdefault(row["snapshot_id"], {})
        per_check[row["check_id"]] = per_check.get(row["check_id"], 0) + row["count"]
    return counts


@pytest.fixture(scope="module")
def history(zk_server, tmp_path_factory):
    """Three stored snapshots: healthy; two problems planted; fixed and time passed. The cluster's history is then
    reaudited with ``kafka-zk-audit reaudit`` on local[2] in two batches: the first two snapshots, then the third,
    which compares with its baseline as the first batch wrote it into the reaudit's folder."""
    chroot = "/reaudit_history"
    zk_server.ensure_chroot(chroot)
    path = tmp_path_factory.mktemp("reaudit") / "wh"
    warehouse = Warehouse(str(path))
    sim = Simulator(hosts=zk_server.hosts + chroot)
    try:
        sim.write(SPEC)
        ids = [take(sim, zk_server.hosts, chroot, warehouse, "s1")]
        planted = {check_id: sim.plant(check_id) for check_id in PLANTED}
        ids.append(take(sim, zk_server.hosts, chroot, warehouse, "s2"))
        del sim.planted["controller_missing"]  # fixed: a broker wins an election, then time passes
        sim.elect_controller(sim.model.broker_ids[0], int(time.time() * 1000))
        sim.advance()
        ids.append(take(sim, zk_server.hosts, chroot, warehouse, "s3"))
    finally:
        sim.close()
    before = live_files(path)
    two_first = sum(warehouse.read_json(warehouse.manifest_path(sid))["znodes"] for sid in ids[:2])
    result = reaudit(path, "local[2]", "--batch-znodes", str(two_first))
    summary = json.loads(result.stdout) if result.returncode == 0 else None
    return {"path": path, "warehouse": warehouse, "ids": ids, "planted": planted, "before": before,
            "result": result, "summary": summary}


def test_the_timeline_shows_the_problems_in_the_second_snapshot_only(history):
    assert history["result"].returncode == 0, history["result"].stderr[-5000:]
    summary, ids = history["summary"], history["ids"]
    assert [s["snapshot_id"] for s in summary["snapshots"]] == ids and summary["failed"] == []
    assert "batch 1 of 2: 2 snapshot(s)" in history["result"].stderr
    assert "batch 2 of 2: 1 snapshot(s)" in history["result"].stderr
    assert summary["clusters"] == [CLUSTER]
    timeline = pq.read_table(Path(summary["timeline"])).to_pylist()
    assert {(r["snapshot_id"], r["cluster"]) for r in timeline} == {(sid, CLUSTER) for sid in ids}
    counts = counts_by_snapshot(timeline)
    for check_id in CHECK_IDS:  # every snapshot has every check, zeros included
        assert all(check_id in counts[sid] for sid in ids), check_id
    for check_id in PLANTED:
        assert [counts[sid][check_id] for sid in ids] == [0, 1, 0], check_id
    implied = {c for p in history["planted"].values() for c in p.implied}
    assert {c for c, n in counts[ids[1]].items() if n} <= set(PLANTED) | implied
    assert sum(counts[ids[0]].values()) == 0 and sum(counts[ids[2]].values()) == 0  # healthy: no finding at all


def test_each_snapshot_compares_with_the_previous_one_of_the_reaudit(history):
    first, second, third = history["summary"]["snapshots"]
    assert [first["baseline_snapshot_id"], second["baseline_snapshot_id"], third["baseline_snapshot_id"]] == [
        None, history["ids"][0], history["ids"][1]]
    assert second["new_findings"] == second["findings"] >= 2
    assert third["resolved_findings"] == second["findings"] and third["findings"] == 0
    findings = pq.read_table(Path(history["summary"]["path"]) / "findings", partitioning=None).to_pylist()
    regressed = [f for f in findings if f["check_id"] == "offset_regressed"]
    planted = history["planted"]["offset_regressed"]
    assert [(f["snapshot_id"], f["group_id"], f["topic"], f["partition"], f["status"]) for f in regressed] == [
        (history["ids"][1], planted.group_id, planted.topic, planted.partition, "new")]


def test_the_live_warehouse_is_untouched_and_the_page_is_written(history):
    assert live_files(history["path"]) == history["before"]
    assert Warehouse(str(history["path"])).audited_snapshots() == []  # the reaudit's audits stay in its folder
    page = Path(history["summary"]["page"]).read_text()
    assert "<table>" in page and all(sid in page for sid in history["ids"])
    assert "controller_missing</td><td class='zero'>0</td><td class='critical'>1</td><td class='zero'>0</td>" in page


def test_snapshots_are_chosen_by_cluster_and_start_time(history):
    warehouse, ids = history["warehouse"], history["ids"]
    second = select_snapshots(warehouse, [CLUSTER])[1]
    assert [s.snapshot_id for s in select_snapshots(warehouse, [CLUSTER], since=second.started_at)] == ids[1:]
    assert [s.snapshot_id for s in select_snapshots(warehouse, until=second.started_at)] == ids[:2]
    assert select_snapshots(warehouse, ["another-cluster"]) == []
    assert parse_moment("2026-11-01").isoformat() == "2026-11-01T00:00:00+00:00"
    now = second.started_at
    assert parse_moment("7d", now) == now - timedelta(days=7)
