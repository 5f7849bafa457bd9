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

from airflow.exceptions import AirflowException
from great_expectations_provider.common.errors import GXValidationFailed
from great_expectations_provider.operators.validate_checkpoint import GXValidateCheckpointOperator

from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
from kafka_zk_audit.gate.context import configure_checkpoint, file_data_context
from kafka_zk_audit.gate.suites import expectations_dir, load_suites
from kafka_zk_audit.gate.verdict import build_verdict


class AuditGateFailed(AirflowException):
    """Expectations of a gating severity failed."""


def _not_configured(*_: Any) -> Any:
    raise RuntimeError("set at execute time")


class AuditGateOperator(GXValidateCheckpointOperator):
    """Validate the audit tables of ``snapshot_id`` with the suites; fail on failed expectations of a gating severity.

    :param warehouse: warehouse path or URL (default ``$KAFKA_ZK_AUDIT_WAREHOUSE``, else ``./warehouse``)
    :param snapshot_id: the audited snapshot (templated, usually the snapshot task's XCom)
    :param audit_config: audit settings file (severity overrides, gating severities); packaged defaults if empty
    :param suites_dir: folder of GX suite files to run instead of the packaged ones (``expectations/``): the
        catalogue's suites, with expectations of your own beside theirs, and suites of your own
    """

    template_fields: Sequence[str] = ("warehouse", "snapshot_id", "audit_config", "suites_dir")

    def __init__(self, *, warehouse: str | None, snapshot_id: str, audit_config: str | None = None,
                 suites_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(
            configure_checkpoint=_not_configured,
            context_type="file",
            configure_file_data_context=_not_configured,
            **kwargs,
        )
        self.warehouse = warehouse
        self.snapshot_id = snapshot_id
        self.audit_config = audit_config
        self.suites_dir = suites_dir

    def execute(self, context: Any) -> dict[str, Any]:
        warehouse = Warehouse(self.warehouse or default_warehouse())
        cfg = load_config(self.audit_config or None)
        overrides = dict(cfg.severity_overrides)
        suites = load_suites(overrides, self.suites_dir or None)
        user_suites = [loaded.name for loaded in suites if loaded.entity is None]
        user_expectations = sum(1 for loaded in suites for e in loaded.expectations if not e["check_id"])
        self.log.info("suites from %s: %d (user suites: %s); %d user expectation(s)",
                      expectations_dir(self.suites_dir or None), len(suites), ", ".join(user_suites) or "none",
                      user_expectations)
        self.configure_file_data_context = functools.partial(file_data_context, warehouse)
        self.configure_checkpoint = functools.partial(
            configure_checkpoint, warehouse=warehouse, snapshot_id=self.snapshot_id, suites=suites,
        )
        try:
            super().execute(context)
        except GXValidationFailed:
            pass  # the verdict below decides, by severity
        result = context["ti"].xcom_pull(task_ids=self.task_id, key="return_value") or {}
        gating = set(cfg.gate.gating_severities)
        verdict = build_verdict(result, [loaded.describe() for loaded in suites], overrides, gating,
                                warehouse.data_docs_index)
        failed = verdict["failed"]
        gating_failed = [f for f in failed if f["gating"]]
        context["ti"].xcom_push(key="verdict", value=verdict)
        for item in failed:
            self.log.warning("%s expectation failed (%s): %s", item["severity"],
                             "gating" if item["gating"] else "not gating", item["label"])
        self.log.info("Data Docs: %s", verdict["data_docs"])
        if verdict.get("error"):
            raise AuditGateFailed(f"audit gate failed: {verdict['error']}")
        if gating_failed:
            names = "; ".join(f["label"] for f in gating_failed)
            raise AuditGateFailed(
                f"audit gate failed: {len(gating_failed)} expectation(s) of severity "
                f"{'/'.join(sorted(gating))} failed: {names}; see {verdict['data_docs']}"
            )
        return verdict
