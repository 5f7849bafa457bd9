"""A small batch's tables as local relations: the same rows and schema as Spark's Parquet read, whatever the chunks,
in one partition that the planner knows is one."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.findings import _frame
from kafka_zk_audit.audit.keyed_io import (
    LazyFrames,
    collect_all_at_once,
    local_keyed,
    partition_dir,
    read_keyed,
    read_keyed_local,
    rows_frame,
)
from kafka_zk_audit.audit.session import size_spark_to
from kafka_zk_audit.contract.schemas import FINDINGS, KEY, TABLES
from kafka_zk_audit.contract.warehouse import Warehouse

pytestmark = pytest.mark.spark

INNER = StructType([StructField("a", IntegerType(), False), StructField("b", StringType(), True)])
INNER_ARROW = pa.struct([("a", pa.int32()), ("b", pa.string())])
SCHEMA = StructType([StructField("name", StringType(), False), StructField("n", IntegerType(), True),
                     StructField("inner", INNER, True)])


def rows(frame) -> list[tuple]:
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def test_rows_after_an_empty_chunk_are_kept(spark) -> None:
    """Spark's Arrow import stops at an empty batch: a concatenated table must not lose the rows after one."""
    first = pa.table({"name": ["x", "y"], "n": [1, 2], KEY: ["s1", "s1"]})
    empty = first.schema.empty_table()
    last = pa.table({"name": ["z"], "n": [3], KEY: ["s2"]}, schema=first.schema)
    chunked = pa.concat_tables([first, empty, last])
    assert chunked["name"].num_chunks == 3
    frame = local_keyed(spark, chunked, SCHEMA)
    assert rows(frame) == [("s1", "x", 1, None), ("s1", "y", 2, None), ("s2", "z", 3, None)]
    findings = pa.Table.from_pylist([{"check_id": "c", KEY: "s1"}], schema=pa.schema(
        [pa.field(f.name, pa.string() if f.name != "partition" and f.name != "broker_id" else pa.int32())
         for f in FINDINGS.fields]))
    chunked_findings = pa.concat_tables([findings.schema.empty_table(), findings, findings])
    assert _frame(spark, chunked_findings).count() == 2


def test_a_local_read_gives_what_spark_reads(spark, tmp_path: Path) -> None:
    """Folders with rows, without rows, with the key in their files (the findings) and with a column the schema
    lacks or misses: the local relation has Spark's rows and Spark's schema (every column nullable)."""
    warehouse = Warehouse(str(tmp_path / "wh"))
    root = warehouse.table_dir("t")
    tables = {
        "s1": pa.table({"name": ["a", "b"], "n": pa.array([1, None], pa.int32()), "extra": ["e", "e"],
                        "inner": pa.array([{"a": 1, "b": "x"}, None], INNER_ARROW)}),
        "s2": pa.table({"name": pa.array([], pa.string()), "n": pa.array([], pa.int32())}),
        "s3": pa.table({"name": ["c"], KEY: ["s3"]}),  # no n, no inner; the key kept in the file
    }
    for sid, table in tables.items():
        path = Path(warehouse.fs_path(partition_dir(root, sid)))
        path.mkdir(parents=True)
        pq.write_table(table, path / "part-00000.parquet")
    ids = list(tables)
    spark_read, local_read = read_keyed(spark, root, ids, SCHEMA), read_keyed_local(spark, warehouse, root, ids, SCHEMA)
    assert local_read.schema == spark_read.schema
    assert rows(local_read) == rows(spark_read) == [
        ("s1", "a", 1, (1, "x")), ("s1", "b", None, None), ("s3", "c", None, None)]


def test_files_that_do_not_convert_are_read_by_spark(spark, tmp_path: Path) -> None:
    """A struct written with other fields than the schema's: the rows Spark reads, not an error."""
    warehouse = Warehouse(str(tmp_path / "wh"))
    root = warehouse.table_dir("t")
    path = Path(warehouse.fs_path(partition_dir(root, "s1")))
    path.mkdir(parents=True)
    pq.write_table(pa.table({"name": ["a"], "inner": pa.array([{"c": 1.5}])}), path / "part-00000.parquet")
    local_read = read_keyed_local(spark, warehouse, root, ["s1"], SCHEMA)
    assert rows(local_read) == rows(read_keyed(spark, root, ["s1"], SCHEMA)) == [("s1", "a", None, (None, None))]


