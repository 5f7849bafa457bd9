"""ZooKeeper's transaction log files (``log.<hex first zxid>``): records, checksums, and every txn type.

Format: a 16-byte header {int magic "ZKLG", int version 2, long dbid}, then records
{long Adler32 of the payload, int length, payload, byte 0x42}. A payload is a TxnHeader, the txn body and,
from 3.6 on, a TxnDigest. The log ends at a zero-length record (files are preallocated with zeros), at EOF, or
at a partial last record (a crash while writing); a checksum mismatch is corruption.
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

from kafka_zk_audit.snapshot.files.jute import JuteEOFError

LOG_MAGIC = 0x5A4B4C47  # "ZKLG"
LOG_VERSION = 2
FILE_HEADER = struct.Struct(">iiq")
RECORD_HEAD = struct.Struct(">qi")
TXN_HEADER = struct.Struct(">qiqqi")  # clientId, cxid, zxid, time, type
END_OF_RECORD = 0x42  # "B"
DIGEST_SIZE = 12  # TxnDigest {int version, long treeDigest}
DIGEST_VERSION = 2

OP_NAMES: dict[int, str] = {
    1: "create", 2: "delete", 5: "setData", 7: "setACL", 13: "check", 14: "multi", 15: "create2",
    16: "reconfig", 19: "createContainer", 20: "deleteContainer", 21: "createTTL",
    -10: "createSession", -11: "closeSession", -1: "error",
}
CREATE_OPS = frozenset({"create", "create2", "createContainer", "createTTL"})


class TxnLogError(ValueError):
    """A corrupt or unreadable transaction log; the message says which file, where, and what to do."""


@dataclass(frozen=True, slots=True)
class TxnOp:
    """One operation: a single txn's body, or one sub-txn of a multi."""

    op: str
    path: str | None = None
    data: bytes | None = None
    version: int | None = None
    ephemeral: bool = False
    acl: tuple[tuple[int, str, str], ...] | None = None
    parent_cversion: int | None = None
    ttl: int | None = None
    paths: tuple[str, ...] | None = None
    error: int | None = None
    timeout: int | None = None


@dataclass(frozen=True, slots=True)
class Txn:
    """One logged transaction: its header fields, its operation(s) and its tree digest (3.6+)."""

    zxid: int
    time_ms: int
    session: int
    cxid: int
    type: str
    ops: tuple[TxnOp, ...]
    digest: int | None

    @property
    def failed(self) -> bool:
        """An ``error`` txn, or a multi with an ``error`` sub-op: it has no effect on the tree."""
        for op in self.ops:
            if op.op == "error":
                return True
        return False


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


DECODE_ERRORS = (JuteEOFError, UnicodeDecodeError, ValueError, IndexError, struct.error)


def _iter_buffer(buf: memoryview, name: str, fileno: int | None, after_zxid: int | None) -> Iterator[Txn]:
    scan = scan_records(buf, name, fileno)
    txn_header, header_size = TXN_HEADER.unpack_from, TXN_HEADER.size
    skip_before = -(1 << 63) if after_zxid is None else after_zxid
    for start, end in zip(scan.starts, scan.ends, strict=True):
        header = txn_header(buf, start)
        if header[2] > skip_before:
            try:
                yield _decode(buf, header, start + header_size, end)
            except DECODE_ERRORS as exc:
                raise undecodable(name, start, exc) from exc
    if scan.error is not None:
        raise scan.error


_ZERO_CHUNK = bytes(1 << 20)


def _expect_zeros(buf: memoryview, start: int, fileno: int | None, name: str, where: str) -> None:
    """Raise TxnLogError unless every byte from ``start`` on is zero (ZooKeeper preallocates logs with zeros).

    On a sparse file only the allocated extents are read (SEEK_DATA/SEEK_HOLE): a 64 MiB log costs a few pages.
    """
    for extent_start, extent_end in _data_extents(fileno, start, len(buf)):
        for offset in range(extent_start, extent_end, len(_ZERO_CHUNK)):
            chunk = buf[offset:min(offset + len(_ZERO_CHUNK), extent_end)]
            if chunk != _ZERO_CHUNK[:len(chunk)]:
                first = offset + len(chunk) - len(bytes(chunk).lstrip(b"\0"))
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


