"""Batching never mixes snapshots: a batch audited in one plan gives each snapshot exactly what it gets alone.

Three clusters of different eras in one real ZooKeeper (a chroot each), with different settings (per-cluster
overrides: a suppression, an SLA, a migration target) and different planted problems, two snapshots each.
The first snapshots are audited together (no baseline); the warehouse is then copied, and the second
snapshots are audited together in one copy and, in the other, beta alone and alpha with gamma. Every table the
audit writes for a snapshot (findings, suppressed history, audit tables, readiness, drift, normalized tables) and
its audit.json must be equal, row for row (a batch on a Spark standalone master against local:
tests/airflow/test_standalone_master.py). The gate, validating the batch's audit tables in one validation per suite,
must give each snapshot the verdict it gets validated alone.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.audit import job
from kafka_zk_audit.audit.job import run_audit
from kafka_zk_audit.audit.session import size_spark_to
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id
from kafka_zk_audit.gate.context import plan_gate, settings_by_cluster
from kafka_zk_audit.gate.run import run_checkpoint
from kafka_zk_audit.gate.suites import load_suites
from kafka_zk_audit.gate.verdict import build_fleet_verdict
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from tests.audit.checks.test_checks import take_snapshot

pytestmark = pytest.mark.spark

CLUSTERS = {
    "alpha": ClusterSpec(era="2.x", brokers=3, racks=1, topics=3, partitions=2, replication_factor=2, groups=1,
                         consumers_per_group=2, threads_per_consumer=1, seed=41),
    "beta": ClusterSpec(era="1.x", brokers=3, racks=1, topics=3, partitions=2, replication_factor=2, groups=1,
                        consumers_per_group=2, threads_per_consumer=1, seed=42),
    "gamma": ClusterSpec(era="2.8", brokers=3, racks=1, topics=3, partitions=2, replication_factor=2, groups=1,
                         consumers_per_group=2, threads_per_consumer=1, seed=43),
}
# Planted after the first snapshot. beta and gamma share two problems, so a join that forgets the snapshot
# would move findings between them; offset_regressed and controller_epoch_regressed need the baseline.
PLANTS = {
    "alpha": (),
    "beta": ("leader_not_in_isr", "under_replicated", "offset_regressed", "delete_topic_stuck"),
    "gamma": ("leader_not_in_isr", "under_replicated", "controller_epoch_regressed", "delete_topic_stuck"),
}
SETTINGS = """
clusters:
  - name: alpha
    zk_conn_id: zk_alpha
  - name: beta
    zk_conn_id: zk_beta
    overrides:
      sla: {delete_topic: 1s}
      severity_overrides: {leader_not_in_isr: warning}
  - name: gamma
    zk_conn_id: zk_gamma
    overrides:
      sla: {delete_topic: 30d}
      suppressions:
        - {check_id: under_replicated, topic: "*", reason: "gamma is rebalancing"}
      migration: {target_version: "3.5"}
"""


def take(hosts: str, chroot: str, warehouse: Warehouse, cluster: str, label: str) -> str:
    snapshot_id = new_snapshot_id(suffix=f"{cluster}-{label}")
    take_snapshot(hosts, chroot, warehouse, snapshot_id, cluster=cluster)
    return snapshot_id


def written(root: Path, snapshot_id: str) -> dict[str, Any]:
    """Everything the audit wrote for a snapshot: each table's rows (sorted) and its audit.json (no timing)."""
    out: dict[str, Any] = {}
    for folder in sorted(root.glob(f"**/snapshot_id={snapshot_id}")):
        if folder.parts[-2] == "snapshots":
            continue
        rows = pq.read_table(folder, partitioning=None).to_pylist()
        out[str(folder.relative_to(root))] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    audit = json.loads((root / "runs" / snapshot_id / "audit.json").read_text())
    audit.pop("seconds")
    out["audit.json"] = audit
    readiness = root / "runs" / snapshot_id / "readiness.json"
    if readiness.exists():
        out["readiness.json"] = {k: v for k, v in json.loads(readiness.read_text()).items() if k != "generated_at"}
    return out


