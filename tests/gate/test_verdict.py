"""The verdict over a real checkpoint result: severities of catalogue and user expectations, and what gates.

``tests/data/gate/checkpoint_result.json`` holds what a real gate run produced (GX 1.24.1): the provider's
``describe_dict`` and the suites' description. Catalogue checks leader_not_in_isr (error), under_replicated
(warning) and preferred_leader_not_leader (info) were planted; the brokers suite had two user expectations
(3 brokers, row count min 4 with ``meta.severity: error``; broker_id in [1, 2] with GX ``severity: warning``)
and the user suite topic_rules on audit_topics three (regex ``^x`` with ``meta.severity: info``, a not-null
on a column that does not exist, without any severity; a row count min 1, which passes).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kafka_zk_audit.gate.verdict import NOT_EVALUATED, build_verdict, expectation_severity, failed_expectations

CAPTURED = json.loads((Path(__file__).resolve().parents[1] / "data" / "gate" / "checkpoint_result.json").read_text())
GATING = ("critical", "error")
DOCS = "/wh/data_docs/index.html"


@pytest.fixture
def result() -> dict[str, Any]:
    return copy.deepcopy(CAPTURED["result"])


@pytest.fixture
def suites() -> list[dict[str, Any]]:
    return copy.deepcopy(CAPTURED["suites"])


def by_name(failed: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(f["suite"], f["check_id"] or f"{f['expectation_type']}({f['column']})"): f for f in failed}


def test_the_captured_run_has_the_shape_the_verdict_reads(result, suites):
    """describe_dict names neither the suite nor meta/severity: that is why the verdict pairs it with the suites."""
    first = result["validation_results"][0]
    assert set(first) == {"success", "statistics", "expectations", "result_url"}
    assert set(first["expectations"][0]) == {"expectation_type", "success", "kwargs", "result"}
    assert first["expectations"][0]["kwargs"]["batch_id"] == "kafka_zk_audit_warehouse-audit_partitions"
    assert [s["suite"] for s in suites] == ["partitions", "brokers", "topic_rules"]


def test_every_failed_expectation_with_its_severity(result, suites):
    verdict = build_verdict(result, suites, {}, GATING, DOCS)
    failed = by_name(verdict["failed"])
    expected = {  # (suite, check or type(column)): severity, gating, unexpected rows
        ("partitions", "leader_not_in_isr"): ("error", True, 1),
        ("partitions", "under_replicated"): ("warning", False, 2),
        ("partitions", "preferred_leader_not_leader"): ("info", False, 1),
        ("brokers", "expect_table_row_count_to_be_between(None)"): ("error", True, None),
        ("brokers", "expect_column_values_to_be_in_set(broker_id)"): ("warning", False, 1),
        ("topic_rules", "expect_column_values_to_not_be_null(no_such_column)"): ("error", True, None),
        ("topic_rules", "expect_column_values_to_match_regex(topic)"): ("info", False, 5),
    }
    assert {key: (f["severity"], f["gating"], f["unexpected_count"]) for key, f in failed.items()} == expected
    assert verdict["success"] is False
    assert (verdict["failed_expectations"], verdict["non_gating_failed_expectations"]) == (3, 4)
    assert verdict["evaluated_expectations"] == 12 + 4 + 3  # partitions checks, brokers 2 + 2 user, topic_rules
    assert verdict["data_docs"] == DOCS


def test_failed_entries_name_suite_table_type_and_column(result, suites):
    failed = by_name(failed_expectations(result, suites, {}, GATING))
    row_count = failed[("brokers", "expect_table_row_count_to_be_between(None)")]
    assert row_count["audit_table"] == "audit_brokers" and row_count["check_id"] is None
    assert row_count["observed_value"] == 3
    assert row_count["label"] == "brokers: expect_table_row_count_to_be_between, observed 3"
    catalogue = failed[("partitions", "leader_not_in_isr")]
    assert catalogue["expectation_type"] == "expect_column_values_to_be_in_set"
    assert catalogue["column"] == "leader_not_in_isr" and catalogue["audit_table"] == "audit_partitions"
    assert catalogue["label"] == "partitions: leader_not_in_isr, 1 unexpected rows"
    broken = failed[("topic_rules", "expect_column_values_to_not_be_null(no_such_column)")]
    assert broken["audit_table"] == "audit_topics" and broken["exception"] == NOT_EVALUATED
    assert broken["label"].startswith("topic_rules: expect_column_values_to_not_be_null(no_such_column), GX could")


def test_settings_overrides_apply_to_catalogue_expectations_only(result, suites):
    overrides = {"under_replicated": "critical", "leader_not_in_isr": "warning", "broker_id": "critical"}
    failed = by_name(failed_expectations(result, suites, overrides, GATING))
    assert failed[("partitions", "under_replicated")]["severity"] == "critical"
    assert failed[("partitions", "under_replicated")]["gating"] is True
    assert failed[("partitions", "leader_not_in_isr")]["gating"] is False
    assert failed[("brokers", "expect_column_values_to_be_in_set(broker_id)")]["severity"] == "warning"


def test_only_the_user_expectation_gates_when_its_meta_says_error(result, suites):
    """Drop the planted catalogue failures: the run fails because of the user's row-count expectation alone."""
    partitions = result["validation_results"][0]
    for outcome in partitions["expectations"]:
        outcome["success"] = True
    topic_rules = result["validation_results"][2]
    topic_rules["expectations"] = [e for e in topic_rules["expectations"]
                                   if e["kwargs"].get("column") != "no_such_column"]
    suites[2]["expectations"] = [e for e in suites[2]["expectations"] if e["column"] != "no_such_column"]
    verdict = build_verdict(result, suites, {}, GATING, DOCS)
    assert [f["label"] for f in verdict["failed"] if f["gating"]] == [
        "brokers: expect_table_row_count_to_be_between, observed 3"
    ]
    suites[1]["expectations"][2]["severity"] = "warning"
    verdict = build_verdict(result, suites, {}, GATING, DOCS)
    assert verdict["success"] is True and verdict["failed_expectations"] == 0
    assert verdict["non_gating_failed_expectations"] == 3  # row count, broker_id set, topic regex


