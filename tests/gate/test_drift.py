"""Drift bounds from the baseline's drift row, and the per-cluster copy of the drift suite (no GX run)."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_zk_audit.contract.settings import parse_config
from kafka_zk_audit.gate.drift import (
    OPEN_MAX,
    cluster_parameters,
    drift_parameters,
    suite_for_cluster,
)

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


def test_the_suite_template_is_copied_per_cluster_with_its_own_parameter_names():
    template = json.loads((REPO / "expectations" / "drift.json").read_text())
    copy = suite_for_cluster(template, "prod-eu.1")
    assert copy["name"] == "drift.prod-eu.1"
    params = {e["kwargs"].get("min_value", e["kwargs"].get("max_value"))["$PARAMETER"] for e in copy["expectations"]}
    assert params == set(cluster_parameters("prod-eu.1", drift_parameters(PREVIOUS, BOUNDS)))
    assert template["expectations"][0]["kwargs"]["min_value"] == {"$PARAMETER": "brokers_min"}  # untouched
