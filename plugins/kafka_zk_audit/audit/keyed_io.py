"""The warehouse's keyed tables in Spark: many snapshots read as one frame, one frame written as many folders.

The layout stays one folder per snapshot (``<table>/snapshot_id=<id>/``): reading a batch gives ``snapshot_id``
as a column (Hive-style partition discovery with the key typed as a string), and writing a keyed frame is one
Spark write partitioned by it, with dynamic partition overwrite so that a write touches the batch's folders
only and two writers of the same table never share a staging folder. The batch's folders are removed first,
so a snapshot without rows is never left with an earlier run's; it gets one empty Parquet file of the schema,
as a plain write of no rows gives. The folders of a table are listed once per write, never checked one by one:
a batch of a hundred snapshots costs a hundred small files, not a hundred round trips each. Findings folders
get ``_SUCCESS`` when their write is complete (it marks a snapshot as audited).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.audit.plans import union_at_once
from kafka_zk_audit.audit.session import PLANNING_THREADS, default_parallelism, in_driver_threads
from kafka_zk_audit.contract.schemas import KEY, keyed
from kafka_zk_audit.contract.warehouse import Warehouse

SUCCESS = "_SUCCESS"


def partition_dir(root: str, snapshot_id: str) -> str:
    return f"{root}/{KEY}={snapshot_id}"


class LazyFrames(Mapping[str, DataFrame]):
    """Frames by name, each built when first asked for (by any driver thread) and kept: an audit's tables that no
    check, report or audit table reads cost no DataFrame at all (each frame is a Catalyst analysis)."""

    def __init__(self, builders: Mapping[str, Callable[[], DataFrame]]) -> None:
        self._builders = dict(builders)
        self._built: dict[str, DataFrame] = {}
        self._lock = threading.RLock()  # a builder may ask for another frame of the same mapping

    def __getitem__(self, name: str) -> DataFrame:
        if name not in self._built:
            build = self._builders[name]  # KeyError for a name it does not hold
            with self._lock:
                if name not in self._built:
                    self._built[name] = build()
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._builders

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    @property
    def built(self) -> tuple[str, ...]:
        """The names whose frames were built so far."""
        return tuple(self._built)


def read_keyed(spark: SparkSession, root: str, snapshot_ids: Sequence[str], schema: StructType) -> DataFrame:
    """The snapshots' folders of a table under ``root`` as one keyed frame (``keyed(schema)``, key first)."""
    full = keyed(schema)
    if not snapshot_ids:
        return rows_frame(spark, [], full)
    frame = spark.read.schema(full).option("basePath", root).parquet(
        *[partition_dir(root, sid) for sid in snapshot_ids])
    return frame.select(*full.names)


def present(warehouse: Warehouse, root: str) -> set[str]:
    """The snapshot ids that have a folder under ``root`` (one listing)."""
    path = warehouse.fs_path(root)
    if not warehouse.fs.exists(path):
        return set()
    prefix = f"{KEY}="
    names = (entry.rstrip("/").rsplit("/", 1)[-1] for entry in warehouse.fs.ls(path, detail=False))
    return {name.removeprefix(prefix) for name in names if name.startswith(prefix)}


def clear(warehouse: Warehouse, root: str, snapshot_ids: Sequence[str]) -> None:
    """Remove the folders these snapshots have under ``root`` (an earlier run's)."""
    for sid in present(warehouse, root) & set(snapshot_ids):
        warehouse.remove(partition_dir(root, sid))


def write_keyed(frame: DataFrame, warehouse: Warehouse, root: str, snapshot_ids: Sequence[str],
                single_file: bool = False) -> None:
    """Write a keyed frame as ``root/snapshot_id=<id>/`` for every id of the batch (rows of other ids are an
    error of the caller and are written too). ``single_file``: one file per snapshot (small tables)."""
    clear(warehouse, root, snapshot_ids)
    out = frame.coalesce(1) if single_file else frame
    out.write.partitionBy(KEY).mode("overwrite").option("partitionOverwriteMode", "dynamic").parquet(root)
    from pyspark.sql.pandas.types import to_arrow_schema

    file_schema = to_arrow_schema(StructType([field for field in frame.schema.fields if field.name != KEY]))
    written = present(warehouse, root)
    for sid in snapshot_ids:
        if sid not in written:
            write_empty(warehouse, partition_dir(root, sid), file_schema)


