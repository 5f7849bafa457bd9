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


def test_the_data_docs_link_the_histories_only_once_there_are_histories(tmp_path):
    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit.report.history_index import (
        DATA_DOCS_LINK_ID,
        link_history_in_data_docs,
        refresh_history_index,
        write_history_index,
    )

    warehouse = Warehouse(str(tmp_path / "wh"))
    page = "<html><body><h1>Data Docs</h1></body></html>"
    warehouse.write_text(warehouse.data_docs_index, page)
    # no history yet: no index of histories, no link in the Data Docs
    assert refresh_history_index(warehouse) is None and link_history_in_data_docs(warehouse) is False
    assert (tmp_path / "wh" / "data_docs" / "index.html").read_text() == page
    warehouse.write_json(f"{warehouse.history_dir('h1')}/history.json",
                         {"history_id": "h1", "cluster": "east", "txns": 3, "checks": {"x": {"listed": 2}}})
    write_history_index(warehouse)
    assert link_history_in_data_docs(warehouse) and link_history_in_data_docs(warehouse)
    index = (tmp_path / "wh" / "data_docs" / "index.html").read_text()
    assert index.count(f'id="{DATA_DOCS_LINK_ID}"') == 1 and 'href="history/index.html"' in index
    assert 'href="h1.html"' in (tmp_path / "wh" / "data_docs" / "history" / "index.html").read_text()
