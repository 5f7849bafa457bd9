"""A cluster's alert state in the warehouse and the record of what each run's alerts found and sent.

``alerts/<cluster>/state.json`` holds which findings fire (and which are pending), by dedup key, after the last
snapshot whose alerts were sent; ``runs/<id>/alerts.json`` what the alerts of one snapshot found (its
``report.lifecycle``) and every delivery with its outcome. Both are written whole or not at all
(``Warehouse.write_json``); neither holds a secret (channels are named by their connection ids).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kafka_zk_audit.contract.settings import AuditConfig
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert import read_findings
from kafka_zk_audit.report.lifecycle import Lifecycle, compute_lifecycle, next_state

log = logging.getLogger(__name__)

DEFAULT_CLUSTER = "default"


def cluster_of(manifest: Mapping[str, Any]) -> str:
    """The cluster a snapshot belongs to: its fleet name (``default`` for an unnamed one)."""
    return str(manifest.get("cluster") or DEFAULT_CLUSTER)


def read_state(warehouse: Warehouse, cluster: str) -> dict[str, Any] | None:
    """The cluster's alert state, or None before its first alerts."""
    path = warehouse.alert_state_path(cluster)
    return warehouse.read_json(path) if warehouse.exists(path) else None


def read_alerts(warehouse: Warehouse, snapshot_id: str) -> dict[str, Any] | None:
    """``runs/<id>/alerts.json``, or None when the snapshot's alerts were not sent."""
    path = warehouse.alerts_path(snapshot_id)
    return warehouse.read_json(path) if warehouse.exists(path) else None


def plan_lifecycle(warehouse: Warehouse, snapshot_id: str, cluster: str,
                   cfg: AuditConfig) -> tuple[Lifecycle, dict[str, Any] | None]:
    """The lifecycle of the cluster at this audited snapshot, and the state it was computed from."""
    previous = read_state(warehouse, cluster)
    findings = read_findings(warehouse, snapshot_id)
    return compute_lifecycle(cluster, snapshot_id, findings, cfg.alerts.pending_for, previous), previous


def failed_keys(deliveries: Sequence[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """The dedup keys whose trigger, and whose resolve, some channel did not take."""
    failed = [d for d in deliveries if not d.get("ok")]
    return ({k for d in failed for k in d.get("triggers", ())}, {k for d in failed for k in d.get("resolves", ())})


def record_alerts(warehouse: Warehouse, lifecycle: Lifecycle, previous: Mapping[str, Any] | None,
                  deliveries: Sequence[Mapping[str, Any]], now: datetime | None = None) -> dict[str, Any]:
    """Write the cluster's next state (unless the lifecycle is stale) and ``runs/<id>/alerts.json``; returns the
    latter. A trigger or resolve no channel took stays due: the next run sends it again."""
    now = now or datetime.now(UTC)
    not_triggered, not_resolved = failed_keys(deliveries)
    if not lifecycle.stale:
        state = next_state(lifecycle, previous, failed_triggers=not_triggered, failed_resolves=not_resolved, now=now)
        warehouse.write_json(warehouse.alert_state_path(lifecycle.cluster), state)
    record = {"snapshot_id": lifecycle.snapshot_id, "cluster": lifecycle.cluster, "written_at": now.isoformat(),
              "state": warehouse.alert_state_path(lifecycle.cluster), "lifecycle": lifecycle.as_dict(),
              "deliveries": [dict(d) for d in deliveries],
              "retry_next_run": {"triggers": sorted(not_triggered), "resolves": sorted(not_resolved)}}
    warehouse.write_json(warehouse.alerts_path(lifecycle.snapshot_id), record)
    return record


def summary_of(record: Mapping[str, Any] | None, listed: int = 50) -> dict[str, Any] | None:
    """What ``summary.json`` carries of a snapshot's alerts: the counts, the firing, pending and resolved findings
    (at most ``listed`` of each) with their keys and durations, and the deliveries' outcome."""
    if not record:
        return None
    lifecycle = record["lifecycle"]
    deliveries = record.get("deliveries") or []
    return {
        "counts": lifecycle["counts"],
        **{name: lifecycle[name][:listed] for name in ("firing", "pending", "resolved")},
        "deliveries": {"sent": sum(bool(d.get("ok")) for d in deliveries),
                       "failed": sum(not d.get("ok") for d in deliveries)},
        "state": record.get("state"),
    }
