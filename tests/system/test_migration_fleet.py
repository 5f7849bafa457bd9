"""ZooKeeper → KRaft migrations verified by the DAG, in the shared fleet run (tests/system/fleet_run.py): ``migrated``
(two divergences planted in the KRaft log its migration wrote) and ``migclean`` (none), both live 3.x clusters in
chroots of the session's ZooKeeper, paired with their KRaft logs by the ``migration:`` setting. The oracles are the
plants the test encoder reports and the trees read apart from the audit."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from tests.system.fleet_run import FLEET_ROUTE, MIGRATED, SystemRun

PLANTED_CLUSTER, CLEAN_CLUSTER = "migrated", "migclean"
MIGRATION_IDS = ("migration_diverged_", "migration_dual_write_lagging")


def _planted(system: SystemRun) -> list[tuple]:
    log = system.extra["migrations"][PLANTED_CLUSTER]["log"]
    return sorted((p.check_id, p.topic, p.partition) for p in log.planted)


def _started_firing(run, cluster: str) -> list[str]:
    posts = [p["json"]["kafka_zk_audit"] for p in run.posts_to(FLEET_ROUTE)
             if p["json"]["kafka_zk_audit"].get("snapshot_id") == run.snapshot_id(cluster)]
    return sorted(e["check_id"] for post in posts for e in post["started_firing"])


def test_each_planted_divergence_is_found_once_with_both_sides_evidence(system: SystemRun):
    assert len(_planted(system)) == len(MIGRATED[PLANTED_CLUSTER])
    for run in system.runs:
        findings = [f for f in run.findings(PLANTED_CLUSTER) if f["check_id"].startswith(MIGRATION_IDS)]
        assert sorted((f["check_id"], f["topic"], f["partition"]) for f in findings) == _planted(system)
        for finding in findings:
            assert " · zk: " in finding["detail"] and " · kraft: " in finding["detail"], finding
        assert {f["severity"] for f in findings} <= {"critical", "error"}
    # found in run 1, the same in run 2 (its baseline): ongoing, not new
    assert {f["status"] for f in system.runs[0].findings(PLANTED_CLUSTER)
            if f["check_id"].startswith(MIGRATION_IDS)} == {"new"}
    assert {f["status"] for f in system.runs[1].findings(PLANTED_CLUSTER)
            if f["check_id"].startswith(MIGRATION_IDS)} == {"ongoing"}


def test_the_divergences_fail_the_gate_and_alert_once_through_the_fleets_route(system: SystemRun):
    first, second = system.runs
    assert PLANTED_CLUSTER in first.fleet["red"] and PLANTED_CLUSTER in second.fleet["red"]
    assert _started_firing(first, PLANTED_CLUSTER) == sorted(c for c, _, _ in _planted(system))
    assert _started_firing(second, PLANTED_CLUSTER) == []  # ongoing: no second trigger
    checks = first.summary(PLANTED_CLUSTER)["checks"]
    for check_id, _, _ in _planted(system):
        assert checks[check_id] == [c for c, _, _ in _planted(system)].count(check_id)


def test_a_clean_migration_is_verified_without_a_finding(system: SystemRun):
    for run in system.runs:
        assert run.findings(CLEAN_CLUSTER) == []
        assert CLEAN_CLUSTER in run.fleet["green"]
        assert _started_firing(run, CLEAN_CLUSTER) == []
    chapter = system.runs[0].readiness(CLEAN_CLUSTER)["migration_verification"]
    oracle = system.extra["migrations"][CLEAN_CLUSTER]
    assert chapter["status"] == "verified" and chapter["divergences"] == []
    assert chapter["offset"] == oracle["log"].migration_offset and chapter["lag_records"] == 0
    assert chapter["equal"]["topics"] == oracle["topics"] > 0
    assert chapter["equal"]["partitions"] == oracle["partitions"] > 0
    # the broker password ZooKeeper holds encoded was decoded with the brokers' secret (a connection) and compared
    assert any("decoded with password.encoder.secret and compared by fingerprint" in n for n in chapter["notes"])


def test_the_readiness_page_ends_with_the_verdict_divergences_first(system: SystemRun):
    chapter = system.runs[0].readiness(PLANTED_CLUSTER)["migration_verification"]
    assert chapter["status"] == "diverged"
    assert sorted((d["check_id"], d["topic"], d["partition"]) for d in chapter["divergences"]) == _planted(system)
    last = system.runs[-1]  # the pages are the latest run's
    pages = [p.read_text() for p in (system.warehouse / "readiness").glob("*.html") if p.name != "index.html"]
    for name, label in ((PLANTED_CLUSTER, "MIGRATION DIVERGED"), (CLEAN_CLUSTER, "MIGRATION VERIFIED")):
        [text] = [t for t in pages if f"<code>{last.snapshot_id(name)}</code>" in t]
        assert label in text and text.index(label) > text.index("must not reuse"), name
        if name == PLANTED_CLUSTER:
            assert text.index(f"Divergences ({len(_planted(system))})") < text.index(" topics, ")
    assert system.runs[0].readiness("alpha")["migration_verification"] is None  # not paired: no chapter


def test_the_verdict_and_the_laid_out_entries_hold_no_secret_in_clear(system: SystemRun):
    for name, oracle in system.extra["migrations"].items():
        snapshot_id = system.runs[0].snapshot_id(name)
        text = (system.warehouse / "runs" / snapshot_id / "migration_diff.json").read_text()
        verdict = json.loads(text)
        assert verdict["cluster"] == name and verdict["release"] == "3.9"
        assert verdict["status"] in ("verified", "diverged") and verdict["entries"]["kraft"] > 0
        entries = system.warehouse / "tables" / "migration_entries" / f"snapshot_id={system.runs[-1].snapshot_id(name)}"
        stored = ["\n".join(str(v) for row in pq.read_table(p).to_pylist() for v in row.values())
                  for p in entries.rglob("*.parquet")]
        assert len(stored) == 2  # one file per side
        for secret in oracle["secrets"]:
            assert secret.decode(errors="replace") not in text
            assert not any(secret.decode(errors="replace") in rows for rows in stored)
