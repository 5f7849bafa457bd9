"""ZooKeeper's transaction log files (``log.<hex first zxid>``): found by name, their records found and checked.

Format: a 16-byte header {int magic "ZKLG", int version 2, long dbid}, then records
{long Adler32 of the payload, int length, payload, byte 0x42}. The log ends at a zero-length record (files are
preallocated with zeros), at EOF, or at a partial last record (a crash while writing); a checksum mismatch is
corruption. Each record's payload is decoded by ``txndecode``.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_zk_audit.snapshot.files.txndecode import DECODE_ERRORS, TXN_HEADER, Txn, decode_body

LOG_MAGIC = 0x5A4B4C47  # "ZKLG"
LOG_VERSION = 2
FILE_HEADER = struct.Struct(">iiq")
RECORD_HEAD = struct.Struct(">qi")
END_OF_RECORD = 0x42  # "B"


class TxnLogError(ValueError):
    """A corrupt or unreadable transaction log; the message says which file, where, and what to do."""

def zxid_named_files(directory: str | Path, prefix: str, suffixes: tuple[str, ...] = ()) -> list[Path]:
    """The ``<prefix>.<hex zxid>[.<suffix>]`` files in ``directory`` (or its ``version-2``), ordered by zxid."""
    root = Path(directory)
    if (root / "version-2").is_dir():
        root = root / "version-2"
    found = []
    for path in root.glob(f"{prefix}.*"):
        parts = path.name.split(".")
        if len(parts) == 2 or (len(parts) == 3 and parts[2] in suffixes):
            try:
                found.append((int(parts[1], 16), path))
            except ValueError:
                continue
    return [path for _, path in sorted(found)]


def log_files(directory: str | Path) -> list[Path]:
    """The ``log.<hex>`` files in ``directory`` (or its ``version-2``), ordered by their first zxid."""
    return zxid_named_files(directory, "log")


def log_start_zxid(path: str | Path) -> int:
    """The zxid in a log file's name: the first zxid it was opened for."""
    return int(Path(path).name.split(".")[1], 16)


def iter_txns(source: str | Path | bytes | memoryview, *, after_zxid: int | None = None) -> Iterator[Txn]:
    """The txns of one log file (a path or its bytes), in order; those with zxid ≤ ``after_zxid`` are skipped.

    Stops cleanly at the zero-length record, at EOF or at a partial last record; raises TxnLogError on a bad
    header, a checksum mismatch, an undecodable record, or non-zero data after the end of the log.
    """
    if not isinstance(source, (str, Path)):
        yield from _iter_buffer(memoryview(source), "<log bytes>", None, after_zxid)
        return
    name = str(source)
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed in the finally below, after the generator ends
    except OSError as exc:
        raise TxnLogError(f"{name}: cannot read the transaction log ({exc.strerror}); check the path") from exc
    try:
        size = os.fstat(handle.fileno()).st_size
        if size < FILE_HEADER.size:
            raise TxnLogError(f"{name}: {size} bytes, shorter than a log header; the file is truncated or not a "
                              "transaction log")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        buf = memoryview(mapped)
        try:
            yield from _iter_buffer(buf, name, handle.fileno(), after_zxid)
        finally:
            buf.release()
            try:
                mapped.close()
            except BufferError:  # a caller still holds a view into the map; it goes when they do
                pass
    finally:
        handle.close()


@dataclass(frozen=True, slots=True)
class RecordScan:
    """Where one log's whole records lie: the payload of record i is ``buf[starts[i]:ends[i]]`` (TxnHeader, body,
    optional TxnDigest); ``error`` is what stopped the scan before the log's end, if anything did."""

    starts: list[int]
    ends: list[int]
    error: TxnLogError | None