def write_rows(warehouse: Warehouse, root: str, rows: Mapping[str, list[dict[str, Any]]], schema: Any) -> None:
    """Per snapshot id, its rows (dicts of ``schema``, in file order) as ``root/snapshot_id=<id>/`` (pyarrow, no
    Spark job: for the few rows the driver already holds; a snapshot without rows gets an empty file). A column
    of ``schema`` named like the key stays in the files (the drift table has it)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    if KEY in arrow.names:
        table = pa.Table.from_pylist([row for snapshot_rows in rows.values() for row in snapshot_rows], schema=arrow)
        write_arrow(warehouse, root, table, list(rows), mark=False)
        return
    records = [{**row, KEY: sid} for sid, snapshot_rows in rows.items() for row in snapshot_rows]
    table = pa.Table.from_pylist(records, schema=arrow.append(pa.field(KEY, pa.string())))
    write_partitioned(warehouse, root, table, list(rows))


def write_arrow(warehouse: Warehouse, root: str, table: Any, snapshot_ids: Sequence[str], mark: bool = True) -> None:
    """An Arrow table of keyed rows (the key kept in the files, as the findings' contract has it) as
    ``root/snapshot_id=<id>/part-00000.parquet`` for every id of the batch (no rows: an empty file), with
    ``_SUCCESS`` when ``mark``. pyarrow writes it: for the findings, few rows the driver collects anyway for the
    counts."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    clear(warehouse, root, snapshot_ids)
    for sid in snapshot_ids:
        directory = partition_dir(root, sid)
        path = warehouse.fs_path(directory)
        warehouse.fs.makedirs(path, exist_ok=True)
        rows = table.filter(pc.equal(table[KEY], sid))
        pq.write_table(rows, f"{path}/part-00000.parquet", filesystem=warehouse.fs)
        if mark:
            warehouse.write_text(f"{directory}/{SUCCESS}", "")


def write_all_at_once(frames: Mapping[str, DataFrame], warehouse: Warehouse, roots: Mapping[str, str],
                      snapshot_ids: Sequence[str], extra: Mapping[str, Mapping[str, Any]] | None = None,
                      ) -> dict[str, dict[str, int]]:
    """Several small keyed frames (name -> frame) collected in few Spark jobs (``collect_all_at_once``) and written
    by pyarrow, each as ``roots[name]/snapshot_id=<id>/part-00000.parquet`` (the key out of the files, as a
    partitioned write leaves it; ``extra``: column -> {snapshot id -> value} appended to every file, e.g. the
    cluster). For a batch whose rows fit the driver: a job or two instead of one per table. Returns the rows
    written, by snapshot and frame."""
    return write_collected(collect_all_at_once(frames), warehouse, roots, snapshot_ids, extra)


def collect_all_at_once(frames: Mapping[str, DataFrame], schemas: Mapping[str, StructType] | None = None,
                        ) -> dict[str, Any]:
    """Several small keyed frames collected in few Spark jobs: name -> Arrow table of the frame's columns, the key
    last (every column nullable, as the Parquet files have them). The frames are split into ``PLANNING_THREADS``
    parts, each one union and one job, planned and run at once by as many driver threads (a small batch's time is
    the driver's JVM analysing and planning the union). ``schemas``: the schemas to collect frames in, where the
    caller knows them (e.g. the contract's, of the normalized tables): their columns in that order, cast to those
    types as they are collected (a frame need not have them yet), and nothing asks Spark for the frames' own
    schemas (under Spark Connect, a round trip and an analysis each)."""
    names = list(frames)
    known = dict(schemas or {})
    parts = [names[index::PLANNING_THREADS] for index in range(min(PLANNING_THREADS, len(names)))]
    if len(parts) <= 1:
        return _collect_united(frames, known)
    collected: dict[str, Any] = {}
    spark = next(iter(frames.values())).sparkSession
    for part in in_driver_threads(spark, lambda part: _collect_united({name: frames[name] for name in part}, known),
                                  parts, workers=len(parts)):
        collected.update(part)
    return {name: collected[name] for name in names}


def _collect_united(frames: Mapping[str, DataFrame], schemas: Mapping[str, StructType]) -> dict[str, Any]:
    """``collect_all_at_once`` of some frames in ONE Spark job."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.pandas.types import to_arrow_schema

    # every field marked nullable: a null struct of non-nullable fields cannot go through Arrow
    fields = {name: [StructField(f.name, f.dataType, True) for f in (schemas.get(name) or frame.schema).fields
                     if f.name != KEY] for name, frame in frames.items()}
    struct_types = [sql_text.sql_type(StructType(fields[name])) for name in frames]

    def value(name: str, field: StructField) -> str:
        """A field's value; cast to the given schema's type (a no-op where the frame has it already)."""
        marked = sql_text.nullable(sql_text.identifier(field.name))
        return sql_text.cast(marked, field.dataType) if name in schemas else marked

    # every part has every table's column (null but its own), so the parts unite by position, all in one union (one
    # DataFrame, one analysis)
    selects = []
    for index, name in enumerate(frames):
        columns = [f"CAST(NULL AS {struct_type}) AS _{other}" for other, struct_type in enumerate(struct_types)]
        own = sql_text.named_struct((f.name, value(name, f)) for f in fields[name])
        columns[index] = f"{own} AS _{index}"
        selects.append([f"{sql_text.string_literal(name)} AS _table", sql_text.identifier(KEY), *columns])
    united = union_at_once(list(frames.values()), selects)
    # one task per core: the union has a partition per table and snapshot file (52 for one snapshot, 102 for eleven),
    # and every task deserializes the plan of all the tables, which took most of the job's time
    rows = united.coalesce(default_parallelism(united.sparkSession)).toArrow()
    collected = {}
    for index, name in enumerate(frames):
        schema = to_arrow_schema(StructType(fields[name]))
        mine = rows.filter(pc.equal(rows["_table"], name))
        column = mine[f"_{index}"].combine_chunks()
        table = (pa.Table.from_struct_array(column).cast(schema) if len(column) else schema.empty_table())
        collected[name] = table.append_column(KEY, mine[KEY].combine_chunks().cast(pa.string()))
    return collected


def write_collected(tables: Mapping[str, Any], warehouse: Warehouse, roots: Mapping[str, str],
                    snapshot_ids: Sequence[str], extra: Mapping[str, Mapping[str, Any]] | None = None,
                    ) -> dict[str, dict[str, int]]:
    """Keyed Arrow tables (``collect_all_at_once``) written as ``write_all_at_once`` writes them; returns the rows
    written, by snapshot and table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    extra = extra or {}
    counts: dict[str, dict[str, int]] = {sid: {} for sid in snapshot_ids}
    for name, table in tables.items():
        for extra_name, values in extra.items():
            keys = list(values)
            positions = pc.index_in(table[KEY], value_set=pa.array(keys, pa.string()))
            table = table.append_column(extra_name, pc.take(pa.array([values[k] for k in keys], pa.string()),
                                                            positions))
        write_partitioned(warehouse, roots[name], table, snapshot_ids)
        for sid, n in zip(*_value_counts(table[KEY]), strict=True):
            counts.setdefault(sid, {})[name] = n
        for sid in snapshot_ids:
            counts[sid].setdefault(name, 0)
    return counts


def as_nullable(data_type: Any) -> Any:
    """The Spark type with every field, element and value nullable, as Spark reads a Parquet file with it."""
    from pyspark.sql.types import ArrayType, MapType

    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, as_nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(as_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(as_nullable(data_type.keyType), as_nullable(data_type.valueType), True)
    return data_type


def local_keyed(spark: SparkSession, table: Any, schema: StructType) -> DataFrame:
    """Keyed Arrow rows the driver holds as a frame of ``keyed(schema)`` (a local relation: no file to scan, and an
    empty table prunes the plan branches that read it). Columns the rows lack are null, as a Parquet read gives
    them; every column is nullable, as there."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    full = as_nullable(keyed(schema))
    arrow = to_arrow_schema(full)
    columns = [table[name].cast(arrow.field(name).type) if name in table.column_names
               else pa.nulls(table.num_rows, arrow.field(name).type) for name in full.names]
    return arrow_frame(spark, pa.Table.from_arrays(columns, schema=arrow), full)


def arrow_frame(spark: SparkSession, table: Any, schema: StructType) -> DataFrame:
    """An Arrow table the driver holds as a DataFrame of ``schema``: a local relation in one partition that the
    planner knows is one (``coalesce(1)``, Spark's ``SinglePartition``). Joins, aggregations and windows over such
    frames need no shuffle, so a small batch's plans (``session.size_spark_to``) run in a few stages, not one or two
    per join. An empty table needs no ``coalesce`` (a frame more): the optimizer prunes the branches that read it.
    The table goes as one chunk: PySpark's import stops at the first empty record batch, dropping every row after
    it, and a concatenated or filtered table has empty chunks."""
    frame = spark.createDataFrame(table.combine_chunks(), schema=schema)
    return frame.coalesce(1) if table.num_rows else frame


def rows_frame(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: StructType) -> DataFrame:
    """Rows the driver holds (tuples in the order of the schema's fields) as ``arrow_frame`` makes them: a local
    relation whose size the planner knows (an empty one prunes the plan branches that read it), in one partition."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    columns = [pa.array([row[index] for row in rows], type=arrow.field(index).type)
               for index in range(len(schema.fields))]
    return arrow_frame(spark, pa.Table.from_arrays(columns, schema=arrow), schema)


def read_keyed_local(spark: SparkSession, warehouse: Warehouse, root: str, snapshot_ids: Sequence[str],
                     schema: StructType) -> DataFrame:
    """``read_keyed`` for a few small folders: pyarrow reads them on the driver into a local relation (Spark reads
    them when their files do not convert to the schema, e.g. a struct written with other fields)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = []
    try:
        for sid in snapshot_ids:
            part = pq.read_table(warehouse.fs_path(partition_dir(root, sid)), filesystem=warehouse.fs,
                                 partitioning=None)
            if KEY in part.column_names:  # the findings keep the key in their files
                part = part.drop_columns([KEY])
            parts.append(part.append_column(KEY, pa.array([sid] * part.num_rows, pa.string())))
        if not parts:
            return local_keyed(spark, pa.table({KEY: pa.array([], pa.string())}), schema)
        return local_keyed(spark, pa.concat_tables(parts, promote_options="permissive"), schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return read_keyed(spark, root, snapshot_ids, schema)


def _value_counts(column: Any) -> tuple[list[str], list[int]]:
    import pyarrow.compute as pc

    found = pc.value_counts(column)
    return found.field("values").to_pylist(), found.field("counts").to_pylist()


def write_partitioned(warehouse: Warehouse, root: str, table: Any, snapshot_ids: Sequence[str]) -> None:
    """An Arrow table with the key column as ``root/snapshot_id=<id>/part-0.parquet`` per snapshot of the batch
    (pyarrow's dataset writer, the key out of the files); a snapshot without rows gets an empty file."""
    import pyarrow.dataset as ds

    clear(warehouse, root, snapshot_ids)
    file_schema = table.drop_columns([KEY]).schema
    if table.num_rows:
        ds.write_dataset(table, warehouse.fs_path(root), filesystem=warehouse.fs, format="parquet",
                         partitioning=ds.partitioning(table.select([KEY]).schema, flavor="hive"),
                         basename_template="part-{i}.parquet", existing_data_behavior="overwrite_or_ignore",
                         preserve_order=True)
    written = present(warehouse, root)
    for sid in snapshot_ids:
        if sid not in written:
            write_empty(warehouse, partition_dir(root, sid), file_schema)


def write_empty(warehouse: Warehouse, directory: str, schema: Any) -> None:
    """``directory`` as one Parquet file of the Arrow ``schema`` without rows."""
    import pyarrow.parquet as pq

    path = warehouse.fs_path(directory)
    warehouse.fs.makedirs(path, exist_ok=True)
    pq.write_table(schema.empty_table(), f"{path}/part-00000.parquet", filesystem=warehouse.fs)
