"""The audit job's ZK → KRaft readiness step: the readiness table and ``runs/<id>/readiness.json``.

Readiness is not health: its rows never enter the findings (a healthy 0.10 cluster has no finding, even if it
cannot migrate yet), never alert, and gate only with ``migration.gate``. The report
(``report/readiness.py``) renders the JSON; the gate validates ``audit_migration`` with the
``expectations/migration.json`` suite: one row per readiness row (or one all-False row), one boolean per
level, and ``blocker_gating``, True on blockers only when ``migration.gate`` is on (its expectation is the
only one of the suite with a gating severity).

One call covers a set of snapshots: their readiness rows come from one plan and one collect, each snapshot's
report is then built in Python, and each table is written once for all of them, partitioned by snapshot
(``tables/<table>/snapshot_id=<id>/``, dynamic partition overwrite: the folders of other snapshots stay).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.checks.migration import migration_phases
from kafka_zk_audit.audit.checks.readiness import ReadinessTarget, run_readiness
from kafka_zk_audit.audit.checks.readiness.cluster import node_ids
from kafka_zk_audit.audit.keyed_io import write_rows
from kafka_zk_audit.audit.paired import verification_chapter
from kafka_zk_audit.contract.readiness import BY_CHECK_ID, LEVEL_RANK, LEVELS, NOT_VISIBLE, SUBJECT_COLUMNS, verdict
from kafka_zk_audit.contract.schemas import KEY, READINESS
from kafka_zk_audit.contract.settings import AuditConfig
from kafka_zk_audit.contract.warehouse import Warehouse

log = logging.getLogger(__name__)

READINESS_TABLE = "readiness"
AUDIT_TABLE = "audit_migration"
AUDIT_MIGRATION = StructType([
    *(StructField(name, dtype) for name, dtype in (
        ("topic", StringType()), ("partition", IntegerType()), ("group_id", StringType()),
        ("broker_id", IntegerType()), ("path", StringType()), ("evidence", StringType()),
        ("condition_id", StringType()), ("check_id", StringType()))),
    *(StructField(level, BooleanType()) for level in LEVELS),
    StructField("blocker_gating", BooleanType()),
])


class SnapshotReadiness(NamedTuple):
    """A snapshot's part in ``audit_readiness``: its manifest, its settings (its cluster's overrides applied: the
    target version and ``migration.gate``) and a target version overriding the settings' (None: theirs)."""

    manifest: Mapping[str, Any]
    cfg: AuditConfig
    target_version: str | None = None

    @property
    def target(self) -> str:
        return self.target_version or self.cfg.migration.target_version


def _order(row: dict[str, Any]) -> tuple:
    subject = tuple((value is None, "" if value is None else str(value).zfill(12)) for value in
                    (row[name] for name in SUBJECT_COLUMNS))
    return (LEVEL_RANK.get(row["level"], len(LEVELS)), row["condition_id"], row["check_id"], subject)


def audit_migration_rows(rows: list[dict[str, Any]], gate: bool) -> list[dict[str, Any]]:
    """The gate's rows: each readiness row with a flag per level (one all-False row when there is none)."""
    audit = [{
        **{name: row[name] for name in SUBJECT_COLUMNS}, "evidence": f"{row['level']} · {row['detail']}",
        "condition_id": row["condition_id"], "check_id": row["check_id"],
        **{level: row["level"] == level for level in LEVELS}, "blocker_gating": gate and row["level"] == "blocker",
    } for row in rows]
    return audit or [{**{field.name: None for field in AUDIT_MIGRATION.fields},
                      **{level: False for level in LEVELS}, "blocker_gating": False}]


def write_by_snapshot(warehouse: Warehouse, table: str, schema: StructType, rows: Mapping[str, list[dict[str, Any]]],
                      clusters: Mapping[str, str | None]) -> None:
    """Write ``tables/<table>/snapshot_id=<id>/`` of every snapshot of ``rows`` (snapshot id -> its rows of
    ``schema``, in file order), each row with its snapshot's cluster as last column: one file per snapshot,
    written by pyarrow (the rows are few and already on the driver). A snapshot without rows gets an empty file."""
    with_cluster = StructType([*schema.fields, StructField("cluster", StringType())])
    write_rows(warehouse, warehouse.table_dir(table), {
        sid: [{**row, "cluster": clusters.get(sid)} for row in snapshot_rows] for sid, snapshot_rows in rows.items()
    }, with_cluster)