@pytest.fixture(scope="module")
def audited(zk_server, spark, tmp_path_factory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("batch")
    config = base / "settings.yaml"
    config.write_text(SETTINGS)
    together, alone, large = base / "together", base / "alone", base / "large"
    warehouse = Warehouse(str(together))
    sims, first, second = {}, {}, {}
    try:
        for cluster, spec in CLUSTERS.items():
            chroot = f"/batch_{cluster}"
            zk_server.ensure_chroot(chroot)
            sims[cluster] = Simulator(hosts=zk_server.hosts + chroot)
            sims[cluster].write(spec)
            first[cluster] = take(zk_server.hosts, chroot, warehouse, cluster, "1")
        for sim_cluster, sim in sims.items():
            for check_id in PLANTS[sim_cluster]:
                sim.plant(check_id)
            sim.advance(move_controller=False)  # a failover would raise gamma's lowered controller epoch again
        time.sleep(1.5)  # beta's delete marker outlives its 1 s SLA; gamma's does not outlive 30 days
        for cluster in sims:
            second[cluster] = take(zk_server.hosts, f"/batch_{cluster}", warehouse, cluster, "2")
    finally:
        for sim in sims.values():
            sim.close()
    run_audit(spark, warehouse, list(first.values()), str(config))
    shutil.copytree(together, alone)
    shutil.copytree(together, large)
    batch = run_audit(spark, warehouse, list(second.values()), str(config))
    with pytest.MonkeyPatch.context() as patch:  # the same batch as a large one: tables written and read back by Spark
        patch.setattr(job, "size_spark_to", lambda session, rows: size_spark_to(session, rows) and False)
        run_audit(spark, Warehouse(str(large)), list(second.values()), str(config))
    # beta alone, alpha and gamma together: beta and gamma share two problems, so a join that forgets the snapshot
    # moves findings between them (alpha, healthy, must find nothing at all: the next test)
    single = run_audit(spark, Warehouse(str(alone)), [second["beta"]], str(config))
    single.update(run_audit(spark, Warehouse(str(alone)), [second["alpha"], second["gamma"]], str(config)))
    return {"first": first, "second": second, "together": together, "alone": alone, "large": large, "batch": batch,
            "single": single, "config": config}


def gate(root: Path, snapshot_ids: list[str], config: Path) -> tuple[dict[str, Any], int]:
    """The gate's checkpoint over these snapshots, as the gate task runs it: its verdict, and how many
    validations it ran."""
    cfg = load_config(str(config))
    warehouse = Warehouse(str(root))
    plan = plan_gate(warehouse, snapshot_ids, load_suites(dict(cfg.severity_overrides)),
                     drift_bounds=lambda cluster: cfg.for_cluster(cluster).drift)
    described = run_checkpoint(warehouse, snapshot_ids, plan)
    verdict = build_fleet_verdict(described, plan.described(), plan.clusters, settings_by_cluster(cfg), "docs")
    return verdict, len(described["validation_results"])


def test_each_snapshot_of_a_batch_gets_what_it_gets_alone(audited: dict[str, Any]) -> None:
    for cluster, sid in audited["second"].items():
        together, alone = written(audited["together"], sid), written(audited["alone"], sid)
        assert sorted(together) == sorted(alone), cluster
        for name in together:
            assert together[name] == alone[name], (cluster, name)


def test_a_large_batch_writes_what_a_small_one_does(audited: dict[str, Any]) -> None:
    """The large-batch path (from 200,000 znodes: every table written by Spark, two at a time, and read back from
    Parquet) against the small one (the rows collected, written with pyarrow, checked as local relations)."""
    for cluster, sid in audited["second"].items():
        small, large = written(audited["together"], sid), written(audited["large"], sid)
        assert sorted(small) == sorted(large), cluster
        for name in small:
            assert small[name] == large[name], (cluster, name)


def test_the_batch_found_each_cluster_its_own_problems(audited: dict[str, Any]) -> None:
    batch, second, first = audited["batch"], audited["second"], audited["first"]
    for cluster, sid in second.items():
        assert batch[sid]["baseline_snapshot_id"] == first[cluster]
    assert {k: v for k, v in batch[second["alpha"]]["checks"].items() if v} == {}
    beta = {k for k, v in batch[second["beta"]]["checks"].items() if v}
    gamma = {k for k, v in batch[second["gamma"]]["checks"].items() if v}
    assert {"leader_not_in_isr", "offset_regressed", "delete_topic_stuck", "under_replicated"} <= beta
    assert "offset_regressed" not in gamma and "controller_epoch_regressed" not in beta
    # gamma's own settings: its under-replicated partitions are suppressed, its delete SLA is 30 days
    assert {"leader_not_in_isr", "controller_epoch_regressed"} <= gamma
    assert not {"under_replicated", "delete_topic_stuck"} & gamma
    assert batch[second["gamma"]]["suppressed_findings"] >= 1
    assert batch[second["gamma"]]["readiness"]["target_version"] == "3.5"
    assert batch[second["beta"]]["readiness"]["target_version"] != "3.5"
    findings = pq.read_table(audited["together"] / "findings" / f"snapshot_id={second['beta']}",
                             partitioning=None).to_pylist()
    assert {f["cluster"] for f in findings} == {"beta"} and {f["snapshot_id"] for f in findings} == {second["beta"]}
    severity = {f["severity"] for f in findings if f["check_id"] == "leader_not_in_isr"}
    assert severity == {"warning"}  # beta's severity override


def test_the_gate_judges_each_snapshot_of_a_batch_as_alone(audited: dict[str, Any]) -> None:
    second = audited["second"]
    together, validations = gate(audited["together"], list(second.values()), audited["config"])
    assert validations == len(load_suites({}))  # one validation per suite for the whole batch
    for cluster, sid in second.items():
        alone, _ = gate(audited["alone"], [sid], audited["config"])
        assert together["snapshots"][sid] == alone["snapshots"][sid], cluster
    verdicts = together["snapshots"]
    alpha = verdicts[second["alpha"]]
    assert alpha["success"] and all(not f["gating"] and f["suite"] == "migration" for f in alpha["failed"])
    beta = {f["check_id"]: f for f in verdicts[second["beta"]]["failed"]}
    gamma = {f["check_id"]: f for f in verdicts[second["gamma"]]["failed"]}
    assert beta["leader_not_in_isr"]["gating"] is False  # beta's severity override: a warning
    assert gamma["leader_not_in_isr"]["gating"] is True and gamma["leader_not_in_isr"]["cluster"] == "gamma"
    assert together["success"] is False and verdicts[second["beta"]]["success"] is False  # its offsets went back
