"""The Great Expectations gate: :func:`kafka_zk_audit.gate.run.run_gate` in a task.

The gate function runs the checkpoint in a File Data Context (Data Docs updated by the checkpoint's action) and
decides the verdict by severity: only failed expectations of a gating severity fail the task. The suites (the
catalogue's and the user's own) are loaded first, so a broken suite file fails the task before any validation
runs, with a message naming the file. GX is imported when the task runs, never when the DAG is parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from kafka_zk_audit.airflow.notifications.task_failure import GateVerdictFailure
from kafka_zk_audit.airflow.xcoms import snapshot_id_list
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse

# What the gate's execute imports first: Great Expectations and the gate (a run of every task in one process warms
# them up while the audit's spark-submit runs: kafka_zk_audit.airflow.command_line.warm_imports)
GATE_IMPORTS = ("great_expectations", "kafka_zk_audit.gate.run")


class AuditGateFailed(AirflowFailException, GateVerdictFailure):
    """Expectations of a gating severity failed (the gate's own alert reports it)."""


class AuditGateOperator(BaseOperator):
    """Validate the audit tables of the run's snapshots with the suites; fail on failed expectations of a gating
    severity. One checkpoint covers every cluster of the run, one validation per suite over the run's staged tables;
    each cluster is judged with its own settings. Pushes the verdict as XCom ``verdict`` (and returns it); skipped
    when no snapshot of the run was audited.

    :param warehouse: warehouse path or URL (default ``$KAFKA_ZK_AUDIT_WAREHOUSE``, else ``./warehouse``)
    :param snapshot_ids: the run's snapshots: a list, e.g. the snapshot task's output (templated); those whose audit
        did not complete are left out (their own tasks failed and alerted)
    :param audit_config: audit settings file (severity overrides, gating severities, drift bounds, per-cluster
        overrides); packaged defaults if empty
    :param suites_dir: folder of GX suite files to run instead of the packaged ones (``expectations/``): the
        catalogue's suites, with expectations of your own beside theirs, and suites of your own
    """

    template_fields: Sequence[str] = ("warehouse", "snapshot_ids", "audit_config", "suites_dir")

    def __init__(self, *, warehouse: str | None, snapshot_ids: Sequence[str] | None = None,
                 audit_config: str | None = None, suites_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warehouse = warehouse
        self.snapshot_ids = snapshot_ids
        self.audit_config = audit_config
        self.suites_dir = suites_dir

    def execute(self, context: Any) -> dict[str, Any]:
        from kafka_zk_audit.gate.run import NothingAudited, gate_failure, run_gate

        try:
            verdict = run_gate(Warehouse(self.warehouse or default_warehouse()), snapshot_id_list(self.snapshot_ids),
                               load_config(self.audit_config or None), self.suites_dir or None, log=self.log)
        except NothingAudited as nothing:
            raise AirflowSkipException(str(nothing)) from None
        context["ti"].xcom_push(key="verdict", value=verdict)
        failure = gate_failure(verdict)
        if failure:
            raise AuditGateFailed(failure)
        return verdict
