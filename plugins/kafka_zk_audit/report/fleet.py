"""The fleet summary of one DAG run: which clusters are red, which could not be audited, what is new.

Each audited cluster gets its own ``runs/<snapshot id>/summary.json`` (``report.summary``); the run gets
``runs/fleet-<UTC start>[-<label>]/fleet.json`` listing every cluster of the run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.summary import AuditIncomplete, summarize_run


def snapshot_verdict(verdict: dict[str, Any] | None, snapshot_id: str) -> dict[str, Any] | None:
    """One snapshot's part of the gate's verdict (the gate validates every snapshot of the run at once)."""
    if not verdict:
        return None
    per_snapshot = verdict.get("snapshots")
    if per_snapshot is None:  # a gate over a single snapshot
        return verdict
    return per_snapshot.get(snapshot_id)


def _fleet_id(snapshot_ids: list[str], now: datetime) -> str:
    stamp = min((s[:16] for s in snapshot_ids), default=f"{now:%Y%m%dT%H%M%SZ}")
    labels = {s.rsplit("-", 1)[-1] for s in snapshot_ids if s.count("-") >= 2}
    return f"fleet-{stamp}" + (f"-{labels.pop()}" if len(labels) == 1 else "")


def asset_extra(summary: dict[str, Any]) -> dict[str, Any]:
    """What a cluster's Asset event carries: the summary's counts."""
    return {
        "snapshot_id": summary["snapshot_id"],
        "gate_success": summary["gate"]["success"],
        "new_findings": summary["new_findings"],
        "resolved_findings": summary["resolved_findings"],
        "findings": sum(summary["checks"].values()),
        "checks": {check_id: n for check_id, n in summary["checks"].items() if n},
    }


def summarize_fleet(warehouse: Warehouse, clusters: list[str], snapshot_ids: list[str],
                    verdict: dict[str, Any] | None, run_id: str = "", now: datetime | None = None) -> tuple[dict, str]:
    """Write every audited cluster's summary and the fleet summary; returns (fleet summary + text, path)."""
    now = now or datetime.now(UTC)
    by_cluster: dict[str, dict[str, Any]] = {name: {"status": "not audited"} for name in clusters}
    for snapshot_id in snapshot_ids:
        manifest = warehouse.read_json(warehouse.manifest_path(snapshot_id))
        name = manifest.get("cluster") or snapshot_id
        entry = by_cluster.setdefault(name, {})
        entry["snapshot_id"] = snapshot_id
        try:
            summary, path = summarize_run(warehouse, snapshot_id, snapshot_verdict(verdict, snapshot_id))
        except AuditIncomplete as error:
            entry.update(status="not audited", reason=str(error))
            continue
        gate = summary["gate"]
        entry.update(
            status="error" if gate.get("error") else ("green" if gate["success"] else "red"),
            summary=path,
            new_findings=summary["new_findings"],
            resolved_findings=summary["resolved_findings"],
            findings=sum(summary["checks"].values()),
            failed_expectations=gate.get("failed_expectations"),
            asset_extra=asset_extra(summary),
        )
    for entry in by_cluster.values():
        entry.setdefault("reason", None if entry["status"] != "not audited"
                         else "no snapshot: the cluster's snapshot task failed (see its log and alert)")
    red = sorted(n for n, e in by_cluster.items() if e["status"] in ("red", "error"))
    missing = sorted(n for n, e in by_cluster.items() if e["status"] == "not audited")
    fleet = {
        "run_id": run_id,
        "finished_at": now.isoformat(),
        "clusters": by_cluster,
        "red": red,
        "not_audited": missing,
        "green": sorted(n for n, e in by_cluster.items() if e["status"] == "green"),
        "data_docs": warehouse.data_docs_index,
    }
    path = f"{warehouse.run_dir(_fleet_id(snapshot_ids, now))}/fleet.json"
    warehouse.write_json(path, fleet)
    return {**fleet, "text": format_fleet(fleet)}, path


def format_fleet(fleet: dict[str, Any]) -> str:
    """One line per cluster, red and unaudited first."""
    order = {"not audited": 0, "error": 1, "red": 2, "green": 3}
    lines = [f"fleet: {len(fleet['clusters'])} cluster(s); red {len(fleet['red'])}, "
             f"not audited {len(fleet['not_audited'])}, green {len(fleet['green'])}"]
    for name, entry in sorted(fleet["clusters"].items(), key=lambda item: (order.get(item[1]["status"], 9), item[0])):
        if entry["status"] == "not audited":
            lines.append(f"  {name}: NOT AUDITED ({entry.get('reason')})")
        else:
            lines.append(f"  {name}: {entry['status'].upper()}: {entry['findings']} finding(s), "
                         f"{entry['new_findings']} new, {entry['resolved_findings']} resolved; "
                         f"{entry['snapshot_id']}")
    lines.append(f"data docs: {fleet['data_docs']}")
    return "\n".join(lines)

