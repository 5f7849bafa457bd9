"""SparkSubmitOperator whose connection id may come from a DAG param (``{{ params.spark_conn_id }}``), its driver
JVM mapping the machine's class-data archive (:func:`kafka_zk_audit.audit.session.class_data_sharing`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from kafka_zk_audit.audit.session import class_data_sharing


class AuditSparkSubmitOperator(SparkSubmitOperator):
    """The provider's operator, with ``spark_conn_id`` templated and the driver's class-data archive."""

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "spark_conn_id")

    def __init__(self, *, spark_conn_id: str = "spark_default", **kwargs: Any) -> None:
        super().__init__(conn_id=spark_conn_id, **kwargs)
        self.spark_conn_id = spark_conn_id

    def execute(self, context: Any) -> None:
        self._conn_id = self.spark_conn_id
        with class_data_sharing(self.conf or {}) as conf:
            self.conf = conf
            return super().execute(context)
