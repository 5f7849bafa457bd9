"""One gate run: the run's audited snapshots validated by one checkpoint, and the fleet's verdict (no Airflow).

:func:`run_gate` is what the DAG's gate task does: it leaves out the snapshots whose audit did not complete, loads
the suites (a broken suite file fails before any validation runs), plans the validations under the warehouse's
``gate`` lock, runs the checkpoint in the warehouse's File Data Context (which updates the Data Docs) and judges
each cluster with its own settings (``verdict.build_fleet_verdict``). :func:`gate_failure` says why a verdict fails
the run, or None.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from kafka_zk_audit.contract.lock import warehouse_lock
from kafka_zk_audit.contract.settings import AuditConfig
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.gate.context import configure_checkpoint, file_data_context, plan_gate, settings_by_cluster
from kafka_zk_audit.gate.suites import expectations_dir, load_suites
from kafka_zk_audit.gate.verdict import build_fleet_verdict

module_log = logging.getLogger(__name__)


class NothingAudited(Exception):
    """No snapshot of the run has a completed audit: there is nothing to validate."""


def audited_snapshots(warehouse: Warehouse, snapshot_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(audited, not audited) of the run's snapshots: a snapshot is audited when its ``audit.json`` exists."""
    audited = [sid for sid in snapshot_ids if warehouse.exists(f"{warehouse.run_dir(sid)}/audit.json")]
    return audited, sorted(set(snapshot_ids) - set(audited))


def run_checkpoint(warehouse: Warehouse, snapshot_ids: Sequence[str], plan: Any) -> dict[str, Any]:
    """Run the planned checkpoint in the warehouse's File Data Context; its result as plain JSON (``describe_dict``).

    The context's teardown (Data Docs made offline, copied to a remote warehouse) runs once the checkpoint is done.
    """
    contexts = file_data_context(warehouse)
    context = next(contexts)
    checkpoint = configure_checkpoint(context, warehouse=warehouse, snapshot_id=list(snapshot_ids), plan=plan)
    result = checkpoint.run(batch_parameters={})
    for _ in contexts:  # the generator's teardown
        pass
    return json.loads(json.dumps(result.describe_dict(), default=str))


def run_gate(warehouse: Warehouse, snapshot_ids: Sequence[str], cfg: AuditConfig, suites_dir: str | None = None,
             *, log: Any = None) -> dict[str, Any]:
    """Validate the audited snapshots of ``snapshot_ids``; returns the fleet's verdict (``build_fleet_verdict``).

    Logs (to ``log``, default this module's logger) which snapshots are left out, the suites, the validations and
    every failed expectation, then the Data Docs. Raises :class:`NothingAudited` when no snapshot was audited and
    ``SuiteFileError`` for a broken suite file.
    """
    log = log or module_log
    audited, skipped = audited_snapshots(warehouse, snapshot_ids)
    if skipped:
        log.warning("not validated (their audit did not complete): %s", ", ".join(skipped))
    if not audited:
        raise NothingAudited("no audited snapshot to validate; see the snapshot and audit tasks")
    suites = load_suites(dict(cfg.severity_overrides), suites_dir or None)
    user_suites = [loaded.name for loaded in suites if loaded.entity is None]
    user_expectations = sum(1 for loaded in suites for e in loaded.expectations if not e["check_id"])
    log.info("suites from %s: %d (user suites: %s); %d user expectation(s); snapshots: %s",
             expectations_dir(suites_dir or None), len(suites), ", ".join(user_suites) or "none", user_expectations,
             ", ".join(audited))
    with warehouse_lock(warehouse, "gate"):
        plan = plan_gate(warehouse, audited, suites, drift_bounds=lambda cluster: cfg.for_cluster(cluster).drift)
        log.info("%d validation(s) for %d snapshot(s): %d suite(s) over the run's tables, %d per snapshot",
                 len(plan.validations), len(audited), sum(1 for v in plan.validations if v.per_run),
                 sum(1 for v in plan.validations if not v.per_run))
        result = run_checkpoint(warehouse, audited, plan)
    verdict = build_fleet_verdict(result, plan.described(), plan.clusters, settings_by_cluster(cfg),
                                  warehouse.data_docs_index)
    for item in verdict["failed"]:
        log.warning("%s%s expectation failed (%s): %s", f"[{item['cluster']}] " if item.get("cluster") else "",
                    item["severity"], "gating" if item["gating"] else "not gating", item["label"])
    log.info("Data Docs: %s", verdict["data_docs"])
    return verdict


def gate_failure(verdict: dict[str, Any]) -> str | None:
    """Why the verdict fails the run (an error, or clusters with failed expectations of a gating severity); None
    when it passes."""
    if verdict.get("error"):
        return f"audit gate failed: {verdict['error']}"
    red = [f"{v.get('cluster') or sid} ({v['failed_expectations']})" for sid, v in verdict["snapshots"].items()
           if not v["success"]]
    if not red:
        return None
    names = "; ".join(f["label"] for f in verdict["failed"] if f["gating"])
    return (f"audit gate failed for {', '.join(red)}: {verdict['failed_expectations']} expectation(s) of a gating "
            f"severity failed: {names}; see {verdict['data_docs']}")
