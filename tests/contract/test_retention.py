"""Retention keeps each cluster's baseline, the newest N and the young ones; findings outlive raw data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kafka_zk_audit.contract.retention import (
    RetentionPlan,
    StoredHistory,
    StoredSnapshot,
    apply_retention,
    plan_history_retention,
    plan_retention,
    snapshot_started,
)
from kafka_zk_audit.contract.settings import parse_config
from kafka_zk_audit.contract.warehouse import Warehouse

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def hourly(cluster: str, hours: int, audited=lambda h: True) -> list[StoredSnapshot]:
    """One snapshot per hour going back ``hours`` hours; ids like the DAG's."""
    out = []
    for h in range(hours):
        started = NOW - timedelta(hours=h, minutes=1)
        out.append(StoredSnapshot(f"{started:%Y%m%dT%H%M%SZ}-{cluster}", cluster, started, audited(h)))
    return out


def settings(**retention):
    return parse_config({"retention": {"keep_snapshots": 3, "keep_snapshots_for": "2h",
                                       "keep_findings_for": "10h", **retention}}).retention


def test_keeps_newest_and_young_drops_old_data_and_older_findings():
    plan = plan_retention(hourly("eu", 24), settings(), NOW)
    kept = {s.snapshot_id for s in hourly("eu", 24)} - set(plan.drop_data)
    assert kept == {s.snapshot_id for s in hourly("eu", 3)}  # the newest 3 (which cover the 2 h)
    dropped_findings = set(plan.drop_findings)
    assert dropped_findings == {s.snapshot_id for s in hourly("eu", 24)[10:]}  # 10 h and older


def test_the_baseline_is_never_pruned_even_when_old():
    # only the 20 h old snapshot was audited: it is the next run's baseline
    snaps = hourly("eu", 24, audited=lambda h: h == 20)
    plan = plan_retention(snaps, settings(keep_snapshots=1, keep_snapshots_for="0s"), NOW)
    baseline = snaps[20].snapshot_id
    assert plan.kept_baselines == {"eu": baseline}
    assert baseline not in plan.drop_data and baseline not in plan.drop_findings


def test_clusters_are_pruned_apart_and_the_current_run_is_protected():
    snaps = hourly("eu", 6) + hourly("us", 6)
    plan = plan_retention(snaps, settings(keep_snapshots=2, keep_snapshots_for="0s"), NOW,
                          protect=[hourly("us", 6)[5].snapshot_id])
    for cluster in ("eu", "us"):
        kept = [s.snapshot_id for s in snaps if s.cluster == cluster and s.snapshot_id not in plan.drop_data]
        assert len(kept) == (2 if cluster == "eu" else 3), kept


def test_keep_snapshots_zero_keeps_all_data():
    plan = plan_retention(hourly("eu", 48), settings(keep_snapshots=0, keep_snapshots_for="0s"), NOW)
    assert plan.drop_data == [] and plan.drop_findings == []


def test_apply_removes_directories_of_every_table_and_incomplete_walks(tmp_path):
    wh = Warehouse(str(tmp_path))
    old, new = "20261101T000000Z-eu", "20261122T110000Z-eu"
    killed = "20261101T010000Z-eu"  # no manifest: a walk that was killed
    for sid in (old, new):
        wh.write_json(wh.manifest_path(sid), {"snapshot_id": sid, "cluster": "eu",
                                              "started_at": snapshot_started(sid).isoformat()})
        for table in ("brokers", "audit_partitions"):
            wh.write_json(f"{wh.table_dir(table, sid)}/part.json", {})
        wh.write_json(f"{wh.findings_dir(sid)}/part.json", {})
        (tmp_path / "findings" / f"snapshot_id={sid}" / "_SUCCESS").touch()
        wh.write_json(wh.summary_path(sid), {})
    (tmp_path / "snapshots" / f"snapshot_id={killed}").mkdir()
    plan = apply_retention(wh, settings(keep_snapshots=1, keep_snapshots_for="1h", keep_findings_for="30d"), NOW)
    assert sorted(plan.drop_data) == [old, killed]
    assert not (tmp_path / "snapshots" / f"snapshot_id={old}").exists()
    assert not (tmp_path / "snapshots" / f"snapshot_id={killed}").exists()
    assert not (tmp_path / "tables" / "audit_partitions" / f"snapshot_id={old}").exists()
    assert (tmp_path / "findings" / f"snapshot_id={old}").exists()  # findings outlive raw data
    assert (tmp_path / "snapshots" / f"snapshot_id={new}").exists()


def hourly_histories(cluster: str, hours: int) -> list[StoredHistory]:
    return [StoredHistory(f"{NOW - timedelta(hours=h, minutes=1):%Y%m%dT%H%M%SZ}-{cluster}", cluster,
                          NOW - timedelta(hours=h, minutes=1), complete=True) for h in range(hours)]


def test_histories_lose_their_change_table_then_go_and_the_newest_stays():
    histories = hourly_histories("eu", 24) + hourly_histories("us", 1)
    old_us = StoredHistory("20261120T000000Z-us", "us", NOW - timedelta(days=2), complete=True)
    died = StoredHistory("20261122T080000Z-x", None, NOW - timedelta(hours=4), complete=False)
    plan = plan_history_retention([*histories, old_us, died], settings(), NOW, RetentionPlan())
    eu = [h.history_id for h in hourly_histories("eu", 24)]
    assert plan.drop_history_changes == eu[2:10]  # 2 h and older, younger than 10 h
    assert set(plan.drop_histories) == {*eu[10:], old_us.history_id, died.history_id}
    alone = plan_history_retention([old_us], settings(), NOW, RetentionPlan())  # the newest of its cluster
    assert alone.drop_histories == [] and alone.drop_history_changes == []


def test_apply_prunes_history_folders_and_their_data_docs_pages(tmp_path):
    import json

    wh = Warehouse(str(tmp_path))
    ids = {"new": "20261122T115900Z-aaaa", "middle": "20261122T085900Z-bbbb", "old": "20261121T115900Z-cccc"}
    for history_id in ids.values():
        folder = tmp_path / "history" / history_id
        (folder / "changes").mkdir(parents=True)
        (folder / "intervals").mkdir()
        (folder / "history.json").write_text(json.dumps({"history_id": history_id, "cluster": "eu"}))
        page = tmp_path / "data_docs" / "history" / f"{history_id}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html></html>")
    plan = apply_retention(wh, settings(), NOW)
    assert plan.drop_history_changes == [ids["middle"]] and plan.drop_histories == [ids["old"]]
    assert (tmp_path / "history" / ids["new"] / "changes").is_dir()
    assert not (tmp_path / "history" / ids["middle"] / "changes").exists()
    assert (tmp_path / "history" / ids["middle"] / "intervals").is_dir()
    assert not (tmp_path / "history" / ids["old"]).exists()
    assert not (tmp_path / "data_docs" / "history" / f"{ids['old']}.html").exists()
    assert (tmp_path / "data_docs" / "history" / f"{ids['new']}.html").exists()
