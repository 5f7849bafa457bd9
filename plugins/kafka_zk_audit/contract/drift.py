"""The drift table's contract: its name, and the counts of a drift row with the bound the gate holds each to.

``audit/drift.py`` writes one drift row per audited snapshot (schema ``contract.schemas.DRIFT``), ``gate/drift.py``
computes each count's bound from the baseline's row and the ``drift`` settings, and ``expectations/drift.json``
compares every count with its bound column.
"""

from __future__ import annotations

DRIFT_TABLE = "drift"
# The counts of a drift row, in the order its evidence names them, each with the kind of its bound: a floor
# (``<count>_min``: the count may not fall below it) or a ceiling (``<count>_max``: the controller epoch).
COUNTS: dict[str, str] = {
    "brokers": "min", "topics": "min", "partitions": "min", "consumer_groups": "min", "znodes": "min",
    "controller_epoch": "max", "zxid": "min",
}
# The bound column of each count, as the gate adds them to the drift rows it validates.
BOUND_COLUMNS: tuple[str, ...] = tuple(f"{count}_{bound}" for count, bound in COUNTS.items())
