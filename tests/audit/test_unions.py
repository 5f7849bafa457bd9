"""``union_all``: the frames' rows as one frame, united as a balanced tree; ``plans.union_at_once``: in one DataFrame
(audit/unions.py, audit/plans.py)."""

from __future__ import annotations

import pytest

from kafka_zk_audit.audit import plans
from kafka_zk_audit.audit.plans import union_at_once
from kafka_zk_audit.audit.unions import only_columns, union_all
from kafka_zk_audit_testing.spark_counts import SparkCounter

pytestmark = pytest.mark.spark


def test_every_row_of_every_frame_once_by_name_and_by_position(spark):
    frames = [spark.createDataFrame([(i, f"f{i}-{j}") for j in range(1 + i % 3)], "n int, s string") for i in range(7)]
    expected = sorted((i, f"f{i}-{j}") for i in range(7) for j in range(1 + i % 3))
    assert sorted(tuple(r) for r in union_all(frames).collect()) == expected
    swapped = [f.select("s", "n") for f in frames]  # by name: the columns' order does not matter
    assert sorted(tuple(r) for r in union_all([frames[0], *swapped[1:]]).collect()) == expected
    by_position = union_all([f.select("n", "s") for f in frames], by_name=False)
    assert sorted(tuple(r) for r in by_position.collect()) == expected


def test_missing_columns_are_null_when_allowed_and_one_frame_is_itself(spark):
    left = spark.createDataFrame([(1,)], "a int")
    right = spark.createDataFrame([(2,)], "b int")
    third = spark.createDataFrame([(3, 4)], "a int, b int")
    rows = union_all([left, right, third], allow_missing_columns=True).orderBy("a", "b").collect()
    assert [(r["a"], r["b"]) for r in rows] == [(None, 2), (1, None), (3, 4)]
    assert union_all([left]) is left
    with pytest.raises(ValueError):
        union_all([])


def test_only_columns_keeps_a_frame_that_has_them_and_selects_otherwise(spark):
    frame = spark.createDataFrame([(1, "a", True)], "n int, s string, b boolean")
    assert only_columns(frame, ["n", "s", "b"]) is frame  # no new plan
    assert only_columns(frame, ["s", "n"]).columns == ["s", "n"]
    assert tuple(only_columns(frame, ["b", "n"]).first()) == (True, 1)


def test_union_at_once_is_one_frame_of_every_row_by_position(spark):
    frames = [spark.createDataFrame([(i, f"f{i}-{j}") for j in range(1 + i % 3)], "n int, s string") for i in range(7)]
    expected = sorted((i, f"f{i}-{j}") for i in range(7) for j in range(1 + i % 3))
    with SparkCounter(spark) as counted:
        united = union_at_once(frames)
    assert counted.counts["dataframes"] == 1
    assert united.columns == ["n", "s"]
    assert sorted(tuple(r) for r in united.collect()) == expected
    with SparkCounter(spark) as counted:  # select lists too: no frame or analysis per select
        selected = union_at_once(frames, [["n + 1 AS m", "s AS name"]] * 3 + [None] + [["n * 3", "s"]] * 3)
    assert counted.counts["dataframes"] == 1 and counted.counts["analyses"] <= 2, counted.counts
    assert selected.columns == ["m", "name"]
    assert sorted(tuple(r) for r in selected.collect()) == sorted(
        (n + 1 if n < 3 else n if n == 3 else 3 * n, s) for n, s in expected)
    assert union_at_once(frames[:1]) is frames[0]
    with pytest.raises(ValueError):
        union_at_once([])


def test_union_at_once_falls_back_to_one_sql_statement_without_the_internal_route(spark, monkeypatch):
    frames = [spark.createDataFrame([(i, f"f{i}")], "n int, s string") for i in range(4)]
    monkeypatch.setattr(plans, "_catalyst", lambda frame: None)  # as on Spark Connect, or without Spark's internals
    united = union_at_once(frames)
    assert united.columns == ["n", "s"]
    assert sorted(tuple(r) for r in united.collect()) == [(i, f"f{i}") for i in range(4)]
    selected = union_at_once(frames, [["s AS name", "n * 2 AS twice"]] * len(frames))
    assert selected.columns == ["name", "twice"]
    assert sorted(tuple(r) for r in selected.collect()) == [(f"f{i}", 2 * i) for i in range(4)]
