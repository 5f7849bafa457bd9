"""The snapshots one audit run covers, and everything about them the plan takes as data.

An audit runs once for a *batch*: one run's fleet, one stored snapshot, or a reaudit's history. Each snapshot
brings its cluster, its settings (that cluster's overrides applied), its start time and its baseline (the
snapshot its history checks and its findings' status compare with). The plan never loops over them: the
batch becomes data of the plan: the parameters of each snapshot, and per row the value of its snapshot
(cluster, chain, severities, suppressions) as lookups in small maps keyed by snapshot id.

Lineage: a baseline may itself be in the batch (a reaudit audits a cluster's snapshots oldest first), so the
batch's snapshots form chains. ``lineage`` gives each snapshot its chain (the id of the chain's first
snapshot), its position in the chain and its baseline; the first snapshot of a chain may have a baseline
outside the batch (an audited snapshot of the warehouse), whose stored rows are then read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.params import Params, keyed_value, snapshot_params
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.schemas import KEY
from kafka_zk_audit.contract.settings import AuditConfig, glob_to_regex
from kafka_zk_audit.contract.warehouse import manifest_znodes


@dataclass(frozen=True)
class BatchSnapshot:
    """One snapshot of a batch: its id, cluster, settings, start (epoch ms), baseline and manifest."""

    snapshot_id: str
    cluster: str
    config: AuditConfig
    now_ms: int
    baseline_id: str | None = None
    manifest: Mapping[str, Any] = field(default_factory=dict)

    @property
    def znodes(self) -> int:
        """The snapshot's znodes, as its manifest counts them."""
        return manifest_znodes(self.manifest)


def started_ms(manifest: Mapping[str, Any]) -> int:
    """A snapshot's "now" in epoch ms: its start (its manifest's ``started_at``), or, for a KRaft metadata log, the
    batch time of the last record replayed (the log's own clock: every age is the state's age at that moment)."""
    kraft = manifest.get("kraft") if manifest.get("source") == "kraft" else None
    if kraft and kraft.get("time_ms") is not None:
        return int(kraft["time_ms"])
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


    def params(self, spark: SparkSession) -> Params:
        return snapshot_params(spark, {s.snapshot_id: (s.config, s.now_ms) for s in self.snapshots})

    # The same facts as columns: per row, the value of its snapshot (a lookup in the plan, no join).
    def cluster_column(self) -> Column:
        return keyed_value({s.snapshot_id: s.cluster for s in self.snapshots}, "string")

    def chain_column(self) -> Column:
        return keyed_value({sid: chain for sid, chain, *_ in self.lineage_rows()}, "string")

    def position_column(self) -> Column:
        return keyed_value({sid: position for sid, _, position, *_ in self.lineage_rows()}, "int")

    def followers_column(self, in_batch_only: bool = True) -> Column:
        """Per row, the snapshots of the batch whose baseline its snapshot is (an empty array for none); with
        ``in_batch_only=False`` also for baselines stored outside the batch."""
        followers: dict[str, list[str]] = {}
        for sid, _, _, baseline, inside in self.lineage_rows():
            if baseline and (inside or not in_batch_only):
                followers.setdefault(baseline, []).append(sid)
        none = F.array().cast("array<string>")
        if not followers:
            return none
        pairs = [item for b, fs in followers.items() for item in (F.lit(b), F.array(*[F.lit(f) for f in fs]))]
        return F.coalesce(F.element_at(F.create_map(*pairs), F.col(KEY)), none)

    def severity_column(self) -> Column:
        """Per row, the severity its snapshot's settings give its ``check_id`` (one map per distinct set of
        severities, however many snapshots share it)."""
        tables: list[tuple[str, ...]] = []
        which: dict[str, int] = {}
        for s in self.snapshots:
            severities = tuple(s.config.severity_of(c) for c in CHECK_IDS)
            if severities not in tables:
                tables.append(severities)
            which[s.snapshot_id] = tables.index(severities) + 1
        maps = [F.create_map(*[item for c, sev in zip(CHECK_IDS, severities, strict=True)
                               for item in (F.lit(c), F.lit(sev))]) for severities in tables]
        chosen = F.element_at(F.array(*maps), keyed_value(which, "int")) if len(maps) > 1 else maps[0]
        return F.element_at(chosen, F.col("check_id"))

    def suppressed_column(self) -> Column:
        """Per row (check rows: check_id and subject), whether a suppression of its snapshot's settings matches."""
        matches = []
        for s in self.snapshots:
            for p in s.config.suppressions:
                condition = (F.col(KEY) == s.snapshot_id) & (F.col("check_id") == p.check_id)
                if p.topic is not None:
                    condition &= F.coalesce(F.col("topic").rlike(glob_to_regex(p.topic)), F.lit(False))
                if p.group_id is not None:
                    condition &= F.coalesce(F.col("group_id").rlike(glob_to_regex(p.group_id)), F.lit(False))
                if p.broker_id is not None:
                    condition &= F.coalesce(F.col("broker_id") == p.broker_id, F.lit(False))
                matches.append(condition)
        return reduce(lambda a, b: a | b, matches) if matches else F.lit(False)




