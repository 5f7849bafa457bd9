"""summary.json: every catalogue id, the gate's verdict, and a gate that gave none."""

from __future__ import annotations

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.report.summary import NO_VERDICT, build_summary, format_summary

MANIFEST = {"snapshot_id": "20250101T000000Z", "started_at": "2025-01-01T00:00:00+00:00", "znodes": 42,
            "zxid_window": [1, 9]}
AUDIT = {"checks": {"leader_not_in_isr": 1, "under_replicated": 2}, "new_findings": 3, "resolved_findings": 0,
         "baseline_snapshot_id": None}


def test_summary_has_every_check_and_the_verdict():
    verdict = {"success": False, "failed_expectations": 1, "non_gating_failed_expectations": 1}
    summary = build_summary(MANIFEST, AUDIT, verdict, "/wh/data_docs/index.html")
    assert list(summary["checks"]) == list(CHECK_IDS)
    assert summary["checks"]["under_replicated"] == 2 and summary["checks"]["offline_partition"] == 0
    assert summary["gate"] == {"success": False, "failed_expectations": 1, "non_gating_failed_expectations": 1}
    text = format_summary(summary)
    assert "gate: FAILED (1 gating expectation(s) failed, 1 warning/info)" in text
    assert "  under_replicated: 2" in text and "offline_partition" not in text


def test_a_gate_without_verdict_is_an_error_not_a_failed_validation():
    summary = build_summary(MANIFEST, AUDIT, None, "/wh/data_docs/index.html")
    assert summary["gate"]["success"] is False and summary["gate"]["failed_expectations"] is None
    assert summary["gate"]["error"] == NO_VERDICT
    assert f"gate: ERROR ({NO_VERDICT})" in format_summary(summary)
