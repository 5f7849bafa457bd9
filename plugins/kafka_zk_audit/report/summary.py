"""The run summary of the contract, ``<warehouse>/runs/<id>/summary.json``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.readiness import NOT_STARTED
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert_state import read_alerts, summary_of
from kafka_zk_audit.report.lifecycle import format_lifecycle

NO_VERDICT = "the gate gave no verdict: it did not finish validating; see the gate task's log"


def build_summary(manifest: dict[str, Any], audit: dict[str, Any] | None, verdict: dict[str, Any] | None,
                  data_docs: str, finished_at: datetime | None = None,
                  alerts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Assemble summary.json from the snapshot manifest, the audit figures, the gate verdict and the alerts
    (``runs/<id>/alerts.json``, None when they were not sent)."""
    audit = audit or {}
    checks = audit.get("checks", {})
    gate = verdict or {"success": False, "failed_expectations": None, "error": NO_VERDICT}
    return {
        "snapshot_id": manifest["snapshot_id"],
        "started_at": manifest["started_at"],
        "finished_at": (finished_at or datetime.now(UTC)).isoformat(),
        "znodes": manifest["znodes"],
        "zxid_window": manifest["zxid_window"],
        "checks": {check_id: int(checks.get(check_id, 0)) for check_id in CHECK_IDS},
        "new_findings": audit.get("new_findings", 0),
        "resolved_findings": audit.get("resolved_findings", 0),
        "baseline_snapshot_id": audit.get("baseline_snapshot_id"),
        "gate": {
            "success": bool(gate.get("success")),
            "failed_expectations": gate.get("failed_expectations"),
            "non_gating_failed_expectations": gate.get("non_gating_failed_expectations", 0),
            **({"error": gate["error"]} if gate.get("error") else {}),
        },
        "data_docs": data_docs,
        # ZK -> KRaft migration readiness (audit/readiness.py): target, verdict, phase, rows per level; None when off
        "readiness": audit.get("readiness"),
        # the alerts' lifecycle (report/lifecycle.py): firing, pending and resolved findings with their durations
        "alerts": summary_of(alerts),
    }


class AuditIncomplete(RuntimeError):
    """The run produced no audit to summarize (no snapshot, or the Spark app did not finish)."""


def summarize_run(warehouse: Warehouse, snapshot_id: str | None, verdict: dict[str, Any] | None) -> tuple[dict, str]:
    """Build and write ``summary.json`` of one run; ``AuditIncomplete`` says which stage left nothing to summarize."""
    if not snapshot_id or snapshot_id == "None":
        raise AuditIncomplete("no snapshot was taken; see the snapshot task's log")
    manifest = warehouse.read_json(warehouse.manifest_path(snapshot_id))
    audit_path = f"{warehouse.run_dir(snapshot_id)}/audit.json"
    if not warehouse.exists(audit_path):
        raise AuditIncomplete(f"the Spark audit of {snapshot_id} did not complete; see the audit task's log")
    summary = build_summary(manifest, warehouse.read_json(audit_path), verdict, warehouse.data_docs_index,
                            alerts=read_alerts(warehouse, snapshot_id))
    return summary, write_summary(warehouse, summary)


def write_summary(warehouse: Warehouse, summary: dict[str, Any]) -> str:
    path = warehouse.summary_path(summary["snapshot_id"])
    warehouse.write_json(path, summary)
    return path


def format_summary(summary: dict[str, Any]) -> str:
    """A short human rendering: non-zero checks, then gate and docs."""
    lines = [
        f"snapshot {summary['snapshot_id']}: {summary['znodes']} znodes, zxid window {summary['zxid_window']}",
        f"baseline: {summary.get('baseline_snapshot_id') or 'none (first snapshot)'}; "
        f"new findings {summary['new_findings']}, resolved {summary['resolved_findings']}",
    ]
    found = {k: v for k, v in summary["checks"].items() if v}
    lines.append("findings per check:" if found else "findings per check: none")
    lines.extend(f"  {check_id}: {count}" for check_id, count in found.items())
    gate = summary["gate"]
    if gate.get("error"):
        lines.append(f"gate: ERROR ({gate['error']})")
    else:
        lines.append(
            f"gate: {'passed' if gate['success'] else 'FAILED'} "
            f"({gate['failed_expectations']} gating expectation(s) failed, "
            f"{gate.get('non_gating_failed_expectations', 0)} warning/info)"
        )
    readiness = summary.get("readiness")
    if readiness:
        counts = ", ".join(f"{n} {level}" for level, n in readiness["counts"].items() if n) or "nothing found"
        phase = "" if readiness["phase"] == NOT_STARTED else f"; migration phase {readiness['phase']}"
        lines.append(f"ZK -> KRaft readiness (target {readiness['target_version']}): "
                     f"{readiness['verdict'].replace('_', ' ')} ({counts}){phase}")
    if summary.get("alerts"):
        lines.extend(format_alerts(summary["alerts"]))
    lines.append(f"data docs: {summary['data_docs']}")
    return "\n".join(lines)


def format_alerts(alerts: dict[str, Any], keep: int = 20) -> list[str]:
    """The alerts' counts, then the first ``keep`` firing, pending and resolved findings with their durations."""
    lines = format_lifecycle(alerts)
    if len(lines) <= keep + 1:
        return lines
    return [*lines[:keep + 1], f"  … and {len(lines) - keep - 1} more (summary.json lists them)"]
