"""The audit job's ZK → KRaft readiness step: the readiness table and ``runs/<id>/readiness.json``.

Readiness is not health: its rows never enter the findings (a healthy 0.10 cluster has no finding, even if it
cannot migrate yet), never alert, and gate only with ``migration.gate``. The report
(``report/readiness.py``) renders the JSON; the gate validates ``audit_migration`` with the
``expectations/migration.json`` suite: one row per readiness row (or one all-False row), one boolean per
level, and ``blocker_gating``, True on blockers only when ``migration.gate`` is on (its expectation is the
only one of the suite with a gating severity).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.checks.migration import migration_phase
from kafka_zk_audit.audit.checks.readiness import node_ids, run_readiness
from kafka_zk_audit.contract.readiness import BY_CHECK_ID, LEVEL_RANK, LEVELS, NOT_VISIBLE, verdict
from kafka_zk_audit.contract.schemas import READINESS
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
SUBJECT = ("topic", "partition", "group_id", "broker_id", "path")


def _first_row(frame: DataFrame) -> dict[str, Any] | None:
    rows = frame.limit(1).collect()
    return rows[0].asDict() if rows else None


def _order(row: dict[str, Any]) -> tuple:
    subject = tuple((value is None, "" if value is None else str(value).zfill(12)) for value in
                    (row[name] for name in SUBJECT))
    return (LEVEL_RANK.get(row["level"], len(LEVELS)), row["condition_id"], row["check_id"], subject)


def audit_migration_rows(rows: list[dict[str, Any]], gate: bool) -> list[dict[str, Any]]:
    """The gate's rows: each readiness row with a flag per level (one all-False row when there is none)."""
    audit = [{
        **{name: row[name] for name in SUBJECT}, "evidence": f"{row['level']} · {row['detail']}",
        "condition_id": row["condition_id"], "check_id": row["check_id"],
        **{level: row["level"] == level for level in LEVELS}, "blocker_gating": gate and row["level"] == "blocker",
    } for row in rows]
    return audit or [{**{field.name: None for field in AUDIT_MIGRATION.fields},
                      **{level: False for level in LEVELS}, "blocker_gating": False}]


def write_audit_migration(spark: SparkSession, warehouse: Warehouse, snapshot_id: str,
                          rows: list[dict[str, Any]], gate: bool) -> None:
    """``audit_migration`` of a snapshot (also written, all False, when readiness is off)."""
    spark.createDataFrame(audit_migration_rows(rows, gate), AUDIT_MIGRATION).coalesce(1).write.mode(
        "overwrite").parquet(warehouse.table_dir(AUDIT_TABLE, snapshot_id))


def audit_readiness(spark: SparkSession, warehouse: Warehouse, snapshot_id: str, manifest: dict[str, Any],
                    tables: dict[str, DataFrame], snapshot: DataFrame, cfg: AuditConfig,
                    target_version: str | None = None) -> dict[str, Any]:
    """Run every readiness condition at the target version, write the readiness table and JSON, and return
    the JSON (verdict, phase, counts by level, rows blockers first, node ids, the not-visible checklist)."""
    target = target_version or cfg.migration.target_version
    rows = [row.asDict() for row in run_readiness(tables, snapshot, manifest, target).collect()]
    rows.sort(key=_order)
    spark.createDataFrame(rows, READINESS).coalesce(1).write.mode("overwrite").parquet(
        warehouse.table_dir(READINESS_TABLE, snapshot_id))
    write_audit_migration(spark, warehouse, snapshot_id, rows, cfg.migration.gate)
    phase = migration_phase(_first_row(tables["migration"]), _first_row(tables["controller"]))
    ids = sorted(int(row["broker_id"]) for row in node_ids(tables).where(F.col("broker_id").isNotNull()).collect())
    for row in rows:
        row["title"] = BY_CHECK_ID[row["check_id"]].title
    report = {
        "snapshot_id": snapshot_id,
        "cluster": manifest.get("cluster"),
        "ensemble": manifest.get("ensemble"),
        "chroot": manifest.get("chroot"),
        "snapshot_started_at": manifest.get("started_at"),
        "target_version": target,
        "verdict": verdict(row["level"] for row in rows),
        "phase": phase,
        "counts": {level: sum(1 for row in rows if row["level"] == level) for level in LEVELS},
        "rows": rows,
        "node_ids": ids,
        "not_visible": [asdict(item) for item in NOT_VISIBLE],
        "znode_acls_read": "znode_acls" in manifest,
        "generated_at": datetime.now(UTC).isoformat(),
    }
    warehouse.write_json(f"{warehouse.run_dir(snapshot_id)}/readiness.json", report)
    log.info("migration readiness at target %s: %s (%s); phase %s", target, report["verdict"],
             ", ".join(f"{level} {n}" for level, n in report["counts"].items() if n) or "no condition",
             phase["phase"])
    return report
