"""KRaft clusters in the shared fleet run: audited from their metadata logs by the same DAG, beside ZooKeeper clusters.

The oracle is what the test planted (kafka_zk_audit_testing.kraft_logs, written with the codec's encoder that the
codec's tests check byte for byte against real logs) and a real controller's directory whose records SOURCE.md counts.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.system.fleet_run import KRAFT_CLUSTERS, REAL_KRAFT, SystemRun

# What each real controller's log shows at its end (SOURCE.md of each dataset, and the records themselves):
# - kirana (3.9), greenlemon (3.5, three voters), dkoh (4.1): the clusters were shut down before the files were
#   committed: every broker fenced and in controlled shutdown, every partition's leader -1 (offline) and, where the
#   replication factor is above the ISR left, under-replicated (dkoh's ELR cluster keeps an empty ISR, ELR [1]);
# - apache (3.7 trunk build): six PartitionRecord v1 of a pre-release layout, reported and left out, and the 24 changes
#   to the partitions they would have created, explained by them;
# - hastar (3.8), indus (4.2), galgrayzer (4.0): healthy at the end (galgrayzer's one broker is fenced but leads
#   nothing: it has no partition).
REAL_FINDINGS = {
    "kr-kirana": {"offline_partition": 51},
    "kr-hastar": {},
    "kr-indus": {},
    "kr-apache": {"record_undecodable": 6, "log_replay_inconsistent": 24},
    "kr-dkoh": {"offline_partition": 51, "under_replicated": 51},
    "kr-galgrayzer": {},
    "kr-greenlemon": {"offline_partition": 55, "under_replicated": 50},
}


def _subjects(findings: list[dict]) -> list[tuple]:
    return sorted((f["check_id"], f["topic"], f["partition"], f["broker_id"]) for f in findings)


def test_kraft_clusters_get_their_own_verdicts_in_the_fleets_run(system: SystemRun):
    first = system.runs[0]
    # red: a finding of a gating severity (critical, error); kr-apache's are a warning and explained ones (info)
    red = {name for name, found in REAL_FINDINGS.items() if {"offline_partition"} & set(found) and name in REAL_KRAFT}
    red |= {"kr-planted", "kr-corrupt"}
    assert red <= set(first.fleet["red"])
    assert set(KRAFT_CLUSTERS) - red <= set(first.fleet["green"])
    for name in KRAFT_CLUSTERS:
        manifest = json.loads((system.after_first / "snapshots" / f"snapshot_id={first.snapshot_id(name)}"
                               / "_MANIFEST.json").read_text())
        assert manifest["source"] == "kraft" and manifest["cluster"] == name
    if "kr-indus" not in REAL_KRAFT:
        return
    real = json.loads((system.after_first / "snapshots" / f"snapshot_id={first.snapshot_id('kr-indus')}"
                       / "_MANIFEST.json").read_text())["kraft"]
    # SOURCE.md of IndusWargods__local-test-rig: the log ends at offset 51263, metadata.version 29, one topic
    assert (real["offset"], real["metadata_version"], real["topics"], real["partitions"]) == (51263, 29, 1, 1)


def test_a_healthy_generated_log_gives_no_finding_and_each_real_log_what_its_records_show(system: SystemRun):
    for run in system.runs:
        assert run.findings("kr-clean") == []
        for name, expected in REAL_FINDINGS.items():
            if name not in REAL_KRAFT:
                continue
            assert dict(Counter(f["check_id"] for f in run.findings(name))) == expected, name
    if "kr-apache" not in REAL_KRAFT:
        return
    explained = [f for f in system.runs[0].findings("kr-apache") if f["check_id"] == "log_replay_inconsistent"]
    assert {f["status"] for f in explained} == {"explained"}
    undecodable = sorted(f["detail"] for f in system.runs[0].findings("kr-apache") if f["check_id"] ==
                         "record_undecodable")
    assert all("apiKey 3 version 1" in detail for detail in undecodable)


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


def _history(system: SystemRun, cluster: str) -> dict:
    """The cluster's first history (the first run's), read from the warehouse copied after run 1."""
    found = [json.loads(p.read_text()) for p in (system.after_first / "history").glob("*/history.json")]
    [summary] = [h for h in found if h["cluster"] == cluster]
    return summary


def test_a_kraft_clusters_history_is_read_from_its_metadata_log(system: SystemRun):
    import pyarrow.parquet as pq

    if "kr-indus" in REAL_KRAFT:
        indus = _history(system, "kr-indus")
        # SOURCE.md: the log holds offsets 0-51263 and four LeaderChange records (four leader epochs, restarts
        # between them)
        assert (indus["source"], indus["first_zxid"], indus["last_zxid"]) == ("kraft", 0, 51263)
        assert indus["checks"]["interval_quorum_leader_missing"]["listed"] == 3
    planted = _history(system, "kr-planted")
    rows = pq.read_table(system.after_first / "history" / planted["history_id"] / "intervals").to_pylist()
    [leader] = [r for r in rows if r["check_id"] == "interval_leader_not_in_isr"]
    assert (leader["topic"], leader["end_zxid"]) == ("planted-leader-not-in-isr", None)  # still broken at the end
    assert (system.after_first / "history" / planted["history_id"] / "timeline.html").exists()
