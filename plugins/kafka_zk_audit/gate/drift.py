"""The drift suite: each cluster against its baseline snapshot, its bounds as columns of the gate's run table.

``expectations/drift.json`` compares every counted column of the drift table with a bound column
(``expect_column_pair_values_a_to_be_greater_than_b``, e.g. ``topics >= topics_min``). The gate adds the
bound columns to each snapshot's drift row when it stages the run's drift table (``gate/staging.py``),
from the baseline's drift row and that cluster's ``drift`` settings, so one validation judges every
cluster of a run by its own bounds. The first snapshot of a cluster has no baseline: every bound is open.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kafka_zk_audit.contract.drift import BOUND_COLUMNS, DRIFT_TABLE
from kafka_zk_audit.contract.settings import DriftConfig
from kafka_zk_audit.contract.warehouse import Warehouse

DRIFT_SUITE = "drift"
OPEN_MIN = 0
OPEN_MAX = 2**31 - 1  # fits the int columns (controller_epoch)


def _drop_floor(previous: int, max_drop_pct: float) -> int:
    return max(0, math.ceil(previous * (1 - max_drop_pct / 100) - 1e-9))


def drift_parameters(previous: Mapping[str, Any] | None, bounds: DriftConfig) -> dict[str, int]:
    """The bounds for this snapshot (``BOUND_COLUMNS``), from the baseline's drift row (None: no baseline, all
    bounds open)."""
    if not previous:
        return {name: OPEN_MAX if name.endswith("_max") else OPEN_MIN for name in BOUND_COLUMNS}
    epoch = previous.get("controller_epoch")
    return {
        "brokers_min": max(0, int(previous["brokers"]) - bounds.brokers_max_drop),
        "topics_min": _drop_floor(int(previous["topics"]), bounds.topics_max_drop_pct),
        "partitions_min": _drop_floor(int(previous["partitions"]), bounds.partitions_max_drop_pct),
        "consumer_groups_min": _drop_floor(int(previous["consumer_groups"]), bounds.consumer_groups_max_drop_pct),
        "znodes_min": _drop_floor(int(previous["znodes"]), bounds.znodes_max_drop_pct),
        "controller_epoch_max": OPEN_MAX if epoch is None else int(epoch) + bounds.controller_changes_max,
        "zxid_min": int(previous["zxid"]),
    }


def previous_drift_row(warehouse: Warehouse, snapshot_id: str) -> dict[str, Any] | None:
    """The drift row of the snapshot's baseline (named by its audit figures), or None without one."""
    import pyarrow.parquet as pq

    audit_path = f"{warehouse.run_dir(snapshot_id)}/audit.json"
    baseline = warehouse.read_json(audit_path).get("baseline_snapshot_id") if warehouse.exists(audit_path) else None
    if not baseline or not warehouse.exists(warehouse.table_dir(DRIFT_TABLE, baseline)):
        return None
    rows = pq.read_table(warehouse.fs_path(warehouse.table_dir(DRIFT_TABLE, baseline)),
                         filesystem=warehouse.fs).to_pylist()
    return rows[0] if rows else None
