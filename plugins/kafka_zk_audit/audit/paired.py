"""The migration diff in the audit: every paired snapshot of the batch compared in one Spark plan, its findings
merged into its checks'.

The snapshot task of a cluster paired with its KRaft log (``clusters[].migration``) laid both sides out as entries
(``snapshot.migration.paired``: the keyed table ``tables/migration_entries/``) and wrote the prepared verdict beside
the snapshot (``Warehouse.migration_diff_path``: ``runs/<id>/migration_diff.json``, status ``prepared``: offset, lag
and the state findings). ``paired_verdicts`` reads the entries of every prepared snapshot of the batch as one frame,
compares them keyed by (snapshot, kind, key) in one plan (``audit.migration_diff.diff``), and
completes each verdict (findings, equal counts, ``verified`` or ``diverged``), written back as its
``migration_diff.json``. A prepared snapshot whose entries are gone is unverified, with a ``migration_unverifiable``
finding. The findings are in the checks' shape (contract.schemas CHECK_OUTPUT); keyed by their snapshot, they join
the raw rows of the batch before ``finalize_findings``, so severity overrides, suppressions, history, the gate, the
alerts and the summaries treat them like any finding. A snapshot without a verdict adds nothing.
``verification_chapter`` is the verdict as the readiness report's last chapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from kafka_zk_audit.audit.keyed_io import partition_dir, present, rows_frame
from kafka_zk_audit.audit.migration_diff import ENTRIES_DDL, ENTRY_COLUMNS, diff
from kafka_zk_audit.contract.catalogue import BY_ID, PAIRED_CHECK_IDS, SEVERITIES
from kafka_zk_audit.contract.migration_checks import (
    DIVERGED,
    EQUAL_LABELS,
    PREPARED,
    SIDES,
    UNVERIFIED,
    VERIFIED,
    summary_line,
)
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, KEY, keyed
from kafka_zk_audit.contract.warehouse import Warehouse


def read_verdicts(warehouse: Warehouse, snapshot_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The migration verdict of each paired snapshot of the batch, by snapshot id."""
    verdicts = {}
    for snapshot_id in snapshot_ids:
        verdict = warehouse.read_migration_diff(snapshot_id)
        if verdict is not None:
            verdicts[snapshot_id] = verdict
    return verdicts


def paired_verdicts(spark: SparkSession, warehouse: Warehouse, snapshot_ids: Sequence[str],
                    ) -> dict[str, dict[str, Any]]:
    """The migration verdict of each paired snapshot of the batch, the prepared ones compared in one plan (see the
    module docstring) and written back; by snapshot id."""
    verdicts = read_verdicts(warehouse, snapshot_ids)
    pending = sorted(sid for sid, verdict in verdicts.items() if verdict.get("status") == PREPARED)
    if not pending:
        return verdicts
    laid_out = present(warehouse, warehouse.migration_entries_dir())
    for sid in pending:
        if sid not in laid_out:
            _unverified(verdicts[sid], "the entries the snapshot task laid out are gone (pruned, or the task was "
                                       "interrupted): snapshot the cluster again")
    compared = [sid for sid in pending if sid in laid_out]
    if compared:
        _complete(verdicts, compare_entries(spark, warehouse, compared))
    for sid in pending:
        warehouse.write_json(warehouse.migration_diff_path(sid), verdicts[sid])
    return verdicts


def read_side(spark: SparkSession, warehouse: Warehouse, snapshot_ids: Sequence[str], side: str) -> DataFrame:
    """One side's entries of the snapshots as one frame keyed by ``pair`` (the snapshot id): its files only."""
    root = warehouse.migration_entries_dir()
    frame = (spark.read.schema(f"{ENTRIES_DDL}, {KEY} string, side string").option("basePath", root)
             .parquet(*[f"{partition_dir(root, sid)}/side={side}" for sid in snapshot_ids]))
    return frame.withColumnRenamed(KEY, "pair").select(*ENTRY_COLUMNS)


def compare_entries(spark: SparkSession, warehouse: Warehouse, snapshot_ids: Sequence[str],
                    ) -> dict[str, tuple[list[dict[str, Any]], dict[str, int]]]:
    """The findings and equal counts of the snapshots' entries, compared in one plan keyed by (snapshot, kind, key)
    (``audit.migration_diff.diff``: a second job for the entries that differ, only when some do)."""
    zk, kraft = (read_side(spark, warehouse, snapshot_ids, side) for side in SIDES)
    findings, equal = diff(zk, kraft)
    return {sid: (findings.get(sid, []), equal.get(sid, {})) for sid in snapshot_ids}


