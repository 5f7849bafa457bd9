"""The snapshots one audit run covers, and everything about them the plan takes as data.

An audit runs once for a *batch*: one run's fleet, one stored snapshot, or a reaudit's history. Each snapshot
brings its cluster, its settings (that cluster's overrides applied), its start time and its baseline (the
snapshot its history checks and its findings' status compare with). The plan never loops over them: the
batch becomes small keyed tables (``params``, ``severities``, ``suppressions``, ``lineage``, ``clusters``)
joined into one plan.

Lineage: a baseline may itself be in the batch (a reaudit audits a cluster's snapshots oldest first), so the
batch's snapshots form chains. ``lineage`` gives each snapshot its chain (the id of the chain's first
snapshot), its position in the chain and its baseline; the first snapshot of a chain may have a baseline
outside the batch (an audited snapshot of the warehouse), whose stored rows are then read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.params import params_frame
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.schemas import KEY
from kafka_zk_audit.contract.settings import AuditConfig, glob_to_regex

S = StringType()
LINEAGE = StructType([
    StructField(KEY, S), StructField("chain", S), StructField("position", IntegerType()),
    StructField("baseline_snapshot_id", S), StructField("baseline_in_batch", BooleanType()),
])
SEVERITIES = StructType([StructField(KEY, S), StructField("check_id", S), StructField("severity", S)])
SUPPRESSIONS = StructType([
    StructField(KEY, S), StructField("check_id", S), StructField("topic_regex", S),
    StructField("group_regex", S), StructField("broker_id", IntegerType()),
])
CLUSTERS = StructType([StructField(KEY, S), StructField("cluster", S)])


@dataclass(frozen=True)
class BatchSnapshot:
    """One snapshot of a batch: its id, cluster, settings, start (epoch ms), baseline and manifest."""

    snapshot_id: str
    cluster: str
    config: AuditConfig
    now_ms: int
    baseline_id: str | None = None
    manifest: Mapping[str, Any] = field(default_factory=dict)


def started_ms(manifest: Mapping[str, Any]) -> int:
    """A snapshot's start (its manifest's ``started_at``) in epoch ms."""
    return int(datetime.fromisoformat(str(manifest["started_at"])).timestamp() * 1000)


@dataclass(frozen=True)
class Batch:
    """The snapshots of one audit run, in order (a baseline in the batch comes before the snapshots using it)."""

    snapshots: tuple[BatchSnapshot, ...]

    def __post_init__(self) -> None:
        ids = [s.snapshot_id for s in self.snapshots]
        if len(set(ids)) != len(ids):
            raise ValueError(f"a batch holds each snapshot once: {ids}")
        seen: set[str] = set()
        for snapshot in self.snapshots:
            if snapshot.baseline_id in ids and snapshot.baseline_id not in seen:
                raise ValueError(f"snapshot {snapshot.snapshot_id}'s baseline {snapshot.baseline_id} comes after it")
            seen.add(snapshot.snapshot_id)

    @property
    def ids(self) -> list[str]:
        return [s.snapshot_id for s in self.snapshots]

    def __getitem__(self, snapshot_id: str) -> BatchSnapshot:
        return next(s for s in self.snapshots if s.snapshot_id == snapshot_id)

    def external_baselines(self) -> dict[str, str]:
        """snapshot id -> its baseline, for baselines outside the batch (stored in the warehouse)."""
        ids = set(self.ids)
        return {s.snapshot_id: s.baseline_id for s in self.snapshots if s.baseline_id and s.baseline_id not in ids}

    def lineage_rows(self) -> list[tuple[str, str, int, str | None, bool]]:
        ids = set(self.ids)
        chain: dict[str, tuple[str, int]] = {}
        rows = []
        for s in self.snapshots:
            inside = s.baseline_id in ids
            root, position = (chain[s.baseline_id][0], chain[s.baseline_id][1] + 1) if inside else (s.snapshot_id, 0)
            chain[s.snapshot_id] = (root, position)
            rows.append((s.snapshot_id, root, position, s.baseline_id, inside))
        return rows

    def lineage(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(self.lineage_rows(), LINEAGE)

    def params(self, spark: SparkSession) -> DataFrame:
        return params_frame(spark, {s.snapshot_id: (s.config, s.now_ms) for s in self.snapshots})

    def severities(self, spark: SparkSession) -> DataFrame:
        """(snapshot_id, check_id, severity) for every check: each snapshot's configured severities."""
        rows = [(s.snapshot_id, c, s.config.severity_of(c)) for s in self.snapshots for c in CHECK_IDS]
        return spark.createDataFrame(rows, SEVERITIES)

    def suppressions(self, spark: SparkSession) -> DataFrame:
        """(snapshot_id, check_id, topic_regex, group_regex, broker_id): each snapshot's suppressions, globs as
        anchored regexes (null: any)."""
        rows = [
            (s.snapshot_id, p.check_id, None if p.topic is None else glob_to_regex(p.topic),
             None if p.group_id is None else glob_to_regex(p.group_id), p.broker_id)
            for s in self.snapshots for p in s.config.suppressions
        ]
        return spark.createDataFrame(rows, SUPPRESSIONS)

    def clusters(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame([(s.snapshot_id, s.cluster) for s in self.snapshots], CLUSTERS)


def batch_of(snapshots: Sequence[BatchSnapshot]) -> Batch:
    return Batch(tuple(snapshots))
