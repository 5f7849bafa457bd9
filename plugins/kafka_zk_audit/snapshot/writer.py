"""Write snapshot rows as Parquet: part files of ``file_rows`` rows each, zstd, the snapshot table's schema.

``write_parquet`` is the one writer of both sources (the live walk, its parallel workers and the rebuild from
ZooKeeper's files): the batches are encoded on a writer thread while the source goes on producing them.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_zk_audit.contract.snapshot_table import ARROW_SCHEMA
from kafka_zk_audit.contract.warehouse import Warehouse


class _PartFiles:
    """Parquet files ``<prefix>-00000.parquet``… in one folder, a new one every ``file_rows`` rows."""

    def __init__(self, fs: Any, folder: str, prefix: str, file_rows: int) -> None:
        self.fs, self.folder, self.prefix, self.file_rows = fs, folder, prefix, file_rows
        self.files: list[str] = []
        self._writer: pq.ParquetWriter | None = None
        self._handle: Any = None
        self._rows = 0

    def _open(self) -> pq.ParquetWriter:
        name = f"{self.prefix}-{len(self.files):05d}.parquet"
        self.files.append(name)
        self._handle = self.fs.open(f"{self.folder}/{name}", "wb")
        self._writer = pq.ParquetWriter(self._handle, ARROW_SCHEMA, compression="zstd")
        self._rows = 0
        return self._writer

    def write(self, batch: pa.RecordBatch) -> None:
        writer = self._writer
        if writer is None or self._rows >= self.file_rows:
            self.close()
            writer = self._open()
        writer.write_batch(batch)
        self._rows += batch.num_rows

    def finish(self) -> None:
        """An empty tree still yields an (empty) file, so that readers see the schema."""
        if not self.files:
            self._open()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._handle.close()
            self._writer = self._handle = None


def write_parquet(
    warehouse: Warehouse, target: str, batches: Iterable[pa.RecordBatch], file_rows: int, prefix: str = "part"
) -> list[str]:
    """Write the batches into ``target``; the names of the files written.

    Each batch is encoded and compressed on a writer thread (Parquet does it without the GIL) while the
    walk goes on reading; at most one batch waits to be written.
    """
    fs = warehouse.fs
    fs_target = warehouse.fs_path(target)
    fs.makedirs(fs_target, exist_ok=True)
    parts = _PartFiles(fs, fs_target, prefix, file_rows)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="snapshot-parquet") as pool:
            writing: Future | None = None
            for batch in batches:
                if writing is not None:
                    writing.result()
                writing = pool.submit(parts.write, batch)
            if writing is not None:
                writing.result()
        parts.finish()
    finally:
        parts.close()
    return parts.files
