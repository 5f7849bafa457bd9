"""Transaction logs into a change table in Spark: one row per operation that changed a znode.

``build_changes`` decodes the ``log.<hex>`` files on the executors inside ``mapInArrow``, column-wise
(``history.txncolumns``: the records' headers and the common bodies read as numpy gathers; the rest one txn at a
time with ``snapshot.files.txnlog``); no row passes through the driver. ``write_changes`` writes the table as Parquet:
with a local master each task writes its own part with pyarrow, the rows never entering the JVM. With a local
master (the files are on the executors' disk) a file is cut at record boundaries into ranges (``log_ranges``: about
two per core in all), each a task that reads its bytes from the file, so that one 64 MiB log is decoded by every
core. Otherwise each file is one task reading it with Spark's ``binaryFile`` source. A record whose checksum fails
(or whose body does not decode) ends its range with a ``log_error`` row; the ranges after it in the same file are
still decoded; a record after ``last_zxid`` is never decoded (the cut itself stops at the first record
that does not look whole, so a torn or truncated log is decoded as one piece to its end). The table (``CHANGES``):

- ``zxid`` long, ``op_index`` int: a multi's sub-operations are rows of their own, numbered from 0 in order;
  a closeSession's deletions are ``delete`` rows numbered from 1 after its own row.
- ``time`` timestamp: the leader's clock when it logged the txn (milliseconds).
- ``session`` long: the txn's session (for ``base`` rows: the znode's ephemeral owner, 0 for persistent ones).
- ``op`` string: the ZooKeeper op name (``create``, ``setData``, ``delete``, ``setACL``, ``createSession``,
  ``closeSession``, ``reconfig``…) or ``base``; failed txns and ``check`` ops leave no row.
- ``path`` string: relative to the chroot ("/" for the chroot itself); null for session rows. Changes outside
  the chroot leave no row.
- ``data`` binary (secret data fingerprinted with the warehouse key, or left out without one), ``version``
  int (setData: the new data version; setACL: the new ACL version; base: the data version), ``ephemeral``.

``base_rows`` adds the tree at the start of the window (``replay.rebuild_tree``) as ``base`` rows for the paths
the interval checks read. ``with_session_deletes`` adds the deletions a closeSession implies where the log does
not list them (ZooKeeper 3.5 and older).
"""

from __future__ import annotations

import bisect
import functools
import gc
import mmap
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafka_zk_audit.audit.unions import union_all
from kafka_zk_audit.contract.secrets import SECRET_PATHS
from kafka_zk_audit.history.intervals import BASE, CHECKED_PATHS, znode_versions
from kafka_zk_audit.history.txncolumns import SlowRows, change_rows, secret_rows
from kafka_zk_audit.snapshot.files.datatree import NodeMap
from kafka_zk_audit.snapshot.files.txndecode import TXN_HEADER, Txn
from kafka_zk_audit.snapshot.files.txnlog import END_OF_RECORD, FILE_HEADER, RECORD_HEAD, log_files

CHANGES = StructType([
    StructField("zxid", LongType()), StructField("op_index", IntegerType()), StructField("time", TimestampType()),
    StructField("session", LongType()), StructField("op", StringType()), StructField("path", StringType()),
    StructField("data", BinaryType()), StructField("version", IntegerType()), StructField("ephemeral", BooleanType()),
])
# What the executors emit: time as epoch milliseconds (turned into a timestamp in Spark).
_DECODED = pa.schema([
    ("zxid", pa.int64()), ("op_index", pa.int32()), ("time_ms", pa.int64()), ("session", pa.int64()),
    ("op", pa.string()), ("path", pa.string()), ("data", pa.binary()), ("version", pa.int32()),
    ("ephemeral", pa.bool_()),
])
DECODED_DDL = ("zxid long, op_index int, time_ms long, session long, op string, path string, data binary, "
               "version int, ephemeral boolean")
LOG_ERROR = "log_error"  # a row saying a file could not be decoded past zxid; path = file name, data = why
SKIPPED_OPS = frozenset({"check", "error"})
SESSION_OPS = frozenset({"createSession", "closeSession"})
BATCH_ROWS = 65_536
MIN_RANGE_BYTES = 1 << 20  # a log file is cut into ranges of at least this many bytes
RANGES_DDL = "file string, start long, end long, first_zxid long"
_ZXID = struct.Struct(">q").unpack_from
ZXID_OFFSET = 12  # TxnHeader {long clientId, int cxid, long zxid, …}: the zxid's offset in a record's payload


