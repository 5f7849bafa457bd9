"""The drift row of a snapshot: how many brokers, topics, partitions, groups and znodes it has, and its epochs.

One row per audited snapshot (schema ``contract.schemas.DRIFT``), written as the ``drift`` table (its name, its
counts and their bounds: ``contract/drift.py``). The gate compares it with the row of the same cluster's baseline
snapshot (Great Expectations' ``drift`` suite, with the bounds as suite parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.batch import Batch
from kafka_zk_audit.audit.unions import union_all
from kafka_zk_audit.contract.drift import COUNTS
from kafka_zk_audit.contract.schemas import KEY

GROUP_TABLES = ("consumer_registrations", "consumer_owners", "consumer_offsets")


def drift_rows(tables: Mapping[str, DataFrame], batch: Batch,
               row_counts: Mapping[str, Mapping[str, int]]) -> list[dict[str, Any]]:
    """Each snapshot's counts (one row per snapshot of the batch, as dicts of ``DRIFT``) from its normalized tables
    and manifest.

    ``row_counts`` (snapshot id -> table -> rows, as the job knows them from the written files) spares counting
    those tables again; the epochs and the consumer groups are one Spark job for the whole batch.
    """
    groups = union_all([tables[name].select(KEY, "group_id") for name in GROUP_TABLES])
    counted = groups.distinct().groupBy(KEY).agg(F.count(F.lit(1)).alias("groups"))
    epochs = tables["controller_epoch"].groupBy(KEY).agg(F.max("epoch").alias("epoch"))
    figures = counted.join(epochs, KEY, "full").collect()
    by_snapshot = {row[KEY]: row for row in figures}
    rows = []
    for snapshot in batch.snapshots:
        sid, manifest = snapshot.snapshot_id, snapshot.manifest
        counts, found = row_counts[sid], by_snapshot.get(sid)
        zxid = max(int((manifest.get("sync_zxid") or {}).get("end") or 0),
                   int((manifest.get("zxid_window") or [0, 0])[1] or 0))
        row: dict[str, Any] = {
            "topic": None, "partition": None, "group_id": None, "broker_id": None,
            "path": manifest.get("chroot") or "/",
            "cluster": manifest.get("cluster"),
            "snapshot_id": sid,
            "baseline_snapshot_id": snapshot.baseline_id,
            "started_at": manifest["started_at"],
            "brokers": int(counts["brokers"]),
            "topics": int(counts["topics"]),
            "partitions": int(counts["assignments"]),
            "consumer_groups": int((found and found["groups"]) or 0),
            "znodes": int(manifest["znodes"]),
            "controller_epoch": found and found["epoch"],
            "zxid": zxid,
        }
        row["evidence"] = " · ".join(f"{name} {row[name]}" for name in COUNTS) + \
            f" · baseline {snapshot.baseline_id or 'none'}"
        rows.append(row)
    return rows
