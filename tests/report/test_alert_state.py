"""What the alerts leave in the warehouse and show: the cluster's state, runs/<id>/alerts.json, the summary's
``alerts`` and its text, and the Data Docs page of firing, pending and resolved findings."""

from __future__ import annotations

from pathlib import Path

from kafka_zk_audit.contract.settings import parse_config
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert_state import plan_lifecycle, read_alerts, read_state, record_alerts, summary_of
from kafka_zk_audit.report.alerts_page import link_alerts_in_data_docs, write_alerts_page
from kafka_zk_audit.report.summary import format_summary, summarize_run
from tests.report.test_alert import NOT_IN_ISR, OFFLINE, S1, S2, S3, UNDER, write_snapshot

S4 = "20250101T030000Z"
WAIT_FOR_URPS = parse_config({"alerts": {"for": {"under_replicated": "90m"}}})


def alert(wh: Warehouse, snapshot_id: str, deliveries: list[dict] | None = None) -> dict:
    lifecycle, previous = plan_lifecycle(wh, snapshot_id, "default", WAIT_FOR_URPS)
    return record_alerts(wh, lifecycle, previous, deliveries or [])


def test_state_alerts_json_summary_and_page(tmp_path: Path):
    wh = Warehouse(str(tmp_path / "warehouse"))
    for snapshot_id, baseline in ((S1, None), (S2, S1), (S3, S2)):
        write_snapshot(wh, snapshot_id, baseline)
    write_snapshot(wh, S4, S3, findings=[(OFFLINE, S1), (UNDER, S1)])  # leader_not_in_isr and the rest fixed
    alert(wh, S1)
    alert(wh, S2)
    at_s3 = alert(wh, S3)  # the under-replicated partition, first seen at S1, outlived its 90 minutes
    [urp] = [e for e in at_s3["lifecycle"]["firing"] if e["firing_since"] == S3]
    assert urp["check_id"] == "under_replicated" and urp["age_s"] == 2 * 3600 and urp["for_s"] == 90 * 60
    assert at_s3["lifecycle"]["counts"]["triggered"] == 1
    record = alert(wh, S4, [{"route": 0, "channel": "pagerduty", "target": "pd", "triggers": [],
                             "resolves": ["k"], "ok": False}])

    assert record == read_alerts(wh, S4) and record["state"] == wh.alert_state_path("default")
    counts = record["lifecycle"]["counts"]
    assert counts == {"firing": 2, "pending": 0, "resolved": 3, "triggered": 0, "healed_while_pending": 0}
    state = read_state(wh, "default")
    assert state["snapshot_id"] == S4 and sorted(e["check_id"] for e in state["firing"].values()) == [
        "offline_partition", "under_replicated"]
    assert record["retry_next_run"] == {"triggers": [], "resolves": ["k"]}

    summary, _ = summarize_run(wh, S4, {"success": False, "failed_expectations": 1})
    assert summary["alerts"] == summary_of(record)
    assert summary["alerts"]["deliveries"] == {"sent": 0, "failed": 1}
    resolved = {e["check_id"]: e for e in summary["alerts"]["resolved"]}
    assert resolved["leader_not_in_isr"]["lasted_s"] == 2 * 3600 and resolved["leader_not_in_isr"]["resolved_in"] == S4
    text = format_summary(summary)
    assert "alerts: 2 firing (0 started now), 0 pending, 3 resolved, 0 healed while pending" in text
    assert f"  resolved [error] leader_not_in_isr topic payments partition 3 at {NOT_IN_ISR['path']}" in text
    assert "after 2h00m" in text

    page = write_alerts_page(wh, [S4])
    assert page == f"{wh.data_docs_dir}/alerts/index.html"
    html = Path(page).read_text()
    for fragment in ('id="default">default</h2>', "3 resolved", "Resolved at this snapshot", "2h00m (2h00m)",
                     resolved["leader_not_in_isr"]["key"]):
        assert fragment in html, fragment
    assert link_alerts_in_data_docs(wh) is False  # no Data Docs site yet: nothing to link from
    Path(wh.data_docs_index).write_text("<html><body><p>site</p></body></html>")
    assert link_alerts_in_data_docs(wh) and 'href="alerts/index.html"' in Path(wh.data_docs_index).read_text()


def test_no_alerts_no_summary_key_and_no_page(tmp_path: Path):
    wh = Warehouse(str(tmp_path / "warehouse"))
    write_snapshot(wh, S1, None)
    summary, _ = summarize_run(wh, S1, None)
    assert summary["alerts"] is None and "alerts:" not in format_summary(summary)
    assert write_alerts_page(wh, [S1]) is None
