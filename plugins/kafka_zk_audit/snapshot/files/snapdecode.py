"""The bytes of a ZooKeeper snapshot (decompressed), decoded whole and every seal verified.

Layout: FileHeader {int "ZKSN", int 2, long dbid}, sessions, the ACL map, the nodes in pre-order ending with the
path "/", an Adler32 seal (long checksum of every byte before it, then the string "/"), from 3.6 a ZxidDigest
{long zxid, int version, long digest} with its own seal, from 3.9 a lastProcessedZxid with its own seal, then EOF.

The node list is decoded with one tight loop that only finds offsets and vector operations for the rest, into a
:class:`~kafka_zk_audit.snapshot.files.datatree.NodeTable`.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_zk_audit.snapshot.files.arrow_views import VIEW_BUFFER_SPAN, heads, view_array, views
from kafka_zk_audit.snapshot.files.datatree import OPEN_ACL_UNSAFE_REF, STAT_COLUMNS, NodeMap, NodeTable
from kafka_zk_audit.snapshot.files.digest import ZOOKEEPER_SUBTREE, crc32_of_stats
from kafka_zk_audit.snapshot.files.jute import Acl, JuteEOFError, JuteReader

SNAP_MAGIC = 0x5A4B534E  # "ZKSN"
SNAP_VERSION = 2
FILE_HEADER = struct.Struct(">iiq")
STAT = struct.Struct(">qqqqiiiqq")  # StatPersisted: czxid mzxid ctime mtime version cversion aversion owner pzxid
SEAL_SIZE = 8 + 4 + 1  # long Adler32, string "/"
DIGEST_TRAILER = 8 + 4 + 8 + SEAL_SIZE
LAST_ZXID_TRAILER = 8 + SEAL_SIZE
# What follows a node's data: long aclRef, then StatPersisted (its fields as STAT), big-endian.
NODE_TAIL = np.dtype([("acl_ref", ">i8"), ("czxid", ">i8"), ("mzxid", ">i8"), ("ctime", ">i8"), ("mtime", ">i8"),
                      ("version", ">i4"), ("cversion", ">i4"), ("aversion", ">i4"), ("ephemeral_owner", ">i8"),
                      ("pzxid", ">i8")])
Stream = bytes | mmap.mmap  # a snapshot's (decompressed) bytes
SLASH = ord("/")


class SnapshotFileError(ValueError):
    """A snapshot file that is truncated, corrupt or not a snapshot; the message says which, where, what to do."""


@dataclass
class SnapshotFile:
    """A parsed snapshot: its sessions, nodes (by absolute path, root "/") and trailers."""

    path: str
    zxid: int  # Z0: the file name's zxid, last processed when serialization started
    compression: str  # "none", "gz", "snappy"
    sessions: dict[int, int]  # session id -> timeout ms
    nodes: NodeMap
    digest_zxid: int | None = None  # Z1: last applied when serialization ended (3.6+)
    digest_version: int | None = None
    digest: int | None = None
    last_processed_zxid: int | None = None  # 3.9+

    @property
    def file_format(self) -> str:
        if self.last_processed_zxid is not None:
            return "3.9+"
        return "3.6+" if self.digest is not None else "3.4/3.5"


def parse_snapshot(stream: Stream, name: str, zxid: int, compression: str) -> SnapshotFile:
    """The snapshot in ``stream`` (decompressed; ``name``: its file, for errors), parsed to its last seal."""
    reader = JuteReader(stream)
    magic, version, _dbid = FILE_HEADER.unpack_from(stream, reader._need(FILE_HEADER.size))
    if magic != SNAP_MAGIC or version != SNAP_VERSION:
        raise SnapshotFileError(f"{name}: not a ZooKeeper snapshot (magic {magic:#010x}, version {version}); "
                                "pass the dataDir holding snapshot.<zxid> files")
    sessions = {}
    for _ in range(reader.int()):
        session_id = reader.long()
        sessions[session_id] = reader.int()
    acl_map: dict[int, tuple[Acl, ...]] = {}
    for _ in range(reader.int()):
        ref = reader.long()
        acl_map[ref] = reader.acl_vector() or ()
    table, reader.pos = _read_nodes(stream, reader.pos, acl_map, name)
    snapshot = SnapshotFile(path=name, zxid=zxid, compression=compression, sessions=sessions, nodes=NodeMap(table))
    summed = _check_seal(reader, stream, name, "the node list", (0, 1))
    trailer = reader.remaining
    if trailer not in (0, DIGEST_TRAILER, LAST_ZXID_TRAILER, DIGEST_TRAILER + LAST_ZXID_TRAILER):
        raise SnapshotFileError(f"{name}: {trailer} bytes after the node list's seal, which no ZooKeeper version "
                                "writes; the file is cut inside a trailer or corrupt: use an older snapshot")
    if trailer >= DIGEST_TRAILER and trailer != LAST_ZXID_TRAILER:
        snapshot.digest_zxid, snapshot.digest_version = reader.long(), reader.int()
        snapshot.digest = reader.long() & 0xFFFFFFFFFFFFFFFF
        summed = _check_seal(reader, stream, name, "the digest trailer", summed)
    if reader.remaining == LAST_ZXID_TRAILER:
        snapshot.last_processed_zxid = reader.long()
        _check_seal(reader, stream, name, "the lastProcessedZxid trailer", summed)
    return snapshot


def _node_offsets(stream: Stream, pos: int) -> tuple[array, array, int]:
    """The tight loop over the node list: each record's offset and the CRC32 of its path and data (the start of
    its digest); and where the terminating path "/" begins."""
    unpack_int, crc32 = struct.Struct(">i").unpack_from, zlib.crc32
    starts, crcs = array("q"), array("I")
    add_start, add_crc = starts.append, crcs.append
    tail_size = NODE_TAIL.itemsize
    while True:
        (path_length,) = unpack_int(stream, pos)
        path_start = pos + 4
        path_end = path_start + path_length
        if path_length == 1 and stream[path_start] == SLASH:
            return starts, crcs, pos
        if path_length < 0:
            raise SnapshotFileError(f"a null node path at offset {pos}; the file is corrupt")
        (data_length,) = unpack_int(stream, path_end)
        add_start(pos)
        data_start = path_end + 4
        if data_length > 0:
            add_crc(crc32(stream[data_start:data_start + data_length], crc32(stream[path_start:path_end])))
            pos = data_start + data_length + tail_size
        else:
            add_crc(crc32(stream[path_start:path_end]))
            pos = data_start + tail_size


def _read_nodes(stream: Stream, pos: int, acl_map: dict[int, tuple[Acl, ...]], name: str) -> tuple[NodeTable, int]:
    """The node list, pre-order, up to the terminating path "/", as a NodeTable; and the offset after it: one
    loop over the records finds their offsets, vector operations make the columns."""
    try:
        starts_found, crcs_found, end = _node_offsets(stream, pos)
    except SnapshotFileError as exc:
        raise SnapshotFileError(f"{name}: {exc}") from None
    if not starts_found:
        raise SnapshotFileError(f"{name}: the snapshot holds no root znode; the file is corrupt")
    raw = np.frombuffer(stream, dtype=np.uint8)
    starts = np.frombuffer(starts_found, dtype=np.int64)
    path_start = starts + 4
    path_length = _be_int32(raw, starts)
    data_length = _be_int32(raw, path_start + path_length)
    data_start = path_start + path_length + 4
    tails = data_start + np.maximum(data_length, 0)
    if int(tails[-1]) + NODE_TAIL.itemsize > end:
        raise JuteEOFError(f"the last node's stat runs past offset {end}")
    buffer = pa.py_buffer(stream)
    stats, acl_refs, crcs = _stat_columns(raw, tails, np.frombuffer(crcs_found, dtype=np.uint32))
    paths, parent = _path_column(raw, buffer, path_start, path_length, name)
    data = _data_column(raw, buffer, data_start, data_length)
    _check_acl_refs(acl_refs, acl_map, name, lambda row: _path_at(raw, path_start[row], path_length[row]))
    hashed = ~pc.starts_with(paths, ZOOKEEPER_SUBTREE).to_numpy(zero_copy_only=False)
    digest = int(crcs[hashed].sum(dtype=np.uint64)) & 0xFFFFFFFFFFFFFFFF
    num_children = np.bincount(parent[1:], minlength=len(starts)).astype(np.int32)
    table = NodeTable(paths=paths, data=data, acl_refs=acl_refs, stats=stats, parent=parent,
                      num_children=num_children, acl_map=acl_map, digest=digest)
    return table, end + 5  # after the terminating path "/"


def _stat_columns(raw: np.ndarray, tails: np.ndarray,
                  crcs: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The stat columns, the ACL refs and each node's digest from the records' tails (aclRef, StatPersisted)."""
    tail = np.lib.stride_tricks.sliding_window_view(raw, NODE_TAIL.itemsize)[tails]
    fields = tail.view(NODE_TAIL).ravel()
    stats = {column: fields[column].astype(np.int64 if NODE_TAIL[column].itemsize == 8 else np.int32)
             for column in STAT_COLUMNS}
    return stats, fields["acl_ref"].astype(np.int64), crc32_of_stats(crcs, tail.view("<u2"))


