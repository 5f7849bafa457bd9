"""ZK -> KRaft migration readiness through the whole DAG, on the real parts: four clusters of the shared system run
(tests/system/fleet_run.py), in three chroots of one real ZooKeeper:

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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafka_zk_audit.contract.readiness import BY_CHECK_ID
from kafka_zk_audit_testing.browser import render_dom, text_of
from kafka_zk_audit_testing.simulator import Planted
from tests.audit.test_readiness import expected_rows, found_rows
from tests.report.test_readiness import colour_counts, decode_png, near, screenshot
from tests.system.fleet_run import Run as FleetRun
from tests.system.fleet_run import SystemRun

TARGETS = {"kraft35": "3.5.0", "kraft39": "3.9"}
READINESS_CLUSTERS = ("kraft35", "kraft39", "clean39", "dualwrite")
RED, AMBER = (0xC6, 0x28, 0x28), (0xEF, 0x8F, 0x00)


@dataclass
class Run:
    """The system run's first run, seen from its readiness clusters."""

    first: FleetRun
    planted: list[Planted]
    inherent: list[Planted]

    @property
    def warehouse(self) -> Path:
        return self.first.warehouse

    @property
    def log(self) -> str:
        return self.first.log

    @property
    def returncode(self) -> int:
        return self.first.returncode

    def red(self) -> list[str]:
        return sorted(c for c in self.first.fleet["red"] if c in READINESS_CLUSTERS)

    def green(self) -> list[str]:
        return sorted(c for c in self.first.fleet["green"] if c in READINESS_CLUSTERS)

    def readiness(self, cluster: str) -> dict[str, Any]:
        return self.first.readiness(cluster)

    def findings(self, cluster: str) -> list[dict[str, Any]]:
        return self.first.findings(cluster)


@pytest.fixture
def run(system: SystemRun) -> Run:
    return Run(system.runs[0], system.readiness_planted, system.readiness_inherent)


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
    assert run.red() == ["dualwrite", "kraft35"]
    assert run.green() == ["clean39", "kraft39"]
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
    summary = run.first.summary("dualwrite")
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
