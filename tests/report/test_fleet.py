"""The fleet summary: per-cluster summaries written, red and unaudited clusters named, Asset extras."""

from __future__ import annotations

from datetime import UTC, datetime

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.fleet import format_fleet, snapshot_verdict, summarize_fleet

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def stored(wh: Warehouse, snapshot_id: str, cluster: str, findings: dict[str, int], audited: bool = True) -> None:
    wh.write_json(wh.manifest_path(snapshot_id), {"snapshot_id": snapshot_id, "cluster": cluster, "znodes": 10,
                                                  "started_at": NOW.isoformat(), "zxid_window": [1, 9]})
    if audited:
        wh.write_json(f"{wh.run_dir(snapshot_id)}/audit.json", {
            "checks": {c: findings.get(c, 0) for c in CHECK_IDS}, "new_findings": sum(findings.values()),
            "resolved_findings": 0, "baseline_snapshot_id": None})


def verdict(success: bool) -> dict:
    return {"success": success, "failed_expectations": 0 if success else 1, "non_gating_failed_expectations": 0}


def test_fleet_summary_of_green_red_broken_and_unreachable_clusters(tmp_path):
    wh = Warehouse(str(tmp_path))
    ids = {"eu": "20261122T120000Z-eu-r1", "us": "20261122T120000Z-us-r1", "ap": "20261122T120000Z-ap-r1"}
    stored(wh, ids["eu"], "eu", {})
    stored(wh, ids["us"], "us", {"leader_not_in_isr": 2})
    stored(wh, ids["ap"], "ap", {}, audited=False)  # its Spark audit failed
    gate = {"success": False, "snapshots": {ids["eu"]: verdict(True), ids["us"]: verdict(False)}}
    fleet, path = summarize_fleet(wh, ["eu", "us", "ap", "dead"], list(ids.values()), gate, run_id="r", now=NOW)
    assert path.endswith("runs/fleet-20261122T120000Z-r1/fleet.json")
    assert fleet["green"] == ["eu"] and fleet["red"] == ["us"] and fleet["not_audited"] == ["ap", "dead"]
    assert "Spark audit" in fleet["clusters"]["ap"]["reason"]
    assert "snapshot task failed" in fleet["clusters"]["dead"]["reason"]
    assert fleet["clusters"]["us"]["asset_extra"]["checks"] == {"leader_not_in_isr": 2}
    assert (tmp_path / "runs" / ids["eu"] / "summary.json").exists()
    text = format_fleet(fleet)
    assert text.index("dead: NOT AUDITED") < text.index("us: RED") < text.index("eu: GREEN")


def test_single_snapshot_verdicts_pass_through():
    single = verdict(True)
    assert snapshot_verdict(single, "x") is single
    assert snapshot_verdict(None, "x") is None
    assert snapshot_verdict({"snapshots": {"a": single}}, "b") is None