def decode_record(buf: memoryview, start: int, end: int) -> Txn:
    """The txn whose payload (TxnHeader, body, optional TxnDigest) is ``buf[start:end]``."""
    return _decode(buf, TXN_HEADER.unpack_from(buf, start), start + TXN_HEADER.size, end)


def decode_txn(payload: bytes | memoryview) -> Txn:
    """One record's payload: TxnHeader, body, optional TxnDigest."""
    buf = memoryview(payload)
    if len(buf) < TXN_HEADER.size:
        raise JuteEOFError(f"a txn of {len(buf)} bytes has no complete header")
    return _decode(buf, TXN_HEADER.unpack_from(buf, 0), TXN_HEADER.size, len(buf))


# The decoders below read the buffer at absolute offsets and return (value, next offset). A read that runs past
# the record's end is caught after the body (``pos > end``): every offset only grows, and a slice past the buffer's
# end stops there, so nothing is read outside the buffer and an overrun never goes unnoticed.
_INT = struct.Struct(">i").unpack_from
_LONG = struct.Struct(">q").unpack_from
_INT_LONG = struct.Struct(">iq").unpack_from
_TWO_INTS = struct.Struct(">ii").unpack_from
_THREE_INTS = struct.Struct(">iii").unpack_from
INT_SIZE, LONG_SIZE = 4, 8


def _decode(buf: memoryview, header: tuple[int, int, int, int, int], pos: int, end: int) -> Txn:
    """The txn whose header is ``header`` and whose body lies in ``buf[pos:end]``."""
    session, cxid, zxid, time_ms, type_code = header
    decoder = _BODIES.get(type_code)
    if decoder is not None:  # create, delete, setData, …: one op
        op, pos = decoder(buf, pos, end, True)
        ops: tuple[TxnOp, ...] = (op,)
        type_name = op.op
    elif type_code == MULTI:
        ops, pos = _decode_multi(buf, pos, end)
        type_name = "multi"
    elif type_code == CLOSE_SESSION:
        op, pos = _decode_close_session(buf, pos, end)
        ops, type_name = (op,), "closeSession"
    else:
        raise ValueError(f"unknown txn type {type_code} (zxid {zxid:#x})")
    if pos > end:
        raise JuteEOFError(f"the {type_name} body runs {pos - end} bytes past the record's end")
    digest = None
    if end - pos >= DIGEST_SIZE:
        digest = _INT_LONG(buf, pos)[1] & 0xFFFFFFFFFFFFFFFF
    return Txn(zxid, time_ms, session, cxid, type_name, ops, digest)


def _decode_multi(buf: memoryview, pos: int, end: int) -> tuple[tuple[TxnOp, ...], int]:
    (count,) = _INT(buf, pos)
    pos += INT_SIZE
    ops = []
    for _ in range(max(count, 0)):
        sub_type, length = _TWO_INTS(buf, pos)
        sub_start = pos + 2 * INT_SIZE
        sub_end = sub_start + max(length, 0)
        decoder = _BODIES.get(sub_type)
        if decoder is None or sub_type == CREATE_SESSION:
            raise ValueError(f"unexpected sub-txn type {sub_type} in a multi")
        if sub_end > end:
            raise JuteEOFError(f"a sub-txn of {length} bytes runs past the record's end")
        op, sub_pos = decoder(buf, sub_start, sub_end, False)
        if sub_pos > sub_end:
            raise JuteEOFError(f"the {op.op} sub-txn runs {sub_pos - sub_end} bytes past its buffer")
        ops.append(op)
        pos = sub_end
    return tuple(ops), pos


