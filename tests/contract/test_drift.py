"""The drift table's counts and their bound columns against the DRIFT schema (tests/gate/test_drift.py holds the
drift suite to them)."""

from __future__ import annotations

from kafka_zk_audit.contract.drift import BOUND_COLUMNS, COUNTS
from kafka_zk_audit.contract.schemas import DRIFT


def test_every_count_is_a_numeric_column_of_the_drift_table() -> None:
    types = {field.name: field.dataType.typeName() for field in DRIFT.fields}
    assert all(types.get(count) in ("integer", "long") for count in COUNTS)
    assert {name for name, kind in types.items() if kind in ("integer", "long") and name not in COUNTS} == {
        "partition", "broker_id"}  # the index columns every validated table carries


def test_each_count_has_a_floor_or_a_ceiling() -> None:
    assert set(COUNTS.values()) <= {"min", "max"}
    assert BOUND_COLUMNS == tuple(f"{count}_{bound}" for count, bound in COUNTS.items())
    assert [column for column in BOUND_COLUMNS if column.endswith("_max")] == ["controller_epoch_max"]
