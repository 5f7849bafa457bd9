"""Checks over several snapshots at once never mix them: the rows of two snapshots computed together are the
rows of each computed alone, with their own data, clock, limits and baseline (partitions, controller,
migration, brokers and topics, admin operations and znode checks)."""

from __future__ import annotations

import copy
import re
from functools import reduce
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import CHECK_FUNCTIONS, run_checks
from kafka_zk_audit.audit.checks.common import BASELINE_ID
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, KEY, TABLES, keyed
from kafka_zk_audit_testing.spark_counts import SparkCounter
from tests.audit.checks.test_checks import (
    DAY,
    HOUR,
    MINUTE,
    NOW,
    PREVIOUS_SNAPSHOT,
    broken_previous_rows,
    broken_rows,
    derive_partitions,
    healthy_rows,
    make_tables,
)
from tests.audit.checks.test_scenarios import params, small_data_spark  # noqa: F401 (fixture)

pytestmark = pytest.mark.spark

MODULES = ("partitions", "controller", "migration", "brokers_topics", "admin", "znodes")
CHECKS = tuple(check_id for check_id, function in CHECK_FUNCTIONS.items()
               if function.__module__.rsplit(".", 1)[-1] in MODULES)
A, B = "20270115T080000Z", "20270116T080000Z"


def _migration(offset: int, ctime: int, mtime: int) -> dict[str, Any]:
    return {"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 5, "kraft_metadata_offset": offset,
            "kraft_metadata_epoch": 5, "ctime": ctime, "mtime": mtime, "path": "/migration"}


def rows_a() -> dict[str, list]:
    """The broken cluster, with /migration whose offset went back since its baseline (a KRaft controller then)."""
    return {**broken_rows(), "migration": [_migration(4100, ctime=NOW - 30 * DAY, mtime=NOW - MINUTE)]}


def previous_rows_a() -> dict[str, list]:
    rows = broken_previous_rows()
    rows["migration"] = [_migration(4200, ctime=NOW - 30 * DAY, mtime=NOW - HOUR)]
    rows["controller"] = [{"broker_id": 3000, "version": 2, "kraft_controller_epoch": 5, "session": 0,
                           "is_ephemeral": False, "path": "/controller"}]
    return rows


def rows_b() -> dict[str, list]:
    """The healthy cluster a day later, without brokers, /controller nor /controller_epoch (empty tables),
    and a migration waiting for the brokers since long before."""
    rows = copy.deepcopy(healthy_rows())
    for table in ("brokers", "controller", "controller_epoch"):
        del rows[table]
    rows["migration"] = [{**_migration(-1, ctime=NOW - 3 * DAY, mtime=NOW - 2 * DAY), "kraft_controller_id": -1,
                          "kraft_controller_epoch": -1, "kraft_metadata_epoch": -1}]
    return rows


def as_snapshot(tables: dict[str, DataFrame], snapshot_id: str) -> dict[str, DataFrame]:
    return {name: frame.withColumn(KEY, F.lit(snapshot_id)) for name, frame in tables.items()}