def relative_path(path: str | None, chroot: str) -> str | None:
    """A ZooKeeper path relative to ``chroot`` ("" or "/" for none), or None when outside it."""
    if path is None or not chroot or chroot == "/":
        return path
    if path == chroot:
        return "/"
    if path.startswith(chroot) and path[len(chroot)] == "/":
        return path[len(chroot):]
    return None


def _batch(columns: list[list[Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(values, type=field.type) for values, field in
                                       zip(columns, _DECODED, strict=True)], schema=_DECODED)


def _slow_rows(root: str) -> SlowRows:
    """Appends the rows of one txn decoded one by one (see the module doc) to the columns, tagged with its
    record."""
    skipped, session_ops = SKIPPED_OPS, SESSION_OPS

    def append(txn: Txn, record: int, columns: dict[str, list[Any]]) -> None:
        ops = txn.ops
        if len(ops) > 1 and txn.failed:
            return
        for index, op in enumerate(ops):
            kind = op.op
            if kind in skipped:
                continue
            if kind in session_ops:
                rows = [(index, kind, None)]
                rows.extend((number, "delete", path) for number, path in
                            enumerate((relative_path(gone, root) for gone in op.paths or ()), start=1)
                            if path is not None)
                for number, row_kind, path in rows:
                    _append_row(columns, record, txn, number, row_kind, path, None, None, False)
                continue
            path = relative_path(op.path, root)
            if path is not None or op.path is None:
                _append_row(columns, record, txn, index, kind, path, op.data, op.version, op.ephemeral)

    return append


def _append_row(columns: dict[str, list[Any]], record: int, txn: Txn, index: int, kind: str, path: str | None,
                data: bytes | None, version: int | None, ephemeral: bool) -> None:
    for field, value in (("zxid", txn.zxid), ("op_index", index), ("time_ms", txn.time_ms),
                         ("session", txn.session), ("op", kind), ("path", path), ("data", data),
                         ("version", version), ("ephemeral", ephemeral), ("record", record)):
        columns[field].append(value)


def decode_log(content: bytes | bytearray | memoryview, name: str, chroot: str, first_zxid: int | None,
               last_zxid: int | None, scrub: Any = None, start_zxid: int | None = None) -> Iterator[pa.RecordBatch]:
    """The change rows of one log's bytes (a whole file, or its header followed by a run of whole records), as
    record batches (see the module doc for the rows), decoded column-wise (``txncolumns.change_rows``).
    ``start_zxid`` is the zxid an error row names when no txn comes before the error (default: the one before
    ``first_zxid``, else 0)."""
    root = chroot.rstrip("/")
    after = first_zxid - 1 if first_zxid is not None else None
    table, early_end = change_rows(content, name, root, after, last_zxid, _slow_rows(root))
    secret = secret_rows(table, SECRET_PATHS)
    if len(secret):  # only those rows pass through Python
        rows = pa.array(secret)
        paths, datas = table.column("path").take(rows).to_pylist(), table.column("data").take(rows).to_pylist()
        scrubbed = pa.array([scrub(path, data) if scrub is not None else None
                             for path, data in zip(paths, datas, strict=True)], pa.binary())
        mask = np.zeros(table.num_rows, dtype=bool)
        mask[secret] = True
        data = pc.replace_with_mask(table.column("data").combine_chunks(), pa.array(mask), scrubbed)
        table = table.set_column(table.schema.get_field_index("data"), "data", data)
    yield from table.cast(_DECODED).to_batches(max_chunksize=BATCH_ROWS)
    if early_end is not None:  # a corrupt file: what came before stands, the rest is reported
        zxid, error = early_end
        if zxid is None:
            zxid = start_zxid if start_zxid is not None else after or 0
        yield _batch([[value] for value in (zxid, 0, 0, 0, LOG_ERROR, name, str(error).encode(), None, False)])


def _scrubber(key: bytes | None) -> Any:
    """A function (path, data) -> data keeping secrets out: fingerprinted with ``key``, else left out."""
    if key is None:
        return lambda path, data: None
    from kafka_zk_audit.snapshot.secrets import Fingerprinter

    fingerprinter = Fingerprinter(key)
    return lambda path, data: fingerprinter.scrub(path, data)[0]


def read_logs(spark: SparkSession, files: list[str]) -> DataFrame:
    """The log files with the ``binaryFile`` source: one scan per file, so that each is one task."""
    frames = [spark.read.format("binaryFile").load(str(Path(file).resolve())) for file in files]
    return union_all(frames).select("path", "content")


def without_gc(decode: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``decode`` run with Python's cycle collector paused (and restored after, the worker is reused): decoding
    makes no reference cycles, and the collector's passes over the growing column lists cost about a third of
    the decoding time."""

    @functools.wraps(decode)
    def paused(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield from decode(batches)
        finally:
            if enabled:
                gc.enable()

    return paused


@dataclass(frozen=True, slots=True)
class LogRange:
    """A run of whole records of one log file: bytes [start, end) (end: the file's end for its last range) and
    the zxid of its first record (None for a range that starts at the file's first record)."""

    file: str
    start: int
    end: int
    first_zxid: int | None


def log_ranges(path: str | Path, parts: int, min_bytes: int | None = None) -> list[LogRange]:
    """``path`` cut at record boundaries into up to ``parts`` ranges of about equal bytes, none under
    ``min_bytes``. The boundaries come from a hop over the record lengths; the cut stops at the first record
    that does not look whole (the end of the log, a partial or corrupt record): the last range runs from there
    to the file's end, so that its decoder meets the end or the error as it would in the whole file."""
    name = str(path)
    min_bytes = min_bytes or MIN_RANGE_BYTES
    with open(name, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        whole = [LogRange(name, FILE_HEADER.size, size, None)]
        if parts < 2 or size < 2 * min_bytes:
            return whole
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            starts = _record_starts(mapped, size)
            used = starts[-1] - FILE_HEADER.size
            step = max(used // parts, min_bytes)
            cuts = [FILE_HEADER.size]
            for target in range(FILE_HEADER.size + step, starts[-1] - min_bytes + 1, step):
                at = starts[bisect.bisect_left(starts, target)]
                if at > cuts[-1] and at < starts[-1]:
                    cuts.append(at)
            if len(cuts) < 2:
                return whole
            zxids = [None, *(_ZXID(mapped, at + RECORD_HEAD.size + ZXID_OFFSET)[0] for at in cuts[1:])]
    ends = [*cuts[1:], size]
    return [LogRange(name, start, end, zxid) for start, end, zxid in zip(cuts, ends, zxids, strict=True)]


def _record_starts(buf: Any, size: int) -> list[int]:
    """The offsets of the whole records, then the offset where they stop (the end of the log, or a record that
    is partial or corrupt)."""
    starts = []
    record_head, head_size, pos = RECORD_HEAD.unpack_from, RECORD_HEAD.size, FILE_HEADER.size
    while pos + head_size <= size:
        length = record_head(buf, pos)[1]
        end = pos + head_size + length
        if length < TXN_HEADER.size or end >= size or buf[end] != END_OF_RECORD:
            break
        starts.append(pos)
        pos = end + 1
    starts.append(pos)
    return starts


def read_range(log_range: LogRange) -> bytearray:
    """The file's 16-byte header followed by the range's bytes: a log of the range's records alone."""
    with open(log_range.file, "rb") as handle:
        content = bytearray(FILE_HEADER.size + log_range.end - log_range.start)
        view = memoryview(content)
        handle.readinto(view[:FILE_HEADER.size])
        handle.seek(log_range.start)
        handle.readinto(view[FILE_HEADER.size:])
        view.release()
    return content


def _ranges(spark: SparkSession, files: list[str], first_zxid: int | None, last_zxid: int | None
            ) -> list[LogRange]:
    """The ranges the logs are decoded in: about two per core in all, a file cut only when there are fewer files
    than that; ranges wholly outside [first_zxid, last_zxid] are left out."""
    wanted = 2 * spark.sparkContext.defaultParallelism
    parts = -(-wanted // len(files))
    ranges = [piece for file in files for piece in log_ranges(file, parts)]
    kept = []
    for piece, following in zip(ranges, [*ranges[1:], None], strict=True):
        if last_zxid is not None and piece.first_zxid is not None and piece.first_zxid > last_zxid:
            continue
        if (first_zxid is not None and following is not None and following.file == piece.file
                and following.first_zxid is not None and following.first_zxid <= first_zxid):
            continue
        kept.append(piece)
    return kept


def _range_frame(spark: SparkSession, ranges: list[LogRange]) -> DataFrame:
    """The ranges as a DataFrame of one row (numbered) per range and one partition per row: one task each."""
    listed = spark.sparkContext.parallelize([(number, piece.file, piece.start, piece.end, piece.first_zxid)
                                             for number, piece in enumerate(ranges)], len(ranges))
    return spark.createDataFrame(listed, "number int, " + RANGES_DDL)


def build_changes(spark: SparkSession, log_dir: str, *, chroot: str = "", first_zxid: int | None = None,
                  last_zxid: int | None = None, key: bytes | None = None) -> DataFrame:
    """The change table (``CHANGES`` plus ``log_error`` rows, see ``LOG_ERROR``) of every log in ``log_dir``
    (or its ``version-2``), zxids in [first_zxid, last_zxid]; decoded in Spark, lazily.

    With a local master the files are cut into ranges of whole records (``log_ranges``) decoded in parallel tasks
    that read their range from the file; otherwise each file is one task reading it with ``binaryFile``."""
    files = [str(path.resolve()) for path in log_files(log_dir)]
    if not files:
        return spark.createDataFrame([], CHANGES)
    root = chroot.rstrip("/")
    scrub = _scrubber(key)
    if spark.sparkContext.master.startswith("local"):
        ranges = _ranges(spark, files, first_zxid, last_zxid)

        @without_gc
        def decode_ranges(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for row in batch.to_pylist():
                    yield from _decode_range(LogRange(**row), root, first_zxid, last_zxid, scrub)

        decoded = _range_frame(spark, ranges).drop("number").mapInArrow(decode_ranges, DECODED_DDL)
    else:
        @without_gc
        def decode_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                names, contents = batch.column("path"), batch.column("content")
                for index in range(batch.num_rows):
                    yield from decode_log(contents[index].as_py(), names[index].as_py(), root, first_zxid,
                                          last_zxid, scrub)

        decoded = read_logs(spark, files).mapInArrow(decode_files, DECODED_DDL)
    return decoded.select("zxid", "op_index", F.timestamp_millis("time_ms").alias("time"), "session", "op", "path",
                          "data", "version", "ephemeral")


def _decode_range(piece: LogRange, root: str, first_zxid: int | None, last_zxid: int | None, scrub: Any
                  ) -> Iterator[pa.RecordBatch]:
    """The change rows of one range (see ``decode_log``)."""
    start = piece.first_zxid - 1 if piece.first_zxid is not None else None
    if first_zxid is not None and (start is None or first_zxid - 1 > start):
        start = first_zxid - 1
    yield from decode_log(read_range(piece), piece.file, root, first_zxid, last_zxid, scrub, start_zxid=start)


_WRITTEN = pa.schema([*(field for field in _DECODED if field.name != "time_ms")]).insert(
    2, pa.field("time", pa.timestamp("ms", tz="UTC")))
WRITTEN_DDL = "file string, rows long"


def _as_written(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A decoded batch in the table's own columns (``CHANGES``): epoch milliseconds as a UTC timestamp."""
    columns = [batch.column(name) for name in _DECODED.names]
    columns[2] = columns[2].cast(pa.timestamp("ms", tz="UTC"))
    return pa.RecordBatch.from_arrays(columns, schema=_WRITTEN)


def write_changes(spark: SparkSession, log_dir: str, target: str, *, chroot: str = "",
                  first_zxid: int | None = None, last_zxid: int | None = None, key: bytes | None = None) -> DataFrame:
    """The change table of ``build_changes`` written as Parquet at ``target`` (replaced), then read from there.

    With a local master and a local ``target``, each range's task writes its own Parquet part with pyarrow (the
    rows never pass through the JVM: about 3× faster than Spark's writer on these rows); a part is written under a
    hidden name and renamed when whole, so a reader sees whole parts only, and the job ends with ``_SUCCESS``.
    Otherwise Spark writes ``build_changes``."""
    local_target = target[len("file://"):] if target.startswith("file://") else target
    files = [str(path.resolve()) for path in log_files(log_dir)]
    if not (spark.sparkContext.master.startswith("local") and "://" not in local_target and files):
        build_changes(spark, log_dir, chroot=chroot, first_zxid=first_zxid, last_zxid=last_zxid,
                      key=key).write.mode("overwrite").parquet(target)
        return spark.read.schema(CHANGES).parquet(target)
    import shutil

    shutil.rmtree(local_target, ignore_errors=True)
    os.makedirs(local_target)
    root, scrub = chroot.rstrip("/"), _scrubber(key)
    ranges = _ranges(spark, files, first_zxid, last_zxid)

    @without_gc
    def write_ranges(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        for batch in batches:
            for row in batch.to_pylist():
                number = row.pop("number")
                name = f"part-{number:05d}.parquet"
                hidden = os.path.join(local_target, f".{name}.tmp")
                rows = 0
                with pq.ParquetWriter(hidden, _WRITTEN, compression="snappy") as writer:
                    for decoded in _decode_range(LogRange(**row), root, first_zxid, last_zxid, scrub):
                        writer.write_batch(_as_written(decoded))
                        rows += decoded.num_rows
                os.replace(hidden, os.path.join(local_target, name))
                yield pa.RecordBatch.from_pylist([{"file": name, "rows": rows}])

    _range_frame(spark, ranges).mapInArrow(write_ranges, WRITTEN_DDL).collect()
    Path(local_target, "_SUCCESS").touch()
    return spark.read.schema(CHANGES).parquet(target)


def base_rows(spark: SparkSession, tree: Any, chroot: str = "", key: bytes | None = None,
              at_zxid: int | None = None) -> DataFrame:
    """The rebuilt tree's znodes the interval checks read (``intervals.CHECKED_PATHS``), as ``base`` rows at
    ``at_zxid`` (default: the tree's zxid), timed at the tree's last applied txn. The snapshot's untouched rows
    are picked by a vector match of their paths; only the znodes the replay changed are looked at one by one."""
    root = chroot.rstrip("/")
    scrub = _scrubber(key)
    zxid = tree.zxid if at_zxid is None else at_zxid
    nodes = tree.nodes
    paths: list[str | None] = []
    datas: list[bytes | None] = []
    versions: list[int] = []
    owners: list[int] = []
    changed = nodes
    if isinstance(nodes, NodeMap):
        table = nodes.table
        rows = np.flatnonzero(nodes.untouched_rows() & _checked_mask(table.paths, root))
        take = pa.array(rows)
        paths = [relative_path(path, root) for path in table.paths.take(take).to_pylist()]
        datas = [value or b"" for value in table.data.take(take).to_pylist()]
        versions = table.stats["version"][rows].tolist()
        owners = table.stats["ephemeral_owner"][rows].tolist()
        changed = nodes.changed()
    checked = re.compile(CHECKED_PATHS)
    for absolute, node in changed.items():
        path = relative_path(absolute, root)
        if path is not None and checked.search(path):
            paths.append(path)
            datas.append(node.data)
            versions.append(node.version)
            owners.append(node.ephemeral_owner or 0)
    for index, (path, data) in enumerate(zip(paths, datas, strict=True)):
        if data and path.startswith(SECRET_PATHS):
            datas[index] = scrub(path, data)
    count = len(paths)
    columns = [[zxid] * count, [0] * count, [tree.time_ms] * count, owners, [BASE] * count, paths, datas, versions,
               [owner != 0 for owner in owners]]
    frame = spark.createDataFrame(pa.Table.from_batches([_batch(columns)]))
    return frame.select("zxid", "op_index", F.timestamp_millis("time_ms").alias("time"), "session", "op", "path",
                        "data", "version", "ephemeral")


def _checked_mask(paths: pa.StringArray, root: str) -> np.ndarray:
    """Which of the absolute ``paths`` lie under ``root`` and match ``CHECKED_PATHS`` once made relative to it."""
    if not root:
        matched = pc.match_substring_regex(paths, CHECKED_PATHS)
    else:
        inside = pc.starts_with(paths, root + "/")
        relative = pc.utf8_slice_codeunits(paths, len(root))
        matched = pc.and_(inside, pc.match_substring_regex(relative, CHECKED_PATHS))
    return np.asarray(pc.fill_null(matched, False).to_numpy(zero_copy_only=False), dtype=bool)


def with_session_deletes(changes: DataFrame) -> DataFrame:
    """The change table plus a ``delete`` row for each ephemeral znode a closeSession removed without the log
    listing it (ZooKeeper 3.5 and older log closeSession without paths)."""
    closes = changes.where(F.col("op") == "closeSession").select(
        F.col("zxid").alias("close_zxid"), F.col("time").alias("close_time"), F.col("session").alias("owner"))
    alive = znode_versions(changes).where(F.col("exists") & (F.col("ephemeral_owner") != 0))
    left_over = (alive.join(closes, alive["ephemeral_owner"] == closes["owner"])
                 .where((F.col("zxid") < F.col("close_zxid"))
                        & (F.col("end_zxid").isNull() | (F.col("end_zxid") > F.col("close_zxid")))))
    ordered = Window.partitionBy("close_zxid").orderBy("path")
    implied = left_over.select(
        F.col("close_zxid").alias("zxid"), (F.lit(10_000) + F.row_number().over(ordered)).cast("int")
        .alias("op_index"), F.col("close_time").alias("time"), F.col("owner").alias("session"),
        F.lit("delete").alias("op"), "path", F.lit(None).cast("binary").alias("data"),
        F.lit(None).cast("int").alias("version"), F.lit(False).alias("ephemeral"))
    return changes.unionByName(implied)
