"""One transaction log record's payload decoded: its TxnHeader, the body of every txn type, its TxnDigest.

A payload is a TxnHeader {long clientId, int cxid, long zxid, long time, int type}, the txn body and, from 3.6
on, a TxnDigest {int version, long treeDigest}. A multi holds sub-txns, each {int type, int length, body}.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_zk_audit.snapshot.files.jute import JuteEOFError

TXN_HEADER = struct.Struct(">qiqqi")  # clientId, cxid, zxid, time, type
DIGEST_SIZE = 12  # TxnDigest {int version, long treeDigest}
DIGEST_VERSION = 2

OP_NAMES: dict[int, str] = {
    1: "create", 2: "delete", 5: "setData", 7: "setACL", 13: "check", 14: "multi", 15: "create2",
    16: "reconfig", 19: "createContainer", 20: "deleteContainer", 21: "createTTL",
    -10: "createSession", -11: "closeSession", -1: "error",
}
CREATE_OPS = frozenset({"create", "create2", "createContainer", "createTTL"})


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


DECODE_ERRORS = (JuteEOFError, UnicodeDecodeError, ValueError, IndexError, struct.error)


def decode_record(buf: memoryview, start: int, end: int) -> Txn:
    """The txn whose payload (TxnHeader, body, optional TxnDigest) is ``buf[start:end]``."""
    return decode_body(buf, TXN_HEADER.unpack_from(buf, start), start + TXN_HEADER.size, end)


def decode_txn(payload: bytes | memoryview) -> Txn:
    """One record's payload: TxnHeader, body, optional TxnDigest."""
    buf = memoryview(payload)
    if len(buf) < TXN_HEADER.size:
        raise JuteEOFError(f"a txn of {len(buf)} bytes has no complete header")
    return decode_body(buf, TXN_HEADER.unpack_from(buf, 0), TXN_HEADER.size, len(buf))


# The decoders below read the buffer at absolute offsets and return (value, next offset). A read that runs past
# the record's end is caught after the body (``pos > end``): every offset only grows, and a slice past the buffer's
# end stops there, so nothing is read outside the buffer and an overrun never goes unnoticed.
_INT = struct.Struct(">i").unpack_from
_LONG = struct.Struct(">q").unpack_from
_INT_LONG = struct.Struct(">iq").unpack_from
_TWO_INTS = struct.Struct(">ii").unpack_from
_THREE_INTS = struct.Struct(">iii").unpack_from
INT_SIZE, LONG_SIZE = 4, 8


def decode_body(buf: memoryview, header: tuple[int, int, int, int, int], pos: int, end: int) -> Txn:
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


def _path_and_data(buf: memoryview, pos: int) -> tuple[str | None, bytes | None, int]:
    """A path (string) then data (buffer), each None for length −1, read in one call: the hot path of create and
    setData bodies."""
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
    return path, data, pos


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
    parentCVersion is the pre-3.3 CreateTxnV0 (parentCVersion −1)."""
    path, data, pos = _path_and_data(buf, pos)
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
    """SetDataTxn / reconfig {path, data, int version}."""
    path, data, pos = _path_and_data(buf, pos)
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