@pytest.mark.parametrize(("meta", "gx", "expected"), [
    ("critical", None, "critical"), ("warning", "critical", "warning"), ("info", None, "info"),
    (None, "critical", "critical"), (None, "warning", "warning"), (None, "info", "info"),
    (None, "CRITICAL", "critical"), (None, None, "error"), ("fatal", None, "error"), (None, "error", "error"),
])
def test_user_expectation_severity(meta, gx, expected):
    described = {"type": "expect_table_row_count_to_be_between", "check_id": None, "severity": meta, "gx_severity": gx}
    assert expectation_severity(described, {}) == expected


def test_catalogue_severity_ignores_the_file_and_takes_the_override():
    described = {"type": "expect_column_values_to_be_in_set", "check_id": "under_replicated",
                 "severity": "critical", "gx_severity": "critical"}
    assert expectation_severity(described, {}) == "warning"
    assert expectation_severity(described, {"under_replicated": "info"}) == "info"


def test_results_in_another_order_pair_by_type_and_kwargs(result, suites):
    expected = failed_expectations(result, suites, {}, GATING)
    for validation in result["validation_results"]:
        validation["expectations"].reverse()
    reordered = failed_expectations(result, suites, {}, GATING)
    assert sorted(map(json.dumps, reordered)) == sorted(map(json.dumps, expected))


def test_without_the_suites_catalogue_checks_are_recognised_by_column(result):
    for suites in (None, CAPTURED["suites"][:2]):  # none, or not this checkpoint's
        failed = by_name(failed_expectations(result, suites, {}, GATING))
        assert failed[("partitions", "under_replicated")]["severity"] == "warning"
        user = [f for f in failed.values() if f["check_id"] is None]
        assert {f["severity"] for f in user} == {"error"}
        assert {f["audit_table"] for f in user} == {"audit_brokers", "audit_topics"}
        assert {f["suite"] for f in user} == {None}


def test_a_passing_result_passes(result, suites):
    for validation in result["validation_results"]:
        validation["success"] = True
        for outcome in validation["expectations"]:
            outcome["success"] = True
    verdict = build_verdict(result, suites, {}, GATING, DOCS)
    assert verdict["success"] is True and verdict["failed"] == [] and "error" not in verdict


def test_a_result_without_validations_fails():
    for empty in ({}, {"success": True, "validation_results": []}):
        verdict = build_verdict(empty, [], {}, GATING, DOCS)
        assert verdict["success"] is False and "no validation results" in verdict["error"]


def test_gating_severities_come_from_the_settings(result, suites):
    verdict = build_verdict(result, suites, {}, ("critical",), DOCS)
    assert verdict["success"] is True and verdict["non_gating_failed_expectations"] == 7
    verdict = build_verdict(result, suites, {}, ("critical", "error", "warning", "info"), DOCS)
    assert verdict["failed_expectations"] == 7
