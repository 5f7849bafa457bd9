"""SparkSubmitOperator whose connection id may come from a DAG param (``{{ params.spark_conn_id }}``), its driver
JVM mapping the machine's class-data archive (:func:`kafka_zk_audit.audit.session.class_data_sharing`) and sized to
the snapshots it audits (:func:`kafka_zk_audit.audit.session.sized_conf`). When the whole DAG run is in this process
(``airflow dags test``), the gate's imports load while the app runs (:mod:`kafka_zk_audit.airflow.command_line`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from kafka_zk_audit.airflow.command_line import warm_imports
from kafka_zk_audit.airflow.operators.audit_gate import GATE_IMPORTS
from kafka_zk_audit.audit.session import class_data_sharing, sized_conf
from kafka_zk_audit.contract.warehouse import Warehouse, stored_znodes


def audited_znodes(application_args: Sequence[str] | None) -> int:
    """The znodes of the snapshots an audit app's arguments name (``--warehouse W --snapshot-ids A,B``), from
    their manifests; 0 for other apps' arguments."""
    args = list(application_args or ())
    values = {name: args[index + 1] for index, name in enumerate(args[:-1])
              if name in ("--warehouse", "--snapshot-ids")}
    if len(values) < 2:
        return 0
    ids = [sid.strip() for sid in str(values["--snapshot-ids"]).split(",") if sid.strip()]
    return stored_znodes(Warehouse(str(values["--warehouse"])), ids)


class AuditSparkSubmitOperator(SparkSubmitOperator):
    """The provider's operator, with ``spark_conn_id`` templated, the driver's class-data archive and, for a large
    batch of snapshots, the driver's full tiered JIT."""

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "spark_conn_id")

    def __init__(self, *, spark_conn_id: str = "spark_default", **kwargs: Any) -> None:
        super().__init__(conn_id=spark_conn_id, **kwargs)
        self.spark_conn_id = spark_conn_id

    def execute(self, context: Any) -> None:
        self._conn_id = self.spark_conn_id
        warm_imports(GATE_IMPORTS)  # when the gate runs next in this process (``airflow dags test``)
        with class_data_sharing(sized_conf(self.conf or {}, audited_znodes(self.application_args))) as conf:
            self.conf = conf
            return super().execute(context)
