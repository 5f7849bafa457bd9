"""KRaft clusters in the shared fleet run: audited from their metadata logs by the same DAG, beside ZooKeeper clusters.

The oracle is what the test planted (kafka_zk_audit_testing.kraft_logs, written with the codec's encoder that the
codec's tests check byte for byte against real logs) and a real controller's directory whose records SOURCE.md counts.
"""

from __future__ import annotations

import json

from tests.system.fleet_run import KRAFT_CLUSTERS, SystemRun


def _subjects(findings: list[dict]) -> list[tuple]:
    return sorted((f["check_id"], f["topic"], f["partition"], f["broker_id"]) for f in findings)


def test_kraft_clusters_get_their_own_verdicts_in_the_fleets_run(system: SystemRun):
    first = system.runs[0]
    assert {"kr-clean", "kr-real"} <= set(first.fleet["green"])
    assert {"kr-planted", "kr-corrupt"} <= set(first.fleet["red"])
    for name in KRAFT_CLUSTERS:
        manifest = json.loads((system.after_first / "snapshots" / f"snapshot_id={first.snapshot_id(name)}"
                               / "_MANIFEST.json").read_text())
        assert manifest["source"] == "kraft" and manifest["cluster"] == name
    real = json.loads((system.after_first / "snapshots" / f"snapshot_id={first.snapshot_id('kr-real')}"
                       / "_MANIFEST.json").read_text())["kraft"]
    # SOURCE.md of IndusWargods__local-test-rig: the log ends at offset 51263, metadata.version 29, one topic
    assert (real["offset"], real["metadata_version"], real["topics"], real["partitions"]) == (51263, 29, 1, 1)


def test_a_healthy_generated_log_and_a_real_controllers_log_give_no_finding(system: SystemRun):
    for run in system.runs:
        for name in ("kr-clean", "kr-real"):
            assert run.findings(name) == [], name


def test_each_planted_kraft_problem_is_found_exactly_once_and_nothing_else(system: SystemRun):
    planted = [p for p in system.kraft_planted if p.check_id != "log_corrupt"]
    expected = sorted([(p.check_id, p.topic, p.partition, p.broker_id) for p in planted]
                      + [(check, p.topic, p.partition, None) for p in planted for check in p.implied])
    first, second = system.runs
    assert _subjects(first.findings("kr-planted")) == expected
    paths = {f["check_id"]: f["path"] for f in first.findings("kr-planted")}
    for plant in planted:
        assert paths[plant.check_id].startswith(plant.path), plant
    # the second run has the first as baseline: the same findings, ongoing
    assert _subjects(second.findings("kr-planted")) == expected
    assert {f["status"] for f in second.findings("kr-planted")} == {"ongoing"}


def test_a_corrupt_batch_is_one_finding_naming_the_file_and_offset(system: SystemRun):
    [finding] = system.runs[0].findings("kr-corrupt")
    assert finding["check_id"] == "log_corrupt" and finding["severity"] == "error"
    assert "00000000000000000000.log: byte " in finding["detail"] and "CRC-32C mismatch" in finding["detail"]
    assert "--at-offset" in finding["detail"]  # what to do


def test_kraft_clusters_have_no_migration_readiness_report(system: SystemRun):
    for name in KRAFT_CLUSTERS:  # already on KRaft: nothing to migrate
        assert system.runs[0].summary(name)["readiness"] is None, name