def test_every_normalized_table_round_trips(spark, tmp_path: Path) -> None:
    """Every contract table, empty: the local frame has the schema Spark's read of the written file has."""
    warehouse = Warehouse(str(tmp_path / "wh"))
    for name, schema in TABLES.items():
        empty = spark.createDataFrame([], schema)
        root = warehouse.table_dir(name)
        empty.write.parquet(partition_dir(root, "s1"))
        assert read_keyed_local(spark, warehouse, root, ["s1"], schema).schema == \
            read_keyed(spark, root, ["s1"], schema).schema, name


def test_many_tables_are_collected_by_one_task_per_core_with_every_row(spark) -> None:
    """Each task of the collecting job deserializes the plan of every table: one task per core, not one per
    partition of every table."""
    frames = {f"t{i}": spark.createDataFrame([(f"s{j % 2}", i * 10 + j) for j in range(5)],
                                             f"{KEY} string, n int").repartition(4) for i in range(6)}
    context = spark.sparkContext
    context.setJobGroup("collect-all-at-once", "the test's job")
    try:
        collected = collect_all_at_once(frames)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
    assert {name: sorted(table.column("n").to_pylist()) for name, table in collected.items()} == {
        f"t{i}": [i * 10 + j for j in range(5)] for i in range(6)}
    assert sorted(collected["t0"].column(KEY).to_pylist()) == ["s0", "s0", "s0", "s1", "s1"]
    tracker = context.statusTracker()
    stages = [stage for job in tracker.getJobIdsForGroup("collect-all-at-once")
              for stage in tracker.getJobInfo(job).stageIds]
    result_stage = tracker.getStageInfo(max(stages))
    assert result_stage.numTasks <= context.defaultParallelism < 6 * 4, result_stage


def test_driver_rows_plan_joins_aggregations_and_windows_without_a_shuffle(spark) -> None:
    """A small batch's driver-held frames are one partition that the planner knows is one: a join of two, an
    aggregation and a window over it plan no shuffle (Spark's own plan says so) and give what they should."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    size_spark_to(spark, 100)
    keys = StructType([StructField(KEY, StringType()), StructField("topic", StringType())])
    topics = rows_frame(spark, [("s1", "a"), ("s1", "b"), ("s2", "a")], keys)
    partitions = local_keyed(spark, pa.table({"topic": ["a", "a", "b"], "n": [0, 1, 0],
                                              KEY: ["s1", "s1", "s1"]}), StructType([
        StructField("topic", StringType()), StructField("n", IntegerType())]))
    joined = topics.join(partitions, [KEY, "topic"], "left")
    counted = joined.groupBy(KEY, "topic").agg(F.count("n").alias("rows")).withColumn(
        "rank", F.row_number().over(Window.partitionBy(KEY).orderBy(F.col("rows").desc(), "topic")))
    plan = counted._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan, plan
    assert rows(counted) == [("s1", "a", 2, 1), ("s1", "b", 1, 2), ("s2", "a", 0, 1)]
    empty = rows_frame(spark, [], keys)
    assert empty.count() == 0 and empty.schema == keys
    assert "LocalTableScan" in empty._jdf.queryExecution().executedPlan().toString()


def test_lazy_frames_build_each_frame_once_when_first_asked_for() -> None:
    """An audit's tables as LazyFrames: a name asked for is built once (whichever driver thread asks first); a
    name only listed, tested or never asked for is never built."""
    built: list[str] = []
    started = threading.Barrier(4)

    def builder(name: str):
        def build() -> object:
            built.append(name)
            return object()
        return build

    frames = LazyFrames({name: builder(name) for name in ("brokers", "topics", "acls")})
    assert list(frames) == ["brokers", "topics", "acls"] and len(frames) == 3
    assert "topics" in frames and "quotas" not in frames and built == []
    with pytest.raises(KeyError):
        frames["quotas"]
    got: list[object] = []

    def ask() -> None:
        started.wait()
        got.append(frames["topics"])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == ["topics"] and len({id(frame) for frame in got}) == 1
    assert frames["topics"] is got[0] and frames.built == ("topics",)
