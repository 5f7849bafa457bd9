"""Transaction logs into a change table in Spark: one row per operation that changed a znode.

``build_changes`` reads the ``log.<hex>`` files with Spark's ``binaryFile`` source (one scan, hence one task,
per file) and decodes each file's content on the executors with ``offline.txnlog.iter_txns`` inside
``mapInArrow``; no row passes through the driver. The table (``CHANGES``):

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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
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

from kafka_zk_audit.contract.secrets import SECRET_DATA_PATHS, SECRET_VALUE_PATHS
from kafka_zk_audit.offline.intervals import BASE, CHECKED_PATHS, znode_versions
from kafka_zk_audit.offline.txnlog import TxnLogError, iter_txns, log_files

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
SECRET_PATHS = (*SECRET_VALUE_PATHS, *SECRET_DATA_PATHS)


def relative_path(path: str | None, chroot: str) -> str | None:
    """A ZooKeeper path relative to ``chroot`` ("" or "/" for none), or None when outside it."""
    if path is None or not chroot or chroot == "/":
        return path
    if path == chroot:
        return "/"
    if path.startswith(chroot) and path[len(chroot)] == "/":
        return path[len(chroot):]
    return None


class _Columns:
    """Column lists of decoded rows, flushed as Arrow record batches."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add(self, zxid: int, index: int, time_ms: int, session: int, op: str, path: str | None,
            data: bytes | None, version: int | None, ephemeral: bool) -> None:
        self.rows.append((zxid, index, time_ms, session, op, path, data, version, ephemeral))

    def __len__(self) -> int:
        return len(self.rows)

    def flush(self) -> pa.RecordBatch:
        by_column = zip(*self.rows, strict=True)
        columns = [pa.array(values, type=field.type) for values, field in zip(by_column, _DECODED, strict=True)]
        self.rows = []
        return pa.RecordBatch.from_arrays(columns, schema=_DECODED)


def decode_log(content: bytes, name: str, chroot: str, first_zxid: int | None, last_zxid: int | None,
               scrub: Any = None) -> Iterator[pa.RecordBatch]:
    """The change rows of one log file's bytes, as record batches (see the module doc for the rows)."""
    out = _Columns()
    add = out.rows.append  # the hot loop: one tuple per row
    after = first_zxid - 1 if first_zxid is not None else None
    zxid = after or 0
    try:
        for txn in iter_txns(content, after_zxid=after):
            zxid, time_ms, session = txn.zxid, txn.time_ms, txn.session
            if last_zxid is not None and zxid > last_zxid:
                break
            if txn.failed:
                continue
            for index, op in enumerate(txn.ops):
                kind = op.op
                if kind in SKIPPED_OPS:
                    continue
                if kind in SESSION_OPS:
                    add((zxid, index, time_ms, session, kind, None, None, None, False))
                    for number, gone in enumerate(op.paths or (), start=1):
                        path = relative_path(gone, chroot)
                        if path is not None:
                            add((zxid, number, time_ms, session, "delete", path, None, None, False))
                    continue
                path = relative_path(op.path, chroot)
                if path is None:
                    continue
                data = op.data
                if data and path.startswith(SECRET_PATHS):
                    data = scrub(path, data) if scrub is not None else None
                add((zxid, index, time_ms, session, kind, path, data, op.version, op.ephemeral))
            if len(out.rows) >= BATCH_ROWS:
                yield out.flush()
                add = out.rows.append
    except TxnLogError as exc:  # a corrupt file: what came before stands, the rest is reported
        add((zxid, 0, 0, 0, LOG_ERROR, name, str(exc).encode(), None, False))
    if out.rows:
        yield out.flush()


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
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union.select("path", "content")


def build_changes(spark: SparkSession, log_dir: str, *, chroot: str = "", first_zxid: int | None = None,
                  last_zxid: int | None = None, key: bytes | None = None) -> DataFrame:
    """The change table (``CHANGES`` plus ``log_error`` rows, see ``LOG_ERROR``) of every log in ``log_dir``
    (or its ``version-2``), zxids in [first_zxid, last_zxid]; decoded in Spark, lazily."""
    files = [str(path) for path in log_files(log_dir)]
    if not files:
        return spark.createDataFrame([], CHANGES)
    root = chroot.rstrip("/")
    scrub = _scrubber(key)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            names, contents = batch.column("path"), batch.column("content")
            for index in range(batch.num_rows):
                yield from decode_log(contents[index].as_py(), names[index].as_py(), root, first_zxid, last_zxid,
                                      scrub)

    decoded = read_logs(spark, files).mapInArrow(decode, DECODED_DDL)
    return decoded.select("zxid", "op_index", F.timestamp_millis("time_ms").alias("time"), "session", "op", "path",
                          "data", "version", "ephemeral")


def base_rows(spark: SparkSession, tree: Any, chroot: str = "", key: bytes | None = None,
              at_zxid: int | None = None) -> DataFrame:
    """The rebuilt tree's znodes the interval checks read (``intervals.CHECKED_PATHS``), as ``base`` rows at
    ``at_zxid`` (default: the tree's zxid), timed at the tree's last applied txn."""
    import re

    checked = re.compile(CHECKED_PATHS)
    root = chroot.rstrip("/")
    scrub = _scrubber(key)
    zxid = tree.zxid if at_zxid is None else at_zxid
    time_ms = tree.time_ms
    rows = []
    for absolute, node in tree.nodes.items():
        path = relative_path(absolute, root)
        if path is None or not checked.search(path):
            continue
        data = node.data
        if data and path.startswith(SECRET_PATHS):
            data = scrub(path, data)
        owner = node.ephemeral_owner or 0
        rows.append((zxid, 0, time_ms, owner, BASE, path, data, node.version, owner != 0))
    frame = spark.createDataFrame(rows, DECODED_DDL)
    return frame.select("zxid", "op_index", F.timestamp_millis("time_ms").alias("time"), "session", "op", "path",
                        "data", "version", "ephemeral")


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
