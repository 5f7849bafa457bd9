"""Checks on any znode: data that does not parse or matches no known version of its kind, and znodes
the auditor may not read."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import say, to_output
from kafka_zk_audit.contract.secrets import CHILDREN_NO_READ_PERMISSION


def malformed_znode(malformed_znodes: DataFrame) -> DataFrame:
    """Every znode Kafka reads parses as a known version of its kind (one finding per malformed znode)."""
    return to_output(
        malformed_znodes, "malformed_znode", path="path", detail=say("malformed %s: %s", "kind", "reason")
    )


def unreadable_znode(unreadable_znodes: DataFrame) -> DataFrame:
    """The auditor may read every znode (one finding per znode it may not: the checks that need it skip it)."""
    what = F.when(
        F.col("reason") == CHILDREN_NO_READ_PERMISSION, F.lit("no READ permission to list its children")
    ).otherwise(F.lit("no READ permission to read its data or list its children"))
    kind = F.when(F.col("kind").isNotNull(), F.concat(F.lit(" ("), F.col("kind"), F.lit(" znode)"))).otherwise("")
    detail = F.concat(what, kind, F.lit("; checks that need it skip it"))
    return to_output(unreadable_znodes, "unreadable_znode", path="path", detail=detail)