def _data_column(raw: np.ndarray, buffer: pa.Buffer, data_start: np.ndarray, data_length: np.ndarray) -> pa.Array:
    views = _views(heads(raw, data_start), data_start, np.maximum(data_length, 0))
    return view_array(views, buffer, valid=data_length >= 0).cast(pa.binary())


def _path_column(raw: np.ndarray, buffer: pa.Buffer, path_start: np.ndarray, path_length: np.ndarray,
                 name: str) -> tuple[pa.StringArray, np.ndarray]:
    """The paths (the root, "" in the file, as "/") and each row's parent row."""
    path_head = heads(raw, path_start)
    path_views = _views(path_head, path_start, path_length)
    as_written = view_array(path_views, buffer).cast(pa.binary())
    depths = pc.count_substring(as_written, "/").to_numpy().astype(np.int32)
    parent = _parents(raw, depths, path_start, path_length, path_head, path_views, buffer, name)
    return pa.concat_arrays([pa.array(["/"]), as_written.slice(1).cast(pa.string())]), parent


def _path_at(raw: np.ndarray, start: int, length: int) -> str:
    return bytes(raw[start:start + length]).decode("utf-8", "replace") or "/"


def _be_int32(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The big-endian int32 at each of ``offsets``."""
    return np.lib.stride_tricks.sliding_window_view(raw, 4)[offsets].view(">i4").ravel().astype(np.int64)


def _check_acl_refs(refs: np.ndarray, acl_map: dict[int, tuple[Acl, ...]], name: str,
                    path_of: Callable[[int], str]) -> None:
    known = np.isin(refs, np.array([OPEN_ACL_UNSAFE_REF, *acl_map], dtype=np.int64))
    if not known.all():
        row = int(np.argmin(known))
        raise SnapshotFileError(f"{name}: node {path_of(row)!r} refers to ACL {int(refs[row])}, missing from the ACL "
                                "map; the file is corrupt")


def _parents(raw: np.ndarray, depths: np.ndarray, path_start: np.ndarray, path_length: np.ndarray,
             path_head: np.ndarray, path_views: np.ndarray, buffer: pa.Buffer, name: str) -> np.ndarray:
    """Each row's parent row: in pre-order, the last row before it one level up; checked to be its path's
    parent (the path starts with the parent's path and a "/"). Raises SnapshotFileError where it is not.

    ``path_head`` and ``path_views`` are the paths' first bytes and binary views (see _views), root "" as in the
    file."""
    rows = len(depths)
    parent = np.full(rows, -1, dtype=np.int64)
    bad = depths == 0  # a path without "/": only the root's "" (row 0) has none
    bad[0] = path_length[0] != 0
    keys = depths.astype(np.int16) if int(depths.max()) < 1 << 15 else depths  # 16 bits: a radix sort
    by_depth = np.argsort(keys, kind="stable")  # each depth's rows in file order
    levels, level_starts = np.unique(depths[by_depth], return_index=True)
    level_rows = dict(zip(levels.tolist(), np.split(by_depth, level_starts[1:]), strict=True))
    for depth, here in level_rows.items():
        above = level_rows.get(depth - 1)
        if depth == 0:
            continue
        if above is None:
            bad[here] = True
            continue
        before = np.searchsorted(above, here) - 1
        parent[here] = above[np.maximum(before, 0)]
        bad[here[before < 0]] = True
    parent_row = np.maximum(parent, 0)
    parent_length = path_length[parent_row]
    parent_length[0] = 0
    bad[1:] |= parent_length[1:] >= path_length[1:]  # a path is longer than its parent's and a "/"
    parent_length = np.minimum(parent_length, path_length)  # the views below stay inside each path
    no_slash = raw[path_start + parent_length] != SLASH  # after the parent's path
    no_slash[0] = False
    bad |= no_slash
    prefix = view_array(_views(path_head, path_start, parent_length), buffer)
    parent_views = path_views[parent_row]
    parent_views[:, 0] = parent_length
    parent_path = view_array(parent_views, buffer)
    bad |= ~pc.equal(prefix, parent_path).to_numpy(zero_copy_only=False)
    if bad.any():
        row = int(np.argmax(bad))
        raise SnapshotFileError(f"{name}: node {_path_at(raw, path_start[row], path_length[row])!r} comes before its "
                                "parent; the file is corrupt")
    return parent


def _views(head: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    if len(starts) and int(lengths.max()) >= VIEW_BUFFER_SPAN:
        raise SnapshotFileError(f"a value of {int(lengths.max())} bytes; the file is corrupt")
    return views(head, starts, lengths)


def _check_seal(reader: JuteReader, stream: Stream, name: str, what: str, summed: tuple[int, int]) -> tuple[int, int]:
    """The seal after ``what``: the Adler32 of every byte before it, then the string "/". ``summed`` is
    (offset, Adler32 of the bytes before it) from the previous seal (0, 1 at first); returns the new one."""
    start, checksum = summed
    computed = zlib.adler32(memoryview(stream)[start:reader.pos], checksum)
    summed = reader.pos, computed
    stored = reader.long()
    if reader.string() != "/" or stored != computed:
        raise SnapshotFileError(f"{name}: the seal after {what} does not match (stored {stored:#x}, computed "
                                f"{computed:#x}); the file is corrupt: use an older snapshot")
    return summed
