"""Each snapshot's clock and thresholds as data: one row per snapshot, joined into the checks that need them.

A check never bakes a setting into its plan as a literal: it joins ``params`` on the snapshot key and
reads the column, so one plan audits clusters with different settings. ``now_ms`` is the snapshot's
start (its manifest's ``started_at``): every age is measured against it, never against the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from kafka_zk_audit.contract.schemas import KEY, keyed
from kafka_zk_audit.contract.settings import AuditConfig

# name -> what it is; every value is a long (milliseconds or a count)
PARAMETERS = {
    "now_ms": "the snapshot's start, epoch ms",
    "delete_topic_sla_ms": "sla.delete_topic",
    "reassignment_sla_ms": "sla.reassignment",
    "preferred_election_sla_ms": "sla.preferred_election",
    "backlog_max_children": "notification_backlog.max_children",
    "backlog_max_age_ms": "notification_backlog.max_age",
    "dual_write_stale_after_ms": "migration.dual_write_stale_after",
    "load_stuck_after_ms": "migration.load_stuck_after",
}
PARAMS = keyed(StructType([StructField(name, LongType(), True) for name in PARAMETERS]))


def _ms(duration: timedelta) -> int:
    return int(duration.total_seconds() * 1000)


def params_row(config: AuditConfig, now_ms: int) -> dict[str, int]:
    """One snapshot's parameters (without its key) from its cluster's settings and its start time."""
    return {
        "now_ms": int(now_ms),
        "delete_topic_sla_ms": _ms(config.sla.delete_topic),
        "reassignment_sla_ms": _ms(config.sla.reassignment),
        "preferred_election_sla_ms": _ms(config.sla.preferred_election),
        "backlog_max_children": int(config.notification_backlog.max_children),
        "backlog_max_age_ms": _ms(config.notification_backlog.max_age),
        "dual_write_stale_after_ms": _ms(config.migration.dual_write_stale_after),
        "load_stuck_after_ms": _ms(config.migration.load_stuck_after),
    }


def params_frame(spark: SparkSession, snapshots: Mapping[str, tuple[AuditConfig, int]]) -> DataFrame:
    """The PARAMS table: one row per snapshot id, from (its cluster's settings, its start in epoch ms)."""
    rows = [{KEY: snapshot_id, **params_row(config, now_ms)} for snapshot_id, (config, now_ms) in snapshots.items()]
    return spark.createDataFrame([tuple(row[name] for name in PARAMS.names) for row in rows], PARAMS)


def with_params(rows: DataFrame, params: DataFrame, *names: str) -> DataFrame:
    """The rows with the named parameters of their snapshot (all of them when none is named)."""
    wanted = [KEY, *(names or PARAMETERS)]
    return rows.join(F.broadcast(params.select(*wanted)), KEY)
