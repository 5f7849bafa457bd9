"""The gate's verdict: which failed expectations gate the run, by severity (pure; no GX, no Airflow).

Great Expectations' own pass/fail ignores an expectation's severity; the audit fails only on failed
expectations whose severity is one of the settings' ``gate.gating_severities``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_zk_audit.contract.catalogue import BY_ID


def failed_expectations(
    result: Mapping[str, Any], severity_overrides: Mapping[str, str], gating: Iterable[str]
) -> list[dict[str, Any]]:
    """One entry per failed expectation of a checkpoint result (``describe_dict``), with its severity."""
    gating = set(gating)
    failed = []
    for validation in result.get("validation_results", []):
        for expectation in validation.get("expectations", []):
            if expectation.get("success"):
                continue
            check_id = (expectation.get("kwargs") or {}).get("column")
            severity = severity_overrides.get(check_id) or (BY_ID[check_id].severity if check_id in BY_ID else "error")
            failed.append({
                "suite": BY_ID[check_id].entity if check_id in BY_ID else validation.get("suite_name"),
                "check_id": check_id,
                "severity": severity,
                "unexpected_count": (expectation.get("result") or {}).get("unexpected_count"),
                "gating": severity in gating,
            })
    return failed


def build_verdict(
    result: Mapping[str, Any], severity_overrides: Mapping[str, str], gating: Iterable[str], data_docs: str
) -> dict[str, Any]:
    """The verdict the gate task pushes to XCom and ``summary.json`` carries under ``gate``."""
    failed = failed_expectations(result, severity_overrides, gating)
    gating_failed = [f for f in failed if f["gating"]]
    return {
        "success": not gating_failed,
        "failed_expectations": len(gating_failed),
        "non_gating_failed_expectations": len(failed) - len(gating_failed),
        "failed": failed,
        "evaluated_expectations": sum(
            (v.get("statistics") or {}).get("evaluated_expectations", 0) for v in result.get("validation_results", [])
        ),
        "data_docs": data_docs,
    }
