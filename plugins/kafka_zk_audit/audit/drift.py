"""The drift row of a snapshot: how many brokers, topics, partitions, groups and znodes it has, and its epochs.

One row per audited snapshot, written as the ``drift`` table. The gate compares it with the row of the same
cluster's baseline snapshot (Great Expectations' ``drift`` suite, with the bounds as suite parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.contract.schemas import DRIFT

DRIFT_TABLE = "drift"
GROUP_TABLES = ("consumer_registrations", "consumer_owners", "consumer_offsets")


def drift_row(spark: SparkSession, tables: Mapping[str, DataFrame], manifest: Mapping[str, Any],
              baseline_snapshot_id: str | None, row_counts: Mapping[str, int] | None = None) -> DataFrame:
    """The snapshot's counts (one row, schema ``DRIFT``) from its normalized tables and manifest.

    ``row_counts`` (table -> rows, as the job knows them from the written files) spares counting those
    tables again; the rest is one Spark job.
    """
    def rows_of(table: str) -> int:
        return int(row_counts[table]) if row_counts is not None else tables[table].count()

    groups = None
    for name in GROUP_TABLES:
        ids = tables[name].select("group_id")
        groups = ids if groups is None else groups.unionByName(ids)
    figures = (
        tables["controller_epoch"].agg(F.max("epoch").alias("epoch"))
        .crossJoin(groups.distinct().agg(F.count(F.lit(1)).alias("groups")))
        .first()
    )
    epoch = figures["epoch"]
    zxid = max(int((manifest.get("sync_zxid") or {}).get("end") or 0),
               int((manifest.get("zxid_window") or [0, 0])[1] or 0))
    row: dict[str, Any] = {
        "topic": None, "partition": None, "group_id": None, "broker_id": None, "path": manifest.get("chroot") or "/",
        "cluster": manifest.get("cluster"),
        "snapshot_id": manifest["snapshot_id"],
        "baseline_snapshot_id": baseline_snapshot_id,
        "started_at": manifest["started_at"],
        "brokers": rows_of("brokers"),
        "topics": rows_of("topics"),
        "partitions": rows_of("assignments"),
        "consumer_groups": int(figures["groups"]),
        "znodes": int(manifest["znodes"]),
        "controller_epoch": epoch,
        "zxid": zxid,
    }
    counts = ("brokers", "topics", "partitions", "consumer_groups", "znodes", "controller_epoch", "zxid")
    row["evidence"] = " · ".join(f"{name} {row[name]}" for name in counts) + \
        f" · baseline {baseline_snapshot_id or 'none'}"
    return spark.createDataFrame([row], DRIFT)
