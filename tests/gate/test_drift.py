"""Drift bounds from the baseline's drift row, and the drift suite that compares each count with its bound (no GX
run; the gate's runs over real clusters are in tests/audit/test_batch.py and tests/system)."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_zk_audit.contract.schemas import DRIFT
from kafka_zk_audit.contract.settings import parse_config
from kafka_zk_audit.gate.drift import BOUND_COLUMNS, OPEN_MAX, drift_parameters

REPO = Path(__file__).resolve().parents[2]
BOUNDS = parse_config({"drift": {"brokers_max_drop": 0, "topics_max_drop_pct": 5, "partitions_max_drop_pct": 10,
                                 "consumer_groups_max_drop_pct": 50, "znodes_max_drop_pct": 10,
                                 "controller_changes_max": 3}}).drift
PREVIOUS = {"brokers": 5, "topics": 100, "partitions": 1000, "consumer_groups": 3, "znodes": 12345,
            "controller_epoch": 17, "zxid": 0x1_0000_0042}


def test_bounds_follow_the_settings():
    params = drift_parameters(PREVIOUS, BOUNDS)
    assert params == {
        "brokers_min": 5,              # may not drop at all
        "topics_min": 95,              # 5 % of 100
        "partitions_min": 900,         # 10 % of 1000
        "consumer_groups_min": 2,      # 50 % of 3 = 1.5 may go: 2 must stay
        "znodes_min": 11111,           # ceil(12345 * 0.9 = 11110.5)
        "controller_epoch_max": 20,
        "zxid_min": 0x1_0000_0042,     # the zxid may not go back
    }


def test_without_a_baseline_every_bound_is_open():
    params = drift_parameters(None, BOUNDS)
    assert params["controller_epoch_max"] == OPEN_MAX
    assert all(value == 0 for name, value in params.items() if name.endswith("_min"))


def test_the_suite_compares_every_count_with_its_bound_column():
    suite = json.loads((REPO / "expectations" / "drift.json").read_text())
    pairs = {(e["kwargs"]["column_A"], e["kwargs"]["column_B"]) for e in suite["expectations"]}
    assert {e["type"] for e in suite["expectations"]} == {"expect_column_pair_values_a_to_be_greater_than_b"}
    assert all(e["kwargs"]["or_equal"] is True for e in suite["expectations"])  # the bound itself is allowed
    counted = {name for name in DRIFT.fieldNames()} - {"topic", "partition", "group_id", "broker_id", "path",
                                                       "evidence", "cluster", "snapshot_id", "baseline_snapshot_id",
                                                       "started_at"}
    expected = {(f"{name}_max", name) if name == "controller_epoch" else (name, f"{name}_min") for name in counted}
    assert pairs == expected
    assert {bound for pair in pairs for bound in pair if bound.endswith(("_min", "_max"))} == set(BOUND_COLUMNS)
    assert set(drift_parameters(PREVIOUS, BOUNDS)) == set(BOUND_COLUMNS)
