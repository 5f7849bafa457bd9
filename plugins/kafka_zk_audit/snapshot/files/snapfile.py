"""ZooKeeper's snapshot files (``snapshot.<hex zxid>[.gz|.snappy]``): found by name, read and decompressed.

A file is memory-mapped (uncompressed) or decompressed (gzip, snappy-java), then decoded whole by ``snapdecode``.
A snapshot is written in place, so a copy can be half-written: only a file that parses to its last seal and ends
there is used.
"""

from __future__ import annotations

import gzip
import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from kafka_zk_audit.snapshot.files.jute import JuteEOFError
from kafka_zk_audit.snapshot.files.snapdecode import SnapshotFile, SnapshotFileError, Stream, parse_snapshot
from kafka_zk_audit.snapshot.files.txnlog import zxid_named_files

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER_SIZE = 16


def snapshot_files(directory: str | Path) -> list[Path]:
    """The ``snapshot.<hex>[.gz|.snappy]`` files in ``directory`` (or its ``version-2``), ordered by zxid."""
    return zxid_named_files(directory, "snapshot", ("gz", "snappy"))


def snapshot_zxid(path: str | Path) -> int:
    """The zxid in a snapshot file's name."""
    return int(Path(path).name.split(".")[1], 16)


def read_snapshot(path: str | Path) -> SnapshotFile:
    """Parse a snapshot file whole; raises SnapshotFileError unless every seal holds and the file ends there."""
    name = str(path)
    compression = _compression_of(Path(path))
    try:
        with open(path, "rb") as handle:
            raw = _mapped(handle) if compression == "none" else handle.read()
    except OSError as exc:
        raise SnapshotFileError(f"{name}: cannot read the snapshot ({exc.strerror}); check the path") from exc
    try:
        stream = _decompress(raw, compression)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise SnapshotFileError(f"{name}: the {compression} stream is truncated or corrupt ({exc}); use an "
                                "older snapshot or copy the file again") from exc
    try:
        return parse_snapshot(stream, name, snapshot_zxid(path), compression)
    except (JuteEOFError, struct.error, IndexError) as exc:
        raise SnapshotFileError(f"{name}: truncated ({exc}); the file is incomplete — it was copied while being "
                                "written or cut short: use an older snapshot or copy it again") from exc
    except (UnicodeDecodeError, ValueError, pa.ArrowInvalid) as exc:
        if isinstance(exc, SnapshotFileError):
            raise
        raise SnapshotFileError(f"{name}: corrupt ({exc}); use an older snapshot") from exc
    finally:
        if isinstance(raw, mmap.mmap):
            try:
                raw.close()
            except BufferError:  # a view of it is still referenced (an exception's frame): it goes with that
                pass


def _mapped(handle: BinaryIO) -> Stream:
    """The file, memory-mapped (read-only, no copy); an empty file as b""."""
    if os.fstat(handle.fileno()).st_size == 0:
        return b""
    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _compression_of(path: Path) -> str:
    suffix = path.name.rsplit(".", 1)[-1]
    return {"gz": "gz", "snappy": "snappy"}.get(suffix, "none")


def _decompress(raw: Stream, compression: str) -> Stream:
    if compression == "gz":
        return gzip.decompress(raw)
    if compression == "snappy":
        return _snappy_java_stream(raw)
    return raw


def _snappy_java_stream(raw: bytes) -> bytes:
    """Decode snappy-java's SnappyOutputStream format: a 16-byte header, then [int32 length][raw snappy block]…"""
    import pyarrow

    codec = pyarrow.Codec("snappy")
    view = memoryview(raw)
    if bytes(view[:8]) != SNAPPY_MAGIC:
        raise ValueError("no snappy-java stream header")
    pos, out = 0, []
    while pos < len(view):
        if bytes(view[pos:pos + 8]) == SNAPPY_MAGIC:  # a stream header (also between concatenated streams)
            pos += SNAPPY_HEADER_SIZE
            continue
        if pos + 4 > len(view):
            raise ValueError(f"a block length cut at offset {pos}")
        (length,) = struct.unpack_from(">i", view, pos)
        block = view[pos + 4:pos + 4 + length]
        if length <= 0 or len(block) != length:
            raise ValueError(f"a block at offset {pos} is cut or has length {length}")
        out.append(codec.decompress(block, decompressed_size=_varint(block)).to_pybytes())
        pos += 4 + length
    return b"".join(out)


def _varint(block: memoryview) -> int:
    """The uncompressed length a raw snappy block starts with (little-endian base-128, at most 5 bytes)."""
    value = 0
    for shift, byte in zip(range(0, 35, 7), bytes(block[:5]), strict=False):
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
    raise ValueError("bad snappy block length")