def union(*table_sets: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """Each table of several snapshots as one frame."""
    return {name: _union_all([tables[name] for tables in table_sets]) for name in table_sets[0]}


def _union_all(frames: list[DataFrame]) -> DataFrame:
    return reduce(DataFrame.unionByName, frames)


@pytest.fixture(scope="module")
def outputs(small_data_spark: SparkSession) -> dict[str, list[tuple]]:  # noqa: F811
    spark = small_data_spark
    now_a = as_snapshot(make_tables(spark, rows_a()), A)
    before_a = {name: frame.withColumn(BASELINE_ID, F.lit(PREVIOUS_SNAPSHOT))
                for name, frame in as_snapshot(make_tables(spark, previous_rows_a()), A).items()}
    now_b = as_snapshot(make_tables(spark, rows_b()), B)
    # Different clocks and limits: B is a day later, with an SLA of one hour and a backlog limit of 0 children.
    params_a = params(spark, NOW, A, backlog_max_children=2)
    params_b = params(spark, NOW + DAY, B, delete_topic_sla_ms=HOUR, reassignment_sla_ms=2 * HOUR,
                      backlog_max_children=0, load_stuck_after_ms=HOUR)
    frames = {
        "together": run_checks(union(now_a, now_b), before_a, params_a.unionByName(params_b), CHECKS),
        "a": run_checks(now_a, before_a, params_a, CHECKS),
        "b": run_checks(now_b, None, params_b, CHECKS),
    }
    # One action per run: a union of the three plans costs more to plan than the three runs.
    columns = keyed(CHECK_OUTPUT).names
    return {label: sorted((tuple(row) for row in frame.select(*columns).collect()), key=repr)
            for label, frame in frames.items()}


def test_two_snapshots_together_give_each_snapshot_alone(outputs: dict[str, list[tuple]]) -> None:
    assert outputs["together"] == sorted(outputs["a"] + outputs["b"], key=repr)
    assert {row[0] for row in outputs["a"]} == {A} and {row[0] for row in outputs["b"]} == {B}


def test_each_snapshot_has_its_own_findings(outputs: dict[str, list[tuple]]) -> None:
    checks_a = {row[1] for row in outputs["a"]}
    checks_b = {row[1] for row in outputs["b"]}
    # History checks only where there is a baseline (A's); B has no /controller, A has one.
    assert {"leader_epoch_regressed", "controller_epoch_regressed", "migration_offset_regressed",
            "migration_rolled_back"} <= checks_a
    assert not {c for c in checks_b if c.endswith(("_regressed", "_rolled_back", "_crash_loop"))}
    assert "controller_missing" in checks_b and "controller_missing" not in checks_a
    # B has no broker at all: every replica is on an unknown broker; its migration waits since 2 days.
    assert "replica_on_unknown_broker" in checks_b and "migration_stuck" in checks_b
    # B's own clock and SLAs in its details.
    detail_b = {row[1]: row[7] for row in outputs["b"]}
    assert detail_b["delete_topic_stuck"] == (
        "topic orders marked for deletion 1d 1h ago (SLA 1h; age = snapshot start 2027-01-16T08:00:00Z - znode "
        "ctime 2027-01-15T07:00:00Z) and /brokers/topics/orders still exists"
    )
    assert "(limits: 0 children, 30m; age = snapshot start 2027-01-16T08:00:00Z" in detail_b["notification_backlog"]


def test_the_checks_of_a_table_without_a_row_are_not_planned_and_nothing_changes(
        small_data_spark: SparkSession) -> None:  # noqa: F811
    """A table with no row in any snapshot (``run_checks``'s ``empty``, from the audit's row counts) gives no finding:
    its checks, and the facts only they join, are not planned at all; the findings are the same."""
    spark = small_data_spark
    rows = rows_b()  # no broker, no /controller: the checks on those tables would find nothing
    tables = as_snapshot(make_tables(spark, rows), B)
    params_b = params(spark, NOW + DAY, B)
    with_partitions = {**rows, "partitions": derive_partitions(rows)}
    empty = {name for name in TABLES if not with_partitions.get(name)}
    assert {"brokers", "controller", "controller_epoch"} <= empty and "partitions" not in empty
    with SparkCounter(spark) as planned_all:
        every_check = run_checks(tables, None, params_b, CHECKS)
    with SparkCounter(spark) as planned_fewer:
        skipping = run_checks(tables, None, params_b, CHECKS, empty=empty)
    # the evaluation is one frame either way (plans.Steps): the checks of the empty tables are not in its plan
    assert planned_fewer.counts["dataframes"] <= planned_all.counts["dataframes"], (planned_fewer.counts,
                                                                                    planned_all.counts)
    on_empty = [check_id for check_id in CHECKS if CHECK_FUNCTIONS[check_id].on in empty]
    assert "controller_not_alive" in on_empty and "under_replicated" not in on_empty, on_empty
    plans = [frame._jdf.queryExecution().logical().toString() for frame in (every_check, skipping)]
    planned = [{check_id for check_id in CHECKS if re.search(rf"\b{re.escape(check_id)} AS check_id#", plan)}
               for plan in plans]
    assert set(on_empty) <= planned[0] and "under_replicated" in planned[0], planned[0]
    assert planned[1] == planned[0] - set(on_empty), planned[1]
    columns = keyed(CHECK_OUTPUT).names
    found = [sorted((tuple(row) for row in frame.select(*columns).collect()), key=repr)
             for frame in (every_check, skipping)]
    assert found[0] == found[1]
    # a check on a table with rows still joins the empty brokers table as its fact
    assert "replica_on_unknown_broker" in {row[1] for row in found[1]}


def test_no_fact_brings_a_column_its_frame_already_has(small_data_spark: SparkSession) -> None:  # noqa: F811
    """The engine joins a check's facts without asking for schemas (under Spark Connect each ask is a round trip):
    that a fact's columns are new to its frame is this test's, for every snapshot and readiness check."""
    from kafka_zk_audit.audit.checks.engine import Sources
    from kafka_zk_audit.audit.checks.readiness import READINESS_FUNCTIONS, _sources
    from kafka_zk_audit.contract.schemas import SNAPSHOT

    spark = small_data_spark
    tables = {name: spark.createDataFrame([], keyed(TABLES[name])) for name in TABLES}
    snapshot_sources = Sources({**tables, **{f"previous_{name}": frame for name, frame in tables.items()},
                                "params": params(spark, NOW, B)})
    readiness_rules = list(READINESS_FUNCTIONS.values())
    readiness_sources = _sources(tables, spark.createDataFrame([], keyed(SNAPSHOT)), {B: ({}, "3.9")},
                                 readiness_rules)
    clashes, joined = [], 0
    for sources, rules in ((snapshot_sources, CHECK_FUNCTIONS.values()), (readiness_sources, readiness_rules)):
        for rule in rules:
            frame = sources.get(rule.on)
            if frame is None:
                continue
            columns = set(frame.columns)
            for fact in rule.facts:
                brought = [c for c in sources.get(fact.name).columns if c not in fact.on]
                clashes += [(rule.check_id, fact.name, c) for c in brought if c in columns]
                columns.update(brought)
                joined += 1
    assert joined > 20  # the facts were looked at
    assert clashes == []