def write_audit_migration(warehouse: Warehouse, clusters: Mapping[str, str | None],
                          rows: Mapping[str, list[dict[str, Any]]] | None = None,
                          gates: Mapping[str, bool] | None = None) -> None:
    """``audit_migration`` of each snapshot of ``clusters`` (snapshot id -> its cluster): from its readiness
    ``rows`` (none given: all False, as when readiness is off or failed), blockers gating where ``gates`` says so
    (default: not)."""
    rows, gates = rows or {}, gates or {}
    write_by_snapshot(warehouse, AUDIT_TABLE, AUDIT_MIGRATION, {
        sid: audit_migration_rows(rows.get(sid, []), bool(gates.get(sid, False))) for sid in clusters}, clusters)


def _collected(frame: DataFrame, snapshot_ids: list[str]) -> list[dict[str, Any]]:
    """The rows of these snapshots in a small keyed table (one collect for all of them)."""
    return [row.asDict() for row in frame.where(F.col(KEY).isin(*snapshot_ids)).collect()]


def audit_readiness(spark: SparkSession, warehouse: Warehouse, snapshots: Mapping[str, SnapshotReadiness],
                    tables: Mapping[str, DataFrame], snapshot: DataFrame,
                    verifications: Mapping[str, Mapping[str, Any]] | None = None,
                    empty: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """Every readiness condition of each snapshot at its target version: the readiness and ``audit_migration``
    tables (one write each for all snapshots) and each snapshot's ``runs/<id>/readiness.json``; returns the JSON
    reports by snapshot id (verdict, phase, counts by level, rows blockers first, node ids, the not-visible
    checklist).

    ``tables`` and ``snapshot`` are the keyed frames holding (at least) these snapshots; the rows of all of them
    come from one plan and one collect. ``verifications``: the migration verdicts of the paired snapshots
    (``audit.paired``), each report's last chapter (``migration_verification``, null for the others). ``empty``:
    the tables known to hold no row (their conditions are not planned).
    """
    ids = list(snapshots)
    if not ids:
        return {}
    by_snapshot: dict[str, list[dict[str, Any]]] = {sid: [] for sid in ids}
    targets = {sid: ReadinessTarget(item.manifest, item.target) for sid, item in snapshots.items()}
    for row in run_readiness(tables, snapshot, targets, empty).collect():
        record = row.asDict()
        by_snapshot[record.pop(KEY)].append(record)
    for rows in by_snapshot.values():
        rows.sort(key=_order)
    clusters = {sid: item.manifest.get("cluster") for sid, item in snapshots.items()}
    write_by_snapshot(warehouse, READINESS_TABLE, READINESS, by_snapshot, clusters)
    write_audit_migration(warehouse, clusters, by_snapshot,
                          {sid: item.cfg.migration.gate for sid, item in snapshots.items()})
    phases = migration_phases(ids, _collected(tables["migration"], ids), _collected(tables["controller"], ids))
    node_ids_of: dict[str, list[int]] = {sid: [] for sid in ids}
    for row in node_ids(tables).where(F.col("broker_id").isNotNull() & F.col(KEY).isin(*ids)).collect():
        node_ids_of[row[KEY]].append(int(row["broker_id"]))
    reports = {}
    for sid, item in snapshots.items():
        rows, manifest = by_snapshot[sid], item.manifest
        for row in rows:
            row["title"] = BY_CHECK_ID[row["check_id"]].title
        phase = phases[sid]
        report = {
            "snapshot_id": sid,
            "cluster": manifest.get("cluster"),
            "ensemble": manifest.get("ensemble"),
            "chroot": manifest.get("chroot"),
            "snapshot_started_at": manifest.get("started_at"),
            "target_version": item.target,
            "verdict": verdict(row["level"] for row in rows),
            "phase": phase,
            "counts": {level: sum(1 for row in rows if row["level"] == level) for level in LEVELS},
            "rows": rows,
            "node_ids": sorted(node_ids_of[sid]),
            "not_visible": [asdict(entry) for entry in NOT_VISIBLE],
            "znode_acls_read": "znode_acls" in manifest,
            "generated_at": datetime.now(UTC).isoformat(),
            "migration_verification": verification_chapter((verifications or {}).get(sid)),
        }
        warehouse.write_json(f"{warehouse.run_dir(sid)}/readiness.json", report)
        log.info("migration readiness of %s at target %s: %s (%s); phase %s", sid, item.target, report["verdict"],
                 ", ".join(f"{level} {n}" for level, n in report["counts"].items() if n) or "no condition",
                 phase["phase"])
        reports[sid] = report
    return reports

