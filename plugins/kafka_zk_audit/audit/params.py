"""Each snapshot's clock and thresholds as data: one row per snapshot, read by the checks that need them.

A check never bakes a setting into its plan as a literal of one cluster: it reads the parameter of its row's
snapshot (``with_params``), so one plan audits clusters with different settings. The rows are few (one per
snapshot) and travel inside the plan as a map keyed by snapshot id: a lookup, not a join, so no broadcast
job. ``now_ms`` is the snapshot's start (its manifest's ``started_at``): every age is measured against it,
never against the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from kafka_zk_audit.audit.keyed_io import rows_frame
from kafka_zk_audit.contract.schemas import KEY
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


def keyed_value(values: Mapping[str, Any], dtype: str) -> Column:
    """Per row, the value of its snapshot (``values``: snapshot id -> value; null for another snapshot)."""
    if not values:
        return F.lit(None).cast(dtype)
    pairs = chain.from_iterable((F.lit(sid), F.lit(value).cast(dtype)) for sid, value in values.items())
    return F.element_at(F.create_map(*pairs), F.col(KEY))


@dataclass(frozen=True)
class Params:
    """The parameters of a set of snapshots: snapshot id -> parameter -> value."""

    spark: SparkSession
    rows: Mapping[str, Mapping[str, int]]

    def column(self, name: str) -> Column:
        """The parameter ``name`` of each row's snapshot."""
        if name not in PARAMETERS:
            raise KeyError(f"no parameter {name!r}; known: {', '.join(PARAMETERS)}")
        return keyed_value({sid: row[name] for sid, row in self.rows.items()}, "long")

    def keys(self) -> DataFrame:
        """One row per snapshot: its key (the audited snapshots)."""
        return rows_frame(self.spark, [(sid,) for sid in self.rows], StructType([StructField(KEY, StringType())]))

    def unionByName(self, other: Params) -> Params:  # noqa: N802 (reads like DataFrame's, which it stands in for)
        return Params(self.spark, {**self.rows, **other.rows})


def snapshot_params(spark: SparkSession, snapshots: Mapping[str, tuple[AuditConfig, int]]) -> Params:
    """The parameters of snapshots, from (their cluster's settings, their start in epoch ms) by snapshot id."""
    return Params(spark, {sid: params_row(config, now_ms) for sid, (config, now_ms) in snapshots.items()})


def with_params(rows: DataFrame, params: Params, *names: str) -> DataFrame:
    """The rows of the snapshots of ``params`` with the named parameters of their snapshot (all of them when none
    is named); rows of other snapshots are dropped, as a join would."""
    wanted = names or tuple(PARAMETERS)
    known = F.col(KEY).isin(list(params.rows))
    return rows.where(known).select("*", *[params.column(name).alias(name) for name in wanted])
