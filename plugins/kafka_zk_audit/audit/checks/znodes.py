"""Checks on any znode: data that does not parse or matches no known version of its kind."""

from __future__ import annotations

from pyspark.sql import DataFrame

from kafka_zk_audit.audit.checks.common import say, to_output


def malformed_znode(malformed_znodes: DataFrame) -> DataFrame:
    """Every znode Kafka reads parses as a known version of its kind (one finding per malformed znode)."""
    return to_output(
        malformed_znodes, "malformed_znode", path="path", detail=say("malformed %s: %s", "kind", "reason")
    )
