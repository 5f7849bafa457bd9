"""The migration diff's findings in the audit: the rows of each paired snapshot's verdict, merged into its checks'.

The snapshot task of a cluster paired with its KRaft log (``clusters[].migration``) compared the two and wrote the
verdict beside the snapshot (``snapshot.migration.paired``; ``Warehouse.migration_diff_path``:
``runs/<id>/migration_diff.json``). Its findings are in the checks' shape already (contract.schemas CHECK_OUTPUT);
keyed by their snapshot, they join the raw rows of the batch before ``finalize_findings``, so severity overrides,
suppressions, history, the gate, the alerts and the summaries treat them like any finding. A snapshot without a
verdict adds nothing. ``verification_chapter`` is the verdict as the readiness report's last chapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from kafka_zk_audit.contract.catalogue import BY_ID, PAIRED_CHECK_IDS, SEVERITIES
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
    frame = spark.createDataFrame([tuple(row[name] for name in schema.names) for row in rows], schema)
    return raw.unionByName(frame.select(*raw.columns))


EQUAL_LABELS = (("topic", "topics"), ("partition", "partitions"), ("config", "configs"), ("acl", "ACLs"),
                ("quota", "quotas"), ("scram", "users"))


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
    return {
        "verified": bool(verdict.get("verified")) and not error,
        "status": "unverified" if error else "verified" if verdict.get("verified") else "diverged",
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