def _decode_close_session(buf: memoryview, pos: int, end: int) -> tuple[TxnOp, int]:
    """closeSession: no body (≤3.5, or closeSessionTxn disabled) or CloseSessionTxn {vector<string> paths}."""
    remaining = end - pos
    if remaining == 0:
        return TxnOp("closeSession"), pos
    if remaining == DIGEST_SIZE and _INT(buf, pos)[0] == DIGEST_VERSION:
        return TxnOp("closeSession"), pos  # a digest alone: a vector of two empty paths is impossible
    (count,) = _INT(buf, pos)
    pos += INT_SIZE
    paths = None
    if count >= 0:
        names = []
        for _ in range(count):
            path, pos = _string(buf, pos)
            names.append(path or "")
        paths = tuple(names)
    if end - pos not in (0, DIGEST_SIZE):
        raise ValueError(f"closeSession body leaves {end - pos} bytes unexplained")
    return TxnOp("closeSession", paths=paths), pos


def _string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    """A length-prefixed UTF-8 string; None for length −1."""
    (length,) = _INT(buf, pos)
    pos += INT_SIZE
    if length < 0:
        return None, pos
    return str(buf[pos:pos + length], "utf-8", "surrogateescape"), pos + length


def _buffer(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    """A length-prefixed byte buffer; None for length −1."""
    (length,) = _INT(buf, pos)
    pos += INT_SIZE
    if length < 0:
        return None, pos
    return buf[pos:pos + length].tobytes(), pos + length


_ACL_CACHE: dict[bytes, tuple[tuple[int, str, str], ...]] = {}  # the bytes of a one-ACL vector -> it
_ACL_CACHE_SIZE = 4096


def _acls(buf: memoryview, pos: int) -> tuple[tuple[tuple[int, str, str], ...] | None, int]:
    """A vector of ACL records {int perms, string scheme, string id}; None for a null vector. A vector of one
    ACL (the common case: every znode of a cluster has one of a few) is decoded once and then looked up."""
    try:
        count, _perms, scheme_length = _THREE_INTS(buf, pos)
    except struct.error:  # fewer than 12 bytes left: not a one-ACL vector
        return _acl_vector(buf, pos)
    if count == 1 and scheme_length >= 0:
        id_at = pos + 3 * INT_SIZE + scheme_length
        (id_length,) = _INT(buf, id_at)
        if id_length >= 0:
            end = id_at + INT_SIZE + id_length
            key = buf[pos:end].tobytes()
            cached = _ACL_CACHE.get(key)
            if cached is None:
                cached, _ = _acl_vector(buf, pos)
                if len(_ACL_CACHE) < _ACL_CACHE_SIZE and cached is not None:
                    _ACL_CACHE[key] = cached
            return cached, end
    return _acl_vector(buf, pos)


def _acl_vector(buf: memoryview, pos: int) -> tuple[tuple[tuple[int, str, str], ...] | None, int]:
    (count,) = _INT(buf, pos)
    pos += INT_SIZE
    if count < 0:
        return None, pos
    acls = []
    for _ in range(count):
        (perms,) = _INT(buf, pos)
        scheme, pos = _string(buf, pos + INT_SIZE)
        ident, pos = _string(buf, pos)
        acls.append((perms, scheme or "", ident or ""))
    return tuple(acls), pos


def _create_body(name: str, buf: memoryview, pos: int, end: int, legacy: bool) -> tuple[TxnOp, int]:
    """CreateTxn {path, data, acl, bool ephemeral, int parentCVersion}; with ``legacy``, a body without
    parentCVersion is the pre-3.3 CreateTxnV0 (parentCVersion −1). Path and data are read inline (hot path)."""
    (length,) = _INT(buf, pos)
    pos += INT_SIZE
    path = None
    if length >= 0:
        path = str(buf[pos:pos + length], "utf-8", "surrogateescape")
        pos += length
    (length,) = _INT(buf, pos)
    pos += INT_SIZE
    data = None
    if length >= 0:
        data = buf[pos:pos + length].tobytes()
        pos += length
    acl, pos = _acls(buf, pos)
    ephemeral = buf[pos] != 0
    pos += 1
    if legacy and end - pos < INT_SIZE:
        return TxnOp(name, path, data, None, ephemeral, acl, -1), pos
    return TxnOp(name, path, data, None, ephemeral, acl, _INT(buf, pos)[0]), pos + INT_SIZE


def _create(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    return _create_body("create", buf, pos, end, top_level)


def _create2(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    return _create_body("create2", buf, pos, end, False)


def _create_container(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    """CreateContainerTxn {path, data, acl, int parentCVersion}."""
    path, pos = _string(buf, pos)
    data, pos = _buffer(buf, pos)
    acl, pos = _acls(buf, pos)
    return TxnOp("createContainer", path=path, data=data, acl=acl, parent_cversion=_INT(buf, pos)[0]), pos + INT_SIZE


def _create_ttl(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    """CreateTTLTxn {path, data, acl, int parentCVersion, long ttl}."""
    path, pos = _string(buf, pos)
    data, pos = _buffer(buf, pos)
    acl, pos = _acls(buf, pos)
    parent_cversion, ttl = _INT_LONG(buf, pos)
    return (TxnOp("createTTL", path=path, data=data, acl=acl, parent_cversion=parent_cversion, ttl=ttl),
            pos + INT_SIZE + LONG_SIZE)


def _delete(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    path, pos = _string(buf, pos)
    return TxnOp("delete", path=path), pos


def _delete_container(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    path, pos = _string(buf, pos)
    return TxnOp("deleteContainer", path=path), pos


def _set_data_body(name: str, buf: memoryview, pos: int) -> tuple[TxnOp, int]:
    """SetDataTxn / reconfig {path, data, int version}, read inline (hot path)."""
    (length,) = _INT(buf, pos)
    pos += INT_SIZE
    path = None
    if length >= 0:
        path = str(buf[pos:pos + length], "utf-8", "surrogateescape")
        pos += length
    (length,) = _INT(buf, pos)
    pos += INT_SIZE
    data = None
    if length >= 0:
        data = buf[pos:pos + length].tobytes()
        pos += length
    return TxnOp(name, path, data, _INT(buf, pos)[0]), pos + INT_SIZE


def _set_data(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    return _set_data_body("setData", buf, pos)


def _reconfig(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    return _set_data_body("reconfig", buf, pos)


def _set_acl(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    """SetACLTxn {path, vector<ACL>, int version}."""
    path, pos = _string(buf, pos)
    acl, pos = _acls(buf, pos)
    return TxnOp("setACL", path=path, acl=acl, version=_INT(buf, pos)[0]), pos + INT_SIZE


def _check(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    """CheckVersionTxn {path, int version}."""
    path, pos = _string(buf, pos)
    return TxnOp("check", path=path, version=_INT(buf, pos)[0]), pos + INT_SIZE


def _create_session(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    return TxnOp("createSession", timeout=_INT(buf, pos)[0]), pos + INT_SIZE


def _error(buf: memoryview, pos: int, end: int, top_level: bool) -> tuple[TxnOp, int]:
    return TxnOp("error", error=_INT(buf, pos)[0]), pos + INT_SIZE


MULTI, CLOSE_SESSION, CREATE_SESSION = 14, -11, -10
# The body decoder of every single-op txn type (ZooDefs.OpCode); multi and closeSession are decoded apart.
_BODIES = {
    1: _create, 2: _delete, 5: _set_data, 7: _set_acl, 13: _check, 15: _create2, 16: _reconfig,
    19: _create_container, 20: _delete_container, 21: _create_ttl, CREATE_SESSION: _create_session, -1: _error,
}
