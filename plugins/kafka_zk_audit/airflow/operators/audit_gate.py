"""The Great Expectations gate, on the GX provider's checkpoint operator.

The provider runs the checkpoint in a File Data Context (Data Docs updated by the checkpoint's
action) and pushes the result to XCom. Its own pass/fail ignores expectation severity, so this
operator decides the verdict: only failed expectations of a gating severity fail the task. The
suites (the catalogue's and the user's own) are loaded first, so a broken suite file fails the task
before any validation runs, with a message naming the file.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from great_expectations_provider.common.errors import GXValidationFailed
from great_expectations_provider.operators.validate_checkpoint import GXValidateCheckpointOperator

from kafka_zk_audit.airflow.notifications.task_failure import GateVerdictFailure
from kafka_zk_audit.contract.lock import warehouse_lock
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
from kafka_zk_audit.gate.context import (
    configure_checkpoint,
    file_data_context,
    plan_gate,
    settings_by_cluster,
    split_ids,
)
from kafka_zk_audit.gate.suites import expectations_dir, load_suites
from kafka_zk_audit.gate.verdict import build_fleet_verdict


class AuditGateFailed(AirflowFailException, GateVerdictFailure):
    """Expectations of a gating severity failed (the gate's own alert reports it)."""


def _not_configured(*_: Any) -> Any:
    raise RuntimeError("set at execute time")


class AuditGateOperator(GXValidateCheckpointOperator):
    """Validate the audit tables of the run's snapshots with the suites; fail on failed expectations of a gating
    severity. One checkpoint covers every cluster of the run, one validation per suite over the run's staged tables;
    each cluster is judged with its own settings.

    :param warehouse: warehouse path or URL (default ``$KAFKA_ZK_AUDIT_WAREHOUSE``, else ``./warehouse``)
    :param snapshot_ids: the run's snapshots, comma-separated (templated); those whose audit did not complete
        are left out (their own tasks failed and alerted)
    :param audit_config: audit settings file (severity overrides, gating severities, drift bounds, per-cluster
        overrides); packaged defaults if empty
    :param suites_dir: folder of GX suite files to run instead of the packaged ones (``expectations/``): the
        catalogue's suites, with expectations of your own beside theirs, and suites of your own
    """

    template_fields: Sequence[str] = ("warehouse", "snapshot_ids", "audit_config", "suites_dir")

    def __init__(self, *, warehouse: str | None, snapshot_ids: str | None = None, snapshot_id: str | None = None,
                 audit_config: str | None = None, suites_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(
            configure_checkpoint=_not_configured,
            context_type="file",
            configure_file_data_context=_not_configured,
            **kwargs,
        )
        self.warehouse = warehouse
        self.snapshot_ids = snapshot_ids if snapshot_ids is not None else snapshot_id
        self.audit_config = audit_config
        self.suites_dir = suites_dir

    def execute(self, context: Any) -> dict[str, Any]:
        warehouse = Warehouse(self.warehouse or default_warehouse())
        cfg = load_config(self.audit_config or None)
        audited = [sid for sid in split_ids(self.snapshot_ids or "")
                   if warehouse.exists(f"{warehouse.run_dir(sid)}/audit.json")]
        skipped = sorted(set(split_ids(self.snapshot_ids or "")) - set(audited))
        if skipped:
            self.log.warning("not validated (their audit did not complete): %s", ", ".join(skipped))
        if not audited:
            raise AirflowSkipException("no audited snapshot to validate; see the snapshot and audit tasks")
        suites = load_suites(dict(cfg.severity_overrides), self.suites_dir or None)
        user_suites = [loaded.name for loaded in suites if loaded.entity is None]
        user_expectations = sum(1 for loaded in suites for e in loaded.expectations if not e["check_id"])
        self.log.info("suites from %s: %d (user suites: %s); %d user expectation(s); snapshots: %s",
                      expectations_dir(self.suites_dir or None), len(suites), ", ".join(user_suites) or "none",
                      user_expectations, ", ".join(audited))
        with warehouse_lock(warehouse, "gate"):
            plan = plan_gate(warehouse, audited, suites, drift_bounds=lambda cluster: cfg.for_cluster(cluster).drift)
            self.log.info("%d validation(s) for %d snapshot(s): %d suite(s) over the run's tables, %d per snapshot",
                          len(plan.validations), len(audited), sum(1 for v in plan.validations if v.per_run),
                          sum(1 for v in plan.validations if not v.per_run))
            self.configure_file_data_context = functools.partial(file_data_context, warehouse)
            self.configure_checkpoint = functools.partial(
                configure_checkpoint, warehouse=warehouse, snapshot_id=audited, plan=plan,
            )
            try:
                super().execute(context)
            except GXValidationFailed:
                pass  # the verdict below decides, by severity
        result = context["ti"].xcom_pull(task_ids=self.task_id, key="return_value") or {}
        verdict = build_fleet_verdict(result, plan.described(), plan.clusters, settings_by_cluster(cfg),
                                      warehouse.data_docs_index)
        context["ti"].xcom_push(key="verdict", value=verdict)
        for item in verdict["failed"]:
            self.log.warning("%s%s expectation failed (%s): %s", f"[{item['cluster']}] " if item.get("cluster") else "",
                             item["severity"], "gating" if item["gating"] else "not gating", item["label"])
        self.log.info("Data Docs: %s", verdict["data_docs"])
        if verdict.get("error"):
            raise AuditGateFailed(f"audit gate failed: {verdict['error']}")
        red = [f"{v.get('cluster') or sid} ({v['failed_expectations']})" for sid, v in verdict["snapshots"].items()
               if not v["success"]]
        if red:
            names = "; ".join(f["label"] for f in verdict["failed"] if f["gating"])
            raise AuditGateFailed(
                f"audit gate failed for {', '.join(red)}: {verdict['failed_expectations']} expectation(s) of a gating "
                f"severity failed: {names}; see {verdict['data_docs']}"
            )
        return verdict
