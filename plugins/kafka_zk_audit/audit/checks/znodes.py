"""Checks on any znode: data that does not parse or matches no known version of its kind, and znodes
the auditor may not read.

Each check is a declaration (``engine.check``) on its table: every row is a finding."""

from __future__ import annotations

from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import check, say
from kafka_zk_audit.audit.checks.engine import Finds
from kafka_zk_audit.contract.secrets import CHILDREN_NO_READ_PERMISSION


@check("malformed_znodes")
def malformed_znode() -> Finds:
    """Every znode Kafka reads parses as a known version of its kind (one finding per malformed znode)."""
    return Finds(where=F.lit(True), path="path", detail=say("malformed %s: %s", "kind", "reason"))


@check("unreadable_znodes")
def unreadable_znode() -> Finds:
    """The auditor may read every znode (one finding per znode it may not: the checks that need it skip it)."""
    what = F.when(
        F.col("reason") == CHILDREN_NO_READ_PERMISSION, F.lit("no READ permission to list its children")
    ).otherwise(F.lit("no READ permission to read its data or list its children"))
    kind = F.when(F.col("kind").isNotNull(), F.concat(F.lit(" ("), F.col("kind"), F.lit(" znode)"))).otherwise("")
    return Finds(where=F.lit(True), path="path", detail=F.concat(what, kind, F.lit("; checks that need it skip it")))