def _order(finding: Mapping[str, Any]) -> tuple:
    return (finding["check_id"], finding.get("path") or "", finding.get("topic") or "",
            finding.get("partition") if finding.get("partition") is not None else -1, finding.get("detail") or "")


def _complete(verdicts: dict[str, dict[str, Any]],
              results: Mapping[str, tuple[list[dict[str, Any]], dict[str, int]]]) -> None:
    """The prepared verdicts with the comparison's findings (after the state findings) and equal counts."""
    for sid, (findings, equal) in results.items():
        verdict = verdicts[sid]
        verdict["findings"] = list(verdict.get("findings") or []) + sorted(findings, key=_order)
        verdict["equal"] = dict(sorted(equal.items()))
        verdict["verified"] = not verdict["findings"]
        verdict["status"] = VERIFIED if verdict["verified"] else DIVERGED
        verdict["summary"] = summary_line(len(verdict["findings"]), equal, verdict.get("offset"),
                                          str(verdict.get("release")))


def _unverified(verdict: dict[str, Any], error: str) -> None:
    verdict.update(status=UNVERIFIED, verified=False, error=error, summary=f"migration not verified: {error}",
                   findings=[*(verdict.get("findings") or []), {
                       "check_id": "migration_unverifiable", "topic": None, "partition": None, "group_id": None,
                       "broker_id": None, "path": "/migration", "explained": False,
                       "detail": f"the migration could not be verified: {error}"}])


def paired_rows(verdicts: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The verdicts' findings as keyed CHECK_OUTPUT rows (a row of an unknown check id is an error)."""
    rows = []
    for snapshot_id, verdict in verdicts.items():
        for finding in verdict.get("findings") or ():
            if finding["check_id"] not in PAIRED_CHECK_IDS:
                raise ValueError(f"{snapshot_id}: the migration diff reported {finding['check_id']!r}, which is "
                                 "not a migration check of the catalogue")
            rows.append({KEY: snapshot_id, **{name: finding.get(name) for name in CHECK_OUTPUT.names}})
    return rows


def with_paired_findings(spark: SparkSession, raw: DataFrame, verdicts: Mapping[str, Mapping[str, Any]],
                         ) -> DataFrame:
    """The raw check rows with the migration diff's of the paired snapshots (unchanged when there are none)."""
    rows = paired_rows(verdicts)
    if not rows:
        return raw
    schema = keyed(CHECK_OUTPUT)
    frame = rows_frame(spark, [tuple(row[name] for name in schema.names) for row in rows], schema)
    return raw.unionByName(frame)


def verification_chapter(verdict: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The readiness report's last chapter for a paired snapshot (None for any other): verified or not, the
    divergences (most severe first, each with both sides' evidence), what is equal per kind, offset and lag."""
    if verdict is None:
        return None
    divergences = sorted(
        ({"check_id": f["check_id"], "severity": BY_ID[f["check_id"]].severity, "topic": f.get("topic"),
          "partition": f.get("partition"), "broker_id": f.get("broker_id"), "path": f.get("path"),
          "detail": f.get("detail")} for f in verdict.get("findings") or ()),
        key=lambda d: (SEVERITIES.index(d["severity"]), d["check_id"], d["path"] or "", d["topic"] or ""))
    equal = verdict.get("equal") or {}
    error = verdict.get("error")
    if verdict.get("status") == PREPARED and not error:  # laid out, never compared (the audit did not get to it)
        error = "the two sides were laid out but not compared"
    return {
        "verified": bool(verdict.get("verified")) and not error,
        "status": UNVERIFIED if error else VERIFIED if verdict.get("verified") else DIVERGED,
        "error": error,
        "release": verdict.get("release"),
        "offset": verdict.get("offset"),
        "log_end_offset": verdict.get("log_end_offset"),
        "migration_state": verdict.get("migration_state"),
        "lag_records": verdict.get("lag_records"),
        "lag_ms": verdict.get("lag_ms"),
        "max_lag_records": verdict.get("max_lag_records"),
        "max_lag_ms": verdict.get("max_lag_ms"),
        "equal": {label: int(equal.get(kind, 0)) for kind, label in EQUAL_LABELS},
        "divergences": divergences,
        "notes": list(verdict.get("notes") or ()),
        "summary": verdict.get("summary"),
    }
