"""ZK -> KRaft migration readiness through the whole DAG (``airflow dags test``), on the real parts.

One DAG run audits a fleet of four clusters in three chroots of one real ZooKeeper:

* ``kraft35`` and ``kraft39``: the same 3.9-era cluster with readiness plants (a pending deletion, ACLs, a
  delegation token, a broker without the listener the others share), planned with Kafka 3.5.0 and 3.9: the
  first is blocked, the second ready with warnings. ``kraft35`` also sets ``migration.gate``, so its blockers
  fail its gate; ``kraft39`` is not gated by readiness at all.
* ``clean39``: a clean 3.9-era cluster: ready, no readiness row and no finding.
* ``dualwrite``: a 3.x cluster in the middle of a migration (dual writes, a KRaft controller on /controller)
  whose dual writes stopped longer ago than its ``migration.dual_write_stale_after`` (0s here): phase
  ``dual_write`` in the report and a ``migration_dual_write_stalled`` finding.

The expected readiness rows come from the readiness note's levels (``tests/audit/test_readiness.py``), not
from the readiness contract. The report page is opened in headless Chromium: its screenshot is a real page
with a red and an amber badge, and its text lists the blockers first with their remedies.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit.contract.readiness import BY_CHECK_ID
from kafka_zk_audit_testing.browser import render_dom, text_of
from kafka_zk_audit_testing.simulator import ClusterSpec, Planted, Simulator
from kafka_zk_audit_testing.simulator.readiness_plants import inherent_readiness, plant_readiness
from tests.audit.test_readiness import expected_rows, found_rows
from tests.report.test_readiness import colour_counts, decode_png, near, screenshot

pytestmark = pytest.mark.dag

PLANTS = ("kraft_pending_topic_deletion", "kraft_acls_present", "kraft_delegation_tokens", "kraft_no_common_listener")
TARGETS = {"kraft35": "3.5.0", "kraft39": "3.9"}
CHROOTS = {"kraft35": "/rd_planted", "kraft39": "/rd_planted", "clean39": "/rd_clean", "dualwrite": "/rd_dual"}
SMALL = dict(brokers=3, racks=1, topics=3, partitions=2, replication_factor=2, groups=1, consumers_per_group=1,
             threads_per_consumer=1, seed=31)
RED, AMBER = (0xC6, 0x28, 0x28), (0xEF, 0x8F, 0x00)


@dataclass
class Run:
    warehouse: Path
    returncode: int
    fleet: dict[str, Any]
    log: str
    planted: list[Planted]
    inherent: list[Planted]

    def snapshot_id(self, cluster: str) -> str:
        return self.fleet["clusters"][cluster]["snapshot_id"]

    def readiness(self, cluster: str) -> dict[str, Any]:
        return json.loads((self.warehouse / "runs" / self.snapshot_id(cluster) / "readiness.json").read_text())

    def findings(self, cluster: str) -> list[dict[str, Any]]:
        return pq.read_table(self.warehouse / "findings" / f"snapshot_id={self.snapshot_id(cluster)}").to_pylist()


def settings_file(tmp: Path) -> Path:
    clusters = [
        {"name": "kraft35", "zk_conn_id": "zk_kraft35",
         "overrides": {"migration": {"target_version": "3.5.0", "gate": True}}},
        {"name": "kraft39", "zk_conn_id": "zk_kraft39"},
        {"name": "clean39", "zk_conn_id": "zk_clean39"},
        {"name": "dualwrite", "zk_conn_id": "zk_dualwrite",
         "overrides": {"migration": {"dual_write_stale_after": "0s"}}},
    ]
    path = tmp / "readiness.yaml"
    path.write_text(yaml.safe_dump({"schedule": None, "clusters": clusters, "fleet": {"task_retries": 0}},
                                   sort_keys=False))
    return path


@pytest.fixture(scope="module")
def run(zk_server, tmp_path_factory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("readiness-dag")
    warehouse = tmp / "wh"
    env = airflow_env(airflow_home=tmp / "airflow",
                      base={k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")})
    env["KAFKA_ZK_AUDIT_CONFIG"] = str(settings_file(tmp))
    for name, chroot in CHROOTS.items():
        zk_server.ensure_chroot(chroot)
        env[f"AIRFLOW_CONN_ZK_{name.upper()}"] = json.dumps(
            {"conn_type": "zookeeper", "host": zk_server.hosts, "extra": {"chroot": chroot}})
    ensure_metadata_db(env)
    # The simulators stay open during the run: their brokers' registrations are ephemeral.
    with Simulator(hosts=zk_server.hosts + CHROOTS["kraft39"]) as planted_sim, \
            Simulator(hosts=zk_server.hosts + CHROOTS["clean39"]) as clean_sim, \
            Simulator(hosts=zk_server.hosts + CHROOTS["dualwrite"]) as dual_sim:
        planted_sim.write(ClusterSpec(era="3.9", **SMALL))
        planted = [plant_readiness(planted_sim, name) for name in PLANTS]
        inherent = inherent_readiness(planted_sim)
        clean_sim.write(ClusterSpec(era="3.9", **SMALL))
        dual_sim.write(ClusterSpec(era="3.x-migration", **SMALL))
        result = run_dag_once(env, {"warehouse": str(warehouse), "run_label": "kraft"}, warehouse / "run.log")
    log = result.log_path.read_text()
    found = list(warehouse.glob("runs/fleet-*-kraft/fleet.json"))
    assert found, f"no fleet summary; log tail:\n{log[-5000:]}"
    yield Run(warehouse, result.returncode, json.loads(found[0].read_text()), log, planted, inherent)


def test_two_targets_two_verdicts_with_exactly_the_planted_conditions(run: Run) -> None:
    for cluster, target in TARGETS.items():
        report = run.readiness(cluster)
        assert report["target_version"] == target and report["cluster"] == cluster
        expected = expected_rows(run.planted + run.inherent, target)
        assert found_rows(report["rows"]) == expected, cluster
        for row in report["rows"]:
            assert row["remedy"] == BY_CHECK_ID[row["check_id"]].remedy and row["remedy"].strip()
    blocked, warned = run.readiness("kraft35"), run.readiness("kraft39")
    assert blocked["verdict"] == "blocked" and warned["verdict"] == "ready_with_warnings"
    levels = [row["level"] for row in blocked["rows"]]
    assert levels == sorted(levels, key=["blocker", "high", "warn", "info"].index), "blockers first"
    # a pending deletion blocks a 3.5.0 migration (KAFKA-15605) and is a warning from 3.6.1
    assert {r["level"] for r in blocked["rows"] if r["check_id"] == "kraft_pending_topic_deletion"} == {"blocker"}
    assert {r["level"] for r in warned["rows"] if r["check_id"] == "kraft_pending_topic_deletion"} == {"warn"}


def test_readiness_is_not_health_unless_the_settings_gate_on_it(run: Run) -> None:
    # No readiness row became a finding: the plants imply no health finding at the default settings (the
    # deletion marker is younger than its 24 h SLA, delete_topic_stuck).
    implied = {check for plant in run.planted for check in plant.implied} - {"delete_topic_stuck"}
    for cluster in ("kraft35", "kraft39"):
        assert {f["check_id"] for f in run.findings(cluster)} == implied, cluster
    assert sorted(run.fleet["red"]) == ["dualwrite", "kraft35"]
    assert sorted(run.fleet["green"]) == ["clean39", "kraft39"]
    assert "blocker_gating" in run.log and run.returncode != 0


def test_a_clean_39_cluster_is_ready_with_nothing_found(run: Run) -> None:
    report = run.readiness("clean39")
    assert report["verdict"] == "ready" and report["rows"] == [] and report["phase"]["phase"] == "not_started"
    assert run.findings("clean39") == []
    assert report["node_ids"] and report["not_visible"]


def test_a_migration_whose_dual_writes_stopped(run: Run) -> None:
    report = run.readiness("dualwrite")
    assert report["phase"]["phase"] == "dual_write"
    findings = run.findings("dualwrite")
    assert [(f["check_id"], f["path"]) for f in findings] == [("migration_dual_write_stalled", "/migration")]
    summary = json.loads(Path(run.fleet["clusters"]["dualwrite"]["summary"]).read_text())
    assert summary["readiness"]["phase"] == "dual_write"


def test_the_report_page_in_headless_chromium(run: Run, chromium_ok: str) -> None:
    binary = chromium_ok
    page = run.warehouse / "readiness" / "index.html"
    assert page.is_file() and (run.warehouse / "readiness" / "kraft35.html").is_file()
    width, height, rows = decode_png(screenshot(binary, page, 1100, 800))
    assert (width, height) == (1100, 800)
    counts = colour_counts(rows)
    assert len(counts) > 50, "a blank page"
    assert near(counts, RED) > 1000 and near(counts, AMBER) > 1000, "the blocked and the warned verdict badges"
    # the blocked cluster's own page: every blocker with its remedy, before the high-level condition
    text = text_of(render_dom(run.warehouse / "readiness" / "kraft35.html"))
    assert "BLOCKED" in text and "3.5.0" in text
    blockers = [row for row in run.readiness("kraft35")["rows"] if row["level"] == "blocker"]
    assert blockers
    positions = [text.index(row["remedy"]) for row in blockers]
    high = text.index(BY_CHECK_ID["kraft_no_common_listener"].remedy)
    assert max(positions) < high, "blockers before the warnings"
    # the same pages inside the Data Docs, linked from their index
    docs = run.warehouse / "data_docs"
    assert (docs / "readiness" / "index.html").is_file()
    assert 'href="readiness/index.html"' in (docs / "index.html").read_text()
