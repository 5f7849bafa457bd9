"""The warehouse's keyed tables in Spark: many snapshots read as one frame, one frame written as many folders.

The layout stays one folder per snapshot (``<table>/snapshot_id=<id>/``): reading a batch gives ``snapshot_id``
as a column (Hive-style partition discovery with the key typed as a string), and writing a keyed frame is one
Spark write partitioned by it, with dynamic partition overwrite so that a write touches the batch's folders
only and two writers of the same table never share a staging folder. The batch's folders are removed first,
so a snapshot without rows is never left with an earlier run's; it gets one empty Parquet file of the schema,
as a plain write of no rows gives. Every folder gets ``_SUCCESS`` when its write is complete.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from kafka_zk_audit.contract.schemas import KEY, keyed
from kafka_zk_audit.contract.warehouse import Warehouse

SUCCESS = "_SUCCESS"


def partition_dir(root: str, snapshot_id: str) -> str:
    return f"{root}/{KEY}={snapshot_id}"


def read_keyed(spark: SparkSession, root: str, snapshot_ids: Sequence[str], schema: StructType) -> DataFrame:
    """The snapshots' folders of a table under ``root`` as one keyed frame (``keyed(schema)``, key first)."""
    full = keyed(schema)
    if not snapshot_ids:
        return spark.createDataFrame([], full)
    frame = spark.read.schema(full).option("basePath", root).parquet(
        *[partition_dir(root, sid) for sid in snapshot_ids])
    return frame.select(*full.names)


def write_keyed(frame: DataFrame, warehouse: Warehouse, root: str, snapshot_ids: Sequence[str],
                single_file: bool = False) -> None:
    """Write a keyed frame as ``root/snapshot_id=<id>/`` for every id of the batch (rows of other ids are an
    error of the caller and are written too). ``single_file``: one file per snapshot (small tables)."""
    for sid in snapshot_ids:
        warehouse.remove(partition_dir(root, sid))
    out = frame.coalesce(1) if single_file else frame
    out.write.partitionBy(KEY).mode("overwrite").option("partitionOverwriteMode", "dynamic").parquet(root)
    file_schema = StructType([field for field in frame.schema.fields if field.name != KEY])
    for sid in snapshot_ids:
        directory = partition_dir(root, sid)
        if not warehouse.exists(directory):
            write_empty(warehouse, directory, file_schema)
        warehouse.write_text(f"{directory}/{SUCCESS}", "")


def write_rows(warehouse: Warehouse, root: str, rows: Mapping[str, list[dict[str, Any]]], schema: Any) -> None:
    """Per snapshot id, its rows (dicts of ``schema``) as ``root/snapshot_id=<id>/part-00000.parquet`` (pyarrow, no
    Spark job: for the few rows the driver already holds)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    for sid, snapshot_rows in rows.items():
        directory = partition_dir(root, sid)
        warehouse.remove(directory)
        path = warehouse.fs_path(directory)
        warehouse.fs.makedirs(path, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(snapshot_rows, schema=arrow), f"{path}/part-00000.parquet",
                       filesystem=warehouse.fs)
        warehouse.write_text(f"{directory}/{SUCCESS}", "")


def write_arrow(warehouse: Warehouse, root: str, table: Any, snapshot_ids: Sequence[str]) -> None:
    """An Arrow table of keyed rows (the key kept in the files, as the findings' contract has it) as
    ``root/snapshot_id=<id>/part-00000.parquet`` for every id of the batch (no rows: an empty file). pyarrow
    writes it: for the findings, few rows the driver collects anyway for the counts."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for sid in snapshot_ids:
        directory = partition_dir(root, sid)
        warehouse.remove(directory)
        path = warehouse.fs_path(directory)
        warehouse.fs.makedirs(path, exist_ok=True)
        rows = table.filter(pc.equal(table[KEY], sid))
        pq.write_table(rows, f"{path}/part-00000.parquet", filesystem=warehouse.fs)
        warehouse.write_text(f"{directory}/{SUCCESS}", "")


def write_all_at_once(frames: Mapping[str, DataFrame], warehouse: Warehouse, roots: Mapping[str, str],
                      snapshot_ids: Sequence[str], extra: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Several small keyed frames (name -> frame) collected in ONE Spark job and written by pyarrow, each as
    ``roots[name]/snapshot_id=<id>/part-00000.parquet`` (the key out of the files, as a partitioned write leaves
    it; ``extra``: column -> {snapshot id -> value} appended to every file, e.g. the cluster). For a batch whose
    rows fit the driver: one job instead of one per table."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    names = list(frames)
    parts = [frame.select(F.lit(name).alias("_table"), F.col(KEY),
                          F.struct(*[c for c in frame.columns if c != KEY]).alias(f"_{index}"))
             for index, (name, frame) in enumerate(frames.items())]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part, allowMissingColumns=True)
    rows = union.toArrow()
    extra = extra or {}
    for index, name in enumerate(names):
        file_fields = [f for f in frames[name].schema.fields if f.name != KEY]
        schema = to_arrow_schema(StructType(file_fields))
        mine = rows.filter(pc.equal(rows["_table"], name))
        for sid in snapshot_ids:
            selected = mine.filter(pc.equal(mine[KEY], sid))
            column = selected[f"_{index}"].combine_chunks() if selected.num_rows else None
            table = (pa.Table.from_struct_array(column).cast(schema) if column is not None
                     else schema.empty_table())
            for extra_name, values in extra.items():
                table = table.append_column(extra_name, pa.array([values.get(sid)] * table.num_rows, pa.string()))
            directory = partition_dir(roots[name], sid)
            warehouse.remove(directory)
            path = warehouse.fs_path(directory)
            warehouse.fs.makedirs(path, exist_ok=True)
            pq.write_table(table, f"{path}/part-00000.parquet", filesystem=warehouse.fs)
            warehouse.write_text(f"{directory}/{SUCCESS}", "")


def write_empty(warehouse: Warehouse, directory: str, schema: StructType) -> None:
    """``directory`` as one Parquet file of ``schema`` without rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    path = warehouse.fs_path(directory)
    warehouse.fs.makedirs(path, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([], schema=to_arrow_schema(schema)), f"{path}/part-00000.parquet",
                   filesystem=warehouse.fs)
