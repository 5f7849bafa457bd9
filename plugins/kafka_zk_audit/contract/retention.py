"""Retention: which snapshots, tables, findings and runs of the warehouse to prune, per cluster.

A snapshot's raw data and tables are kept while it is among its cluster's newest ``keep_snapshots`` or younger
than ``keep_snapshots_for``; its findings and run summary (small, and the history users look back on) while
younger than ``keep_findings_for``. Never pruned: each cluster's newest audited snapshot (the next run's
baseline) and the snapshots of the run that prunes. A snapshot directory without a manifest (a walk that was
killed) is removed once it is older than ``keep_snapshots_for``.

Histories from ZooKeeper's files (``history/<history_id>/``), per cluster: the change table (the big part) goes
once older than ``keep_snapshots_for``, the whole history (intervals, timelines, page, summary) once older than
``keep_findings_for``. Never pruned: each cluster's newest history (the next one starts where it ended). A history
without its summary (an app that died) is removed once older than ``keep_snapshots_for``. A pruned history's
Data Docs page goes with it (the DAG's retention task then rewrites the Data Docs list of histories:
``report.history_index``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from kafka_zk_audit.contract.lock import warehouse_lock
from kafka_zk_audit.contract.settings import RetentionConfig
from kafka_zk_audit.contract.warehouse import MANIFEST, Warehouse, ensemble_identity

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredSnapshot:
    """What retention needs to know of one snapshot in the warehouse."""

    snapshot_id: str
    cluster: str | None
    started_at: datetime
    audited: bool
    complete: bool = True


@dataclass
class RetentionPlan:
    """Snapshot ids whose raw data and tables go, and those whose findings and runs go too."""

    drop_data: list[str] = field(default_factory=list)
    drop_findings: list[str] = field(default_factory=list)
    kept_baselines: dict[str, str] = field(default_factory=dict)
    drop_history_changes: list[str] = field(default_factory=list)  # history ids whose change table goes
    drop_histories: list[str] = field(default_factory=list)  # history ids that go whole


@dataclass(frozen=True)
class StoredHistory:
    """What retention needs to know of one history in the warehouse."""

    history_id: str
    cluster: str | None
    started_at: datetime
    complete: bool  # its history.json was written


def snapshot_started(snapshot_id: str) -> datetime:
    """The UTC start a snapshot id begins with (``YYYYMMDDTHHMMSSZ``)."""
    return datetime.strptime(snapshot_id[:16] + "+0000", "%Y%m%dT%H%M%SZ%z")


def plan_retention(snapshots: Iterable[StoredSnapshot], settings: RetentionConfig, now: datetime,
                   protect: Iterable[str] = ()) -> RetentionPlan:
    """Decide what to prune (pure): see the module docstring for the rules."""
    protected = set(protect)
    plan = RetentionPlan()
    by_cluster: dict[str | None, list[StoredSnapshot]] = {}
    for snapshot in snapshots:
        by_cluster.setdefault(snapshot.cluster, []).append(snapshot)
    for cluster, group in by_cluster.items():
        group.sort(key=lambda s: (s.started_at, s.snapshot_id), reverse=True)
        baseline = next((s.snapshot_id for s in group if s.audited and s.complete), None)
        if baseline:
            plan.kept_baselines[str(cluster)] = baseline
        complete = [s for s in group if s.complete]
        newest = {s.snapshot_id for s in complete[: settings.keep_snapshots]} if settings.keep_snapshots else None
        for snapshot in group:
            if snapshot.snapshot_id in protected or snapshot.snapshot_id == baseline:
                continue
            age = now - snapshot.started_at
            keep_data = snapshot.complete and (newest is None or snapshot.snapshot_id in newest) \
                or age < settings.keep_snapshots_for
            if not keep_data:
                plan.drop_data.append(snapshot.snapshot_id)
                if age >= settings.keep_findings_for or not snapshot.complete:
                    plan.drop_findings.append(snapshot.snapshot_id)
    return plan


def plan_history_retention(histories: Iterable[StoredHistory], settings: RetentionConfig, now: datetime,
                           plan: RetentionPlan) -> RetentionPlan:
    """Add to ``plan`` the histories to prune (pure): see the module docstring for the rules."""
    by_cluster: dict[str | None, list[StoredHistory]] = {}
    for history in histories:
        by_cluster.setdefault(history.cluster, []).append(history)
    for group in by_cluster.values():
        group.sort(key=lambda h: (h.started_at, h.history_id), reverse=True)
        newest = next((h.history_id for h in group if h.complete), None)
        for history in group:
            if history.history_id == newest:
                continue
            age = now - history.started_at
            if age >= settings.keep_findings_for or (not history.complete and age >= settings.keep_snapshots_for):
                plan.drop_histories.append(history.history_id)
            elif age >= settings.keep_snapshots_for:
                plan.drop_history_changes.append(history.history_id)
    return plan


def stored_histories(warehouse: Warehouse) -> list[StoredHistory]:
    """Every history folder of the warehouse, with or without its summary."""
    base = warehouse.fs_path(warehouse.history_dir())
    if not warehouse.fs.exists(base):
        return []
    found = []
    for entry in warehouse.fs.ls(base, detail=False):
        history_id = entry.rstrip("/").rsplit("/", 1)[-1]
        try:
            started = snapshot_started(history_id)
        except ValueError:
            continue  # not one of ours
        summary_path = f"{warehouse.history_dir(history_id)}/history.json"
        complete = warehouse.exists(summary_path)
        try:
            cluster = warehouse.read_json(summary_path).get("cluster") if complete else None
        except (OSError, ValueError):
            complete, cluster = False, None
        found.append(StoredHistory(history_id, cluster, started, complete))
    return found


def cluster_of(manifest: dict) -> str | None:
    """The cluster a snapshot belongs to: its fleet name, else its ensemble and chroot."""
    return manifest.get("cluster") or ensemble_identity(manifest)


def stored_snapshots(warehouse: Warehouse) -> list[StoredSnapshot]:
    """Every snapshot directory of the warehouse, complete or not."""
    base = warehouse.fs_path(f"{warehouse.root}/snapshots")
    if not warehouse.fs.exists(base):
        return []
    audited = set(warehouse.audited_snapshots())
    found = []
    for entry in warehouse.fs.ls(base, detail=False):
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        if not name.startswith("snapshot_id="):
            continue
        snapshot_id = name.removeprefix("snapshot_id=")
        try:
            started = snapshot_started(snapshot_id)
        except ValueError:
            continue  # not one of ours
        complete = warehouse.fs.exists(f"{entry.rstrip('/')}/{MANIFEST}")
        manifest = warehouse.read_json(warehouse.manifest_path(snapshot_id)) if complete else {}
        found.append(StoredSnapshot(snapshot_id, cluster_of(manifest) if complete else None, started,
                                    snapshot_id in audited, complete))
    return found


def table_names(warehouse: Warehouse) -> list[str]:
    base = warehouse.fs_path(f"{warehouse.root}/tables")
    if not warehouse.fs.exists(base):
        return []
    return [entry.rstrip("/").rsplit("/", 1)[-1] for entry in warehouse.fs.ls(base, detail=False)]


def apply_retention(warehouse: Warehouse, settings: RetentionConfig, now: datetime,
                    protect: Iterable[str] = ()) -> RetentionPlan:
    """Prune the warehouse by ``plan_retention`` under the warehouse's retention lock; returns the plan."""
    with warehouse_lock(warehouse, "retention"):
        plan = plan_retention(stored_snapshots(warehouse), settings, now, protect)
        tables = table_names(warehouse)
        for snapshot_id in plan.drop_data:
            warehouse.remove(warehouse.snapshot_dir(snapshot_id))
            for table in tables:
                warehouse.remove(warehouse.table_dir(table, snapshot_id))
        for snapshot_id in plan.drop_findings:
            warehouse.remove(warehouse.findings_dir(snapshot_id))
            warehouse.remove(warehouse.run_dir(snapshot_id))
        plan_history_retention(stored_histories(warehouse), settings, now, plan)
        for history_id in plan.drop_history_changes:
            warehouse.remove(f"{warehouse.history_dir(history_id)}/changes")
        for history_id in plan.drop_histories:
            warehouse.remove(warehouse.history_dir(history_id))
            warehouse.remove(warehouse.history_page(history_id))
    log.info("retention: pruned the data of %d snapshot(s) and the findings of %d, the change tables of %d "
             "histories and %d whole histories; baselines kept: %s", len(plan.drop_data), len(plan.drop_findings),
             len(plan.drop_history_changes), len(plan.drop_histories),
             ", ".join(f"{c}={s}" for c, s in plan.kept_baselines.items()) or "none")
    return plan

