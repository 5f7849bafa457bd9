"""The drift suite: each cluster against its baseline snapshot, bounded by GX suite parameters.

``expectations/drift.json`` is a template whose bounds are suite parameters (``{"$PARAMETER": "topics_min"}``).
For every audited snapshot the gate makes one copy of it per cluster, its parameter names suffixed with the
cluster's key (``topics_min__prod_eu``), and runs the checkpoint with the values computed here from the
baseline's drift row and the ``drift`` settings. The first snapshot of a cluster has no baseline: every
bound is then open.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any

from kafka_zk_audit.contract.settings import DriftConfig
from kafka_zk_audit.gate.suites import LoadedSuite

DRIFT_SUITE = "drift"
DRIFT_TABLE = "drift"
OPEN_MIN = 0
OPEN_MAX = 2**31 - 1  # fits the int columns (controller_epoch)
PARAMETER = "$PARAMETER"


def cluster_key(cluster: str | None) -> str:
    """A parameter-name-safe form of the cluster name (``prod-eu.1`` → ``prod_eu_1``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", cluster or "default")


def _drop_floor(previous: int, max_drop_pct: float) -> int:
    return max(0, math.ceil(previous * (1 - max_drop_pct / 100) - 1e-9))


def drift_parameters(previous: Mapping[str, Any] | None, bounds: DriftConfig) -> dict[str, int]:
    """The bounds for this snapshot, from the baseline's drift row (None: no baseline, all bounds open)."""
    if not previous:
        return {"brokers_min": OPEN_MIN, "topics_min": OPEN_MIN, "partitions_min": OPEN_MIN,
                "consumer_groups_min": OPEN_MIN, "znodes_min": OPEN_MIN, "controller_epoch_max": OPEN_MAX,
                "zxid_min": OPEN_MIN}
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


def _rename_parameters(value: Any, suffix: str) -> Any:
    if isinstance(value, dict):
        if PARAMETER in value:
            return {**value, PARAMETER: f"{value[PARAMETER]}__{suffix}"}
        return {key: _rename_parameters(item, suffix) for key, item in value.items()}
    if isinstance(value, list):
        return [_rename_parameters(item, suffix) for item in value]
    return value


def suite_for_cluster(template: Mapping[str, Any], cluster: str | None) -> dict[str, Any]:
    """A copy of the drift suite for one cluster: named ``drift.<cluster>``, its parameters suffixed."""
    suite = copy.deepcopy(dict(template))
    suite["name"] = f"{DRIFT_SUITE}.{cluster or 'default'}"
    suite["expectations"] = [
        {**expectation, "kwargs": _rename_parameters(expectation.get("kwargs", {}), cluster_key(cluster))}
        for expectation in suite.get("expectations", [])
    ]
    suite.setdefault("meta", {})["cluster"] = cluster
    return suite


def cluster_parameters(cluster: str | None, parameters: Mapping[str, int]) -> dict[str, int]:
    """``parameters`` under the names ``suite_for_cluster`` gives them."""
    return {f"{name}__{cluster_key(cluster)}": value for name, value in parameters.items()}


def drift_suite_for_cluster(loaded: LoadedSuite, cluster: str | None) -> LoadedSuite:
    """The loaded drift suite as ``suite_for_cluster`` makes it, ready for the checkpoint and the verdict."""
    import great_expectations as gx

    data = loaded.suite.to_json_dict()
    data.pop("id", None)
    for expectation in data.get("expectations", []):
        expectation.pop("id", None)
    copied = suite_for_cluster(data, cluster)
    suite = gx.ExpectationSuite(**copied)
    suffix = cluster_key(cluster)
    described = tuple({**e, "kwargs": _rename_parameters(e.get("kwargs") or {}, suffix)} for e in loaded.expectations)
    return dataclasses.replace(loaded, suite=suite, expectations=described)
