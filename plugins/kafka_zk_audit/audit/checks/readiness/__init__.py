"""ZooKeeper → KRaft migration readiness in Spark: ``run_readiness`` gives the READINESS rows of any number of
snapshots, each at its own target Kafka version.

One pure function per readiness check id, in the family modules: ``topics`` (R02-R06, the topics the migration
copies), ``configs`` (R07-R12, dynamic configs, ACLs, tokens and quotas) and ``cluster`` (R01, R13-R20 and the R14
node ids). Each takes keyed normalized tables (and, where no table carries the fact, the raw snapshot frame, the
snapshot ids or the manifests' znode ACLs) and returns keyed CHECK_OUTPUT rows: one per snapshot and subject where
Kafka's migration code would stall, crash or lose data (``contract/readiness.py`` and
``notes/kraft-migration-readiness.md`` cite it). Every join, aggregation and window includes the snapshot key, so
the rows of snapshots computed together are those of each computed alone.

Nothing here lists the conditions: ``contract/readiness.py`` is their registry. A condition's function is the one
named like its check id in a family module, called with the inputs its parameters name (``_Inputs``). The level
of a condition at a snapshot's target is looked up in the plan by (target, check).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import family_functions
from kafka_zk_audit.audit.checks.readiness import cluster, configs, topics
from kafka_zk_audit.audit.checks.readiness.cluster import registered_broker_ids, snapshot_keys
from kafka_zk_audit.audit.unions import only_columns, union_all
from kafka_zk_audit.contract.readiness import BY_CHECK_ID, READINESS_CHECK_IDS, parse_target
from kafka_zk_audit.contract.schemas import KEY, READINESS, keyed

# The columns of a check's rows that a readiness row keeps (with the snapshot key).
CHECK_COLUMNS = ("check_id", "topic", "partition", "group_id", "broker_id", "path", "detail")
# The modules that define the readiness functions, one family of conditions each.
FAMILIES = (topics, configs, cluster)
# Each readiness check id's function (derived from the contract's conditions: one without a function fails here).
READINESS_FUNCTIONS: Mapping[str, Callable[..., DataFrame]] = family_functions(READINESS_CHECK_IDS, FAMILIES)
# What a readiness function may take besides a normalized table (by parameter name; see ``_Inputs``).
SNAPSHOT_INPUTS = ("snapshot", "snapshot_ids", "broker_ids", "spark", "znode_acls")


class ReadinessTarget(NamedTuple):
    """What ``run_readiness`` needs of a snapshot besides its rows: its manifest (``znode_acls`` for R20) and the
    Kafka version it plans the migration with ("3.4".."3.9", optional patch)."""

    manifest: Mapping[str, Any]
    target_version: str


@dataclass(frozen=True)
class _Inputs:
    """What the readiness functions of one run_readiness call may take, by parameter name: a normalized table by
    its name, the raw snapshot frame (``snapshot``), one row per snapshot of the call (``snapshot_ids``), the
    registered broker ids (``broker_ids``), the session (``spark``) or each snapshot's manifest znode ACLs
    (``znode_acls``)."""

    tables: Mapping[str, DataFrame]
    snapshot: DataFrame
    snapshot_ids: DataFrame
    znode_acls: Mapping[str, Mapping[str, Any] | None]

    @property
    def spark(self) -> SparkSession:
        return self.snapshot.sparkSession

    @property
    def broker_ids(self) -> DataFrame:
        return registered_broker_ids(self.snapshot, self.tables["brokers"])

    def call(self, function: Callable[..., DataFrame]) -> DataFrame:
        """The function's rows, each of its parameters given the input of that name."""
        arguments = {}
        for name in inspect.signature(function).parameters:
            if name not in self.tables and name not in SNAPSHOT_INPUTS:
                raise TypeError(f"{function.__name__} takes {name}, which is no table nor snapshot input")
            arguments[name] = self.tables[name] if name in self.tables else getattr(self, name)
        return function(**arguments)


def level_rows(targets: Mapping[str, str]) -> list[tuple[str, str, str, str, str]]:
    """(snapshot_id, check_id, condition_id, level, remedy) of every condition that is a problem at each snapshot's
    target version (``targets``: snapshot id -> target); ValueError for a target that is no migrating release."""
    rows = []
    for snapshot_id, target_version in sorted(targets.items()):
        target = parse_target(target_version)
        for check_id in READINESS_CHECK_IDS:
            condition = BY_CHECK_ID[check_id]
            level = condition.level_at(target)
            if level is not None:
                rows.append((str(snapshot_id), check_id, condition.condition_id, level, condition.remedy))
    return rows


def run_readiness(
    tables: Mapping[str, DataFrame], snapshot: DataFrame, snapshots: Mapping[str, ReadinessTarget | tuple[Any, str]]
) -> DataFrame:
    """Every readiness condition of the given snapshots, each at its own target version, as ``keyed(READINESS)``
    rows in one frame (level and remedy filled in).

    ``tables`` and ``snapshot`` are keyed frames (they may hold other snapshots too: only those of ``snapshots``
    give rows); ``snapshots`` maps each snapshot id to its ``ReadinessTarget`` (manifest, target version), or the
    plain (manifest, target version) pair. A condition that is no problem at a snapshot's target gives no row
    for that snapshot, and one that is no problem at any target is not computed.
    """
    spark = snapshot.sparkSession
    targets = {sid: str(target[1]) for sid, target in snapshots.items()}
    levels = level_rows(targets)  # the level table: joined, so one plan serves every target
    wanted = {check_id for _, check_id, *_ in levels}
    inputs = _Inputs(tables, snapshot, snapshot_keys(spark, snapshots),
                     {sid: (target[0] or {}).get("znode_acls") for sid, target in snapshots.items()})
    outputs = [inputs.call(READINESS_FUNCTIONS[check_id]) for check_id in READINESS_CHECK_IDS if check_id in wanted]
    columns = [F.col(KEY)] + [F.col(field.name).cast(field.dataType).alias(field.name) for field in READINESS.fields]
    if not outputs:
        return spark.createDataFrame([], keyed(READINESS))
    found = union_all([only_columns(rows, [KEY, *CHECK_COLUMNS]) for rows in outputs])
    # the level table as a lookup by (target version, check) in the plan: no join, no broadcast job
    by_target = {(targets[sid], check_id): (condition_id, level, remedy)
                 for sid, check_id, condition_id, level, remedy in levels}
    lookup = F.create_map(*[item for (target, check_id), (condition_id, level, remedy) in by_target.items()
                            for item in (
        F.lit(f"{target}\x00{check_id}"),
        F.struct(F.lit(condition_id).alias("condition_id"), F.lit(level).alias("level"), F.lit(remedy).alias("remedy")),
    )])
    target_of = F.create_map(*[item for sid, target in targets.items() for item in (F.lit(sid), F.lit(target))])
    key = F.concat(F.element_at(target_of, F.col(KEY)), F.lit("\x00"), F.col("check_id"))
    leveled = found.withColumn("_level", F.element_at(lookup, key))
    return leveled.where(F.col("_level").isNotNull()).select(
        KEY, *[c for c in found.columns if c != KEY], "_level.condition_id", "_level.level", "_level.remedy",
    ).select(*columns)