def scan_records(buf: memoryview, name: str, fileno: int | None = None) -> RecordScan:
    """The records of a log's bytes, their checksums checked; stops as ``iter_txns`` does (see there)."""
    size = len(buf)
    starts: list[int] = []
    ends: list[int] = []
    if size < FILE_HEADER.size:
        error = TxnLogError(f"{name}: {size} bytes, shorter than a log header; the file is truncated or not a log")
        return RecordScan(starts, ends, error)
    magic, version, _dbid = FILE_HEADER.unpack_from(buf, 0)
    if magic != LOG_MAGIC or version != LOG_VERSION:
        return RecordScan(starts, ends, TxnLogError(
            f"{name}: not a ZooKeeper transaction log (magic {magic:#010x}, version {version}; expected "
            f"{LOG_MAGIC:#010x} 'ZKLG' version {LOG_VERSION}); pass the dataLogDir holding log.<zxid> files"
        ))
    record_head, adler32, head_size, header_size = RECORD_HEAD.unpack_from, zlib.adler32, RECORD_HEAD.size, \
        TXN_HEADER.size
    add_start, add_end = starts.append, ends.append
    pos = FILE_HEADER.size
    try:
        while pos + head_size <= size:
            checksum, length = record_head(buf, pos)
            if length == 0:
                _expect_zeros(buf, pos, fileno, name, "after the end-of-log marker")
                break
            if length < 0:
                raise TxnLogError(f"{name}: the record at offset {pos} has length {length}; the log is corrupt — "
                                  "restore it from another server or a backup")
            body_start = pos + head_size
            body_end = body_start + length
            if body_end >= size or buf[body_end] != END_OF_RECORD:
                # a partial last record (a crash while writing): ZooKeeper stops here too
                if body_end < size:
                    _expect_zeros(buf, body_end + 1, fileno, name, f"after the partial record at offset {pos}")
                break
            computed = adler32(buf[body_start:body_end])
            if computed != checksum:
                raise TxnLogError(
                    f"{name}: checksum mismatch in the record at offset {pos} (stored {checksum:#x}, computed "
                    f"{computed:#x}); the log is corrupt — restore it from another server or a backup"
                )
            if length < header_size:
                raise TxnLogError(f"{name}: the record at offset {pos} is {length} bytes, shorter than a txn "
                                  "header; the log is corrupt or from an unsupported ZooKeeper version")
            add_start(body_start)
            add_end(body_end)
            pos = body_end + 1
        # fewer bytes than a record head remain: a partial last record, as ZooKeeper sees it
    except TxnLogError as exc:
        return RecordScan(starts, ends, exc)
    return RecordScan(starts, ends, None)


def undecodable(name: str, payload_start: int, exc: Exception) -> TxnLogError:
    """The error for a record whose payload (at ``payload_start``) passed its checksum but does not decode."""
    return TxnLogError(f"{name}: cannot decode the record at offset {payload_start - RECORD_HEAD.size}: {exc}; the "
                       "log is corrupt or from an unsupported ZooKeeper version")


def _iter_buffer(buf: memoryview, name: str, fileno: int | None, after_zxid: int | None) -> Iterator[Txn]:
    scan = scan_records(buf, name, fileno)
    txn_header, header_size = TXN_HEADER.unpack_from, TXN_HEADER.size
    skip_before = -(1 << 63) if after_zxid is None else after_zxid
    for start, end in zip(scan.starts, scan.ends, strict=True):
        header = txn_header(buf, start)
        if header[2] > skip_before:
            try:
                yield decode_body(buf, header, start + header_size, end)
            except DECODE_ERRORS as exc:
                raise undecodable(name, start, exc) from exc
    if scan.error is not None:
        raise scan.error


_ZERO_CHUNK = bytes(1 << 20)


def _expect_zeros(buf: memoryview, start: int, fileno: int | None, name: str, where: str) -> None:
    """Raise TxnLogError unless every byte from ``start`` on is zero (ZooKeeper preallocates logs with zeros).

    On a sparse file only the allocated extents are read (SEEK_DATA/SEEK_HOLE): a 64 MiB log costs a few pages. A
    copied log (SFTP, a backup) has no holes: each MiB is copied to ``bytes`` and compared with memcmp, as comparing
    the memoryview itself goes byte by byte (a 64 MiB log: 116 -> 8 ms, bench/bench_txnlog_tail.py).
    """
    for extent_start, extent_end in _data_extents(fileno, start, len(buf)):
        for offset in range(extent_start, extent_end, len(_ZERO_CHUNK)):
            chunk = bytes(buf[offset:min(offset + len(_ZERO_CHUNK), extent_end)])
            if chunk != _ZERO_CHUNK[:len(chunk)]:
                first = offset + len(chunk) - len(chunk.lstrip(b"\0"))
                raise TxnLogError(f"{name}: non-zero bytes at offset {first} {where}; the log is corrupt — "
                                  "restore it from another server or a backup")


def _data_extents(fileno: int | None, start: int, size: int) -> Iterator[tuple[int, int]]:
    """The allocated byte ranges of the file from ``start`` on (all of it when holes cannot be asked for)."""
    if fileno is None or not hasattr(os, "SEEK_DATA"):
        yield start, size
        return
    position = start
    while position < size:
        try:
            data = os.lseek(fileno, position, os.SEEK_DATA)
            hole = os.lseek(fileno, data, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # the file system cannot tell: read it all
                yield position, size
            return  # ENXIO: no data after position
        yield max(data, position), min(hole, size)
        position = hole

