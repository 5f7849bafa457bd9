"""Upper bounds on the DataFrames an audit builds and the analyses it runs: counts, not timings (each DataFrame is one
Catalyst analysis in the driver, the audit's main fixed cost at small sizes, and a frame saved by an analysis
elsewhere, e.g. a temporary view's, saves nothing; ``bench/bench_audit_counts.py`` prints them with the times).

The bounds sit just above what the code builds today, with the figure measured in a comment: a change that builds
more frames fails here and has to say why (raise the bound with its new figure), or find fewer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_zk_audit.audit.job import run_audit
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.spark_counts import SparkCounter
from tests.audit.checks.test_checks import take_snapshot
from tests.audit.normalize.test_normalize import BUSY, snapshot_frame

pytestmark = pytest.mark.spark

# normalize() of the malformed corpus (every kind, every table): 84 DataFrames (85 analyses) on 2026-11-29 with each
# kind's accepted rows one plan (plans.Steps) and a frame counted once (111 before; 352 with a frame per kind and step
# of the parse before)
NORMALIZER_FRAMES = 90
# run_audit of one small snapshot (the first: no baseline): 354 DataFrames (412 analyses) on 2026-11-30 (morning) with
# each table a frame only when something reads it (keyed_io.LazyFrames: 10 of its 32 tables are not) and an empty local
# relation not coalesced. 382 DataFrames (440 analyses) on 2026-11-30 with each
# local relation one partition that the planner knows is one (keyed_io.arrow_frame's coalesce(1): a frame more each,
# 91 -> 27 Spark stages per audit). 344 DataFrames (402 analyses) on 2026-11-29 (evening) with
# the checks' evaluation one plan (the fact joins, defaults, selects and union: plans.Steps), each kind's accepted
# rows one plan, and a frame counted once (SparkCounter had counted a frame made through pyspark.sql.DataFrame twice).
# 521 DataFrames (532 analyses) on 2026-11-29 with the select
# lists of a union parsed into its one plan and the normalized tables conformed as they are collected (598 and 609
# before; 645 before the checks of the tables without a row were left unplanned; 768 with the check engine alone before
# the unions were made at once; 1,048 with one plan per check before it, 1,289 before the normalizer's one-pass parse)
AUDIT_FRAMES = 360
AUDIT_ANALYSES = 420
# its Spark stages: 21 on 2026-11-30 (morning); 22 on 2026-11-30, the driver-held frames one partition the planner
# knows is one and a small batch's joins kept single (session.size_spark_to); 91 before, a shuffle under every join,
# aggregation and window
AUDIT_STAGES = 24


def test_the_normalizer_builds_few_frames(spark) -> None:
    frame = snapshot_frame(spark, BUSY)
    with SparkCounter(spark) as counted:
        tables = normalize(frame, persist=False)
    assert len(tables) > 30
    assert counted.counts["jobs"] == 0  # normalize() only plans
    assert counted.counts["dataframes"] <= NORMALIZER_FRAMES, counted.counts


def test_an_audit_of_one_snapshot_builds_at_most_its_bound_of_frames(spark, zk_server, tmp_path: Path) -> None:
    chroot = "/frame_counts"
    zk_server.ensure_chroot(chroot)
    spec = ClusterSpec(era="3.x", brokers=3, racks=3, topics=4, partitions=2, replication_factor=3, groups=1,
                       consumers_per_group=2, threads_per_consumer=1, seed=5)
    with Simulator(hosts=zk_server.hosts + chroot) as simulator:
        simulator.write(spec)
        simulator.plant("under_replicated")
        warehouse = Warehouse(str(tmp_path / "warehouse"))
        take_snapshot(zk_server.hosts, chroot, warehouse, "20261128T000000Z-counted")
    with SparkCounter(spark) as counted:
        figures = run_audit(spark, warehouse, ["20261128T000000Z-counted"], None)
    assert figures["20261128T000000Z-counted"]["checks"]["under_replicated"] > 0
    assert counted.counts["dataframes"] <= AUDIT_FRAMES, counted.counts
    assert counted.counts["analyses"] <= AUDIT_ANALYSES, counted.counts  # no frame saved by an analysis elsewhere
    assert counted.counts["stages"] <= AUDIT_STAGES, counted.counts
