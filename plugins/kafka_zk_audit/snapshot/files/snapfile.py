"""ZooKeeper's snapshot files (``snapshot.<hex zxid>[.gz|.snappy]``): parsed whole, every seal verified.

Layout of the (decompressed) stream: FileHeader {int "ZKSN", int 2, long dbid}, sessions, the ACL map, the
nodes in pre-order ending with the path "/", an Adler32 seal (long checksum of every byte before it, then
the string "/"), from 3.6 a ZxidDigest {long zxid, int version, long digest} with its own seal, from 3.9 a
lastProcessedZxid with its own seal, then EOF. A snapshot is written in place, so a copy can be half-written:
only a file that parses to its last seal and ends there is used.

The nodes are kept as columns (:class:`NodeTable`: Arrow arrays for paths and data, numpy arrays for the stat
fields), decoded with one tight loop that only finds offsets and vector operations for the rest; a
:class:`Node` object is made only for a znode that is looked up (:class:`NodeMap`).
"""

from __future__ import annotations

import gzip
import mmap
import os
import struct
import zlib
from array import array
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_zk_audit.snapshot.files.arrow_views import VIEW_BUFFER_SPAN, heads, view_array, views
from kafka_zk_audit.snapshot.files.jute import Acl, JuteEOFError, JuteReader
from kafka_zk_audit.snapshot.files.txnlog import zxid_named_files

SNAP_MAGIC = 0x5A4B534E  # "ZKSN"
SNAP_VERSION = 2
FILE_HEADER = struct.Struct(">iiq")
STAT = struct.Struct(">qqqqiiiqq")  # StatPersisted: czxid mzxid ctime mtime version cversion aversion owner pzxid
DIGEST_FIELDS = struct.Struct(">qqqqqiiiq")  # czxid mzxid pzxid ctime mtime version cversion aversion owner
SEAL_SIZE = 8 + 4 + 1  # long Adler32, string "/"
DIGEST_TRAILER = 8 + 4 + 8 + SEAL_SIZE
LAST_ZXID_TRAILER = 8 + SEAL_SIZE
SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER_SIZE = 16
OPEN_ACL_UNSAFE_REF = -1
OPEN_ACL_UNSAFE: tuple[Acl, ...] = ((31, "world", "anyone"),)
ZOOKEEPER_SUBTREE = "/zookeeper/"  # DigestCalculator leaves the nodes below it out of the tree digest
# What follows a node's data: long aclRef, then StatPersisted (its fields as STAT), big-endian.
NODE_TAIL = np.dtype([("acl_ref", ">i8"), ("czxid", ">i8"), ("mzxid", ">i8"), ("ctime", ">i8"), ("mtime", ">i8"),
                      ("version", ">i4"), ("cversion", ">i4"), ("aversion", ">i4"), ("ephemeral_owner", ">i8"),
                      ("pzxid", ">i8")])
STAT_COLUMNS = ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeral_owner")
Stream = bytes | mmap.mmap  # a snapshot's (decompressed) bytes
SLASH = ord("/")
SCANS_BEFORE_INDEX = 8  # single paths looked up by scanning the path column before an index of every path is built
MASK32 = 0xFFFFFFFF


class SnapshotFileError(ValueError):
    """A snapshot file that is truncated, corrupt or not a snapshot; the message says which, where, what to do."""


@dataclass(slots=True)
class Node:
    """One znode as ZooKeeper's DataTree holds it (numChildren and dataLength derive from children and data).

    ``cversion`` is the stored one, which counts creates only: clients see ``2 * cversion - numChildren``.
    """

    data: bytes
    acl: tuple[Acl, ...]
    czxid: int
    mzxid: int
    pzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    children: set[str] = field(default_factory=set)
    data_null: bool = False  # the data is null, not empty (hashed differently: no bytes either way)


@dataclass(eq=False)
class NodeTable:
    """A snapshot's znodes as columns, one row per znode in the file's (pre-)order; row 0 is the root "/".

    ``parent`` is each row's parent row (−1 for the root), ``num_children`` its count of children,
    ``digest`` the sum of ZooKeeper's per-node digests (DigestCalculator) over the rows, mod 2^64.
    """

    paths: pa.StringArray  # absolute paths
    data: pa.BinaryArray  # null where the znode's data is null
    acl_refs: np.ndarray
    stats: dict[str, np.ndarray]  # STAT_COLUMNS -> int64 / int32 arrays
    parent: np.ndarray
    num_children: np.ndarray
    acl_map: dict[int, tuple[Acl, ...]]
    digest: int
    _path_list: list[str] | None = None
    _index: dict[str, int] | None = None
    _children: tuple[np.ndarray, np.ndarray] | None = None
    _child_scans: int = 0

    def __len__(self) -> int:
        return len(self.paths)

    def path_list(self) -> list[str]:
        if self._path_list is None:
            self._path_list = self.paths.to_pylist()
        return self._path_list

    def row_of(self, path: str) -> int | None:
        """The row of ``path`` (absolute; "/" for the root), or None."""
        if self._index is None:
            paths = self.path_list()
            self._index = dict(zip(paths, range(len(paths)), strict=True))
        return self._index.get(path)

    def rows_of(self, paths: Iterable[str]) -> dict[str, int]:
        """The rows of those of ``paths`` that exist, found in one vector lookup (no index of every path)."""
        wanted = pa.array(list(set(paths)), pa.string())
        if self._index is not None or not len(wanted):
            return {path: row for path in wanted.to_pylist() if (row := self.row_of(path)) is not None}
        found = pc.fill_null(pc.index_in(self.paths, value_set=wanted), -1).to_numpy()
        rows = np.nonzero(found >= 0)[0]
        names = wanted.to_pylist()
        return {names[int(found[row])]: int(row) for row in rows}

    def children_rows(self, row: int) -> np.ndarray:
        """The rows of ``row``'s children: a scan of the parent column for the first few rows asked about, then
        an index of every row's children (built once)."""
        if self._children is None:
            if self._child_scans < SCANS_BEFORE_INDEX:
                self._child_scans += 1
                return np.flatnonzero(self.parent == row)
            order = np.argsort(self.parent, kind="stable")
            starts = np.concatenate(([0], np.cumsum(np.bincount(self.parent + 1, minlength=len(self) + 1))))
            self._children = order, starts
        order, starts = self._children
        return order[starts[row + 1]:starts[row + 2]]

    def acl_of(self, ref: int) -> tuple[Acl, ...]:
        return OPEN_ACL_UNSAFE if ref == OPEN_ACL_UNSAFE_REF else self.acl_map[ref]

    def node(self, row: int) -> Node:
        """The znode of ``row`` as a Node (its own copy: changing it leaves the table alone)."""
        return self.nodes_at([row])[0][1]

    def nodes_at(self, rows: Iterable[int]) -> list[tuple[str, Node]]:
        """(path, Node) of each of ``rows``, made together (each Node its own copy)."""
        rows = np.fromiter(rows, dtype=np.int64)
        take = pa.array(rows)
        paths = self.paths.take(take).to_pylist()
        data = self.data.take(take).to_pylist()
        stats = zip(*(self.stats[name][rows].tolist() for name in STAT_COLUMNS), strict=True)
        refs = self.acl_refs[rows].tolist()
        child_counts = self.num_children[rows].tolist()
        made = []
        for row, path, value, ref, fields, child_count in zip(rows.tolist(), paths, data, refs, stats, child_counts,
                                                              strict=True):
            children = self._child_names(row, path) if child_count else set()
            made.append((path, Node(value or b"", self.acl_of(ref), *fields, children, value is None)))
        return made

    def _child_names(self, row: int, path: str) -> set[str]:
        cut = 1 if row == 0 else len(path) + 1
        return {child[cut:] for child in self.paths.take(pa.array(self.children_rows(row))).to_pylist()}

    def nodes(self, rows: np.ndarray | None = None) -> Iterator[tuple[str, Node]]:
        """(path, Node) of every row (or of ``rows``), made in bulk."""
        rows = np.arange(len(self)) if rows is None else rows
        paths = self.path_list()
        data = self.data.take(pa.array(rows)).to_pylist()
        stats = zip(*(self.stats[name][rows].tolist() for name in STAT_COLUMNS), strict=True)
        refs = self.acl_refs[rows].tolist()
        children: dict[int, set[str]] = {}
        for child, parent in zip(range(1, len(self)), self.parent[1:].tolist(), strict=True):
            children.setdefault(parent, set()).add(paths[child][1 if parent == 0 else len(paths[parent]) + 1:])
        for row, value, ref, fields in zip(rows.tolist(), data, refs, stats, strict=True):
            yield paths[row], Node(value or b"", self.acl_of(ref), *fields, children.get(row, set()), value is None)


class NodeMap(Mapping[str, Node]):
    """The tree by absolute path ("/" for the root): a NodeTable plus the znodes changed since (an overlay).

    It reads like the dict of every znode (``get``, ``[]``, ``in``, ``len``, ``items()``, ``==``); looking a path
    up makes its Node (once); ``[path] = node``, ``pop`` and ``del`` change the tree. Rows of the table that were
    looked up, changed or deleted are touched: their current state is in ``changed()``, the others are the
    ``untouched_rows()`` of ``table``.
    """

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self._nodes: dict[str, Node] = {}  # the current state of every touched path that exists
        self._touched: set[str] = set()  # paths whose state is in _nodes (present) or gone
        self._touched_rows: set[int] = set()
        self._rows: dict[str, int | None] = {}  # prefetched rows
        self._scans = 0

    def prefetch(self, paths: Iterable[str]) -> None:
        """Make the Nodes of ``paths`` together (their rows found in one vector lookup), before they are looked
        up one by one."""
        fresh = [path for path in paths if path not in self._touched and path not in self._rows]
        if not fresh:
            return
        found = self.table.rows_of(fresh)
        for path in fresh:
            if path not in found:
                self._rows[path] = None
        for (path, node), row in zip(self.table.nodes_at(found.values()), found.values(), strict=True):
            self._nodes[path] = node
            self._touched.add(path)
            self._touched_rows.add(row)

    def _row(self, path: str) -> int | None:
        """The table row of ``path``: prefetched, else found by a vector scan for the first few paths, then
        from an index of every path (built once)."""
        if path in self._rows:
            return self._rows[path]
        if self.table._index is None and self._scans < SCANS_BEFORE_INDEX:
            self._scans += 1
            row = self._rows[path] = self.table.rows_of((path,)).get(path)
            return row
        return self.table.row_of(path)

    def get(self, path: str, default: Node | None = None) -> Node | None:  # type: ignore[override]
        node = self._nodes.get(path)
        if node is not None:
            return node
        if path in self._touched:
            return default
        row = self._row(path)
        if row is None:
            return default
        node = self.table.node(row)
        self._nodes[path] = node
        self._touched.add(path)
        self._touched_rows.add(row)
        return node

    def __getitem__(self, path: str) -> Node:
        node = self.get(path)
        if node is None:
            raise KeyError(path)
        return node

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.get(path) is not None

    def __setitem__(self, path: str, node: Node) -> None:
        if path not in self._touched:
            row = self._row(path)
            if row is not None:
                self._touched_rows.add(row)
        self._nodes[path] = node
        self._touched.add(path)

    def pop(self, path: str, default: Node | None = None) -> Node | None:
        node = self.get(path)
        if node is None:
            return default
        del self._nodes[path]
        return node

    def __delitem__(self, path: str) -> None:
        if self.pop(path) is None:
            raise KeyError(path)

    def pristine(self) -> bool:
        """Is the tree still the table's (nothing changed, deleted or even looked up)?"""
        return not self._touched

    def untouched_rows(self) -> np.ndarray:
        """A mask of the table rows whose znode is as the table has it."""
        mask = np.ones(len(self.table), dtype=bool)
        if self._touched_rows:
            mask[np.fromiter(self._touched_rows, dtype=np.int64)] = False
        return mask

    def changed(self) -> dict[str, Node]:
        """The touched znodes that exist, by path (the rest of the tree is the untouched table rows)."""
        return self._nodes

    def __len__(self) -> int:
        return len(self.table) - len(self._touched_rows) + len(self._nodes)

    def __iter__(self) -> Iterator[str]:
        paths = self.table.path_list()
        for row in np.nonzero(self.untouched_rows())[0].tolist():
            yield paths[row]
        yield from list(self._nodes)

    def items(self) -> ItemsView[str, Node]:
        return _Items(self)

    def values(self) -> ValuesView[Node]:
        return _Values(self)

    def _items(self) -> Iterator[tuple[str, Node]]:
        """Every (path, Node), the untouched ones made in bulk."""
        yield from self.table.nodes(np.nonzero(self.untouched_rows())[0])
        yield from list(self._nodes.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return len(self) == len(other) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]


class _Items(ItemsView[str, Node]):
    _mapping: NodeMap

    def __iter__(self) -> Iterator[tuple[str, Node]]:
        return self._mapping._items()


class _Values(ValuesView[Node]):
    _mapping: NodeMap

    def __iter__(self) -> Iterator[Node]:
        return (node for _, node in self._mapping._items())


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


def snapshot_files(directory: str | Path) -> list[Path]:
    """The ``snapshot.<hex>[.gz|.snappy]`` files in ``directory`` (or its ``version-2``), ordered by zxid."""
    return zxid_named_files(directory, "snapshot", ("gz", "snappy"))


def snapshot_zxid(path: str | Path) -> int:
    """The zxid in a snapshot file's name."""
    return int(Path(path).name.split(".")[1], 16)


def node_digest(path: str, node: Node) -> int:
    """ZooKeeper's per-node digest (DigestCalculator v2): CRC32 of path, data and nine stat fields; 0 below
    /zookeeper/; the root hashes as ""."""
    if path.startswith(ZOOKEEPER_SUBTREE):
        return 0
    crc = zlib.crc32(b"" if path == "/" else path.encode("utf-8", "surrogateescape"))
    if node.data:
        crc = zlib.crc32(node.data, crc)
    return zlib.crc32(
        DIGEST_FIELDS.pack(node.czxid, node.mzxid, node.pzxid, node.ctime, node.mtime, node.version,
                           node.cversion, node.aversion, node.ephemeral_owner),
        crc,
    )


def tree_digest(nodes: Mapping[str, Node]) -> int:
    """The tree digest: the sum of every node's digest, mod 2^64 (AdHash)."""
    if isinstance(nodes, NodeMap) and nodes.pristine():
        return nodes.table.digest
    return sum(node_digest(path, node) for path, node in nodes.items()) & 0xFFFFFFFFFFFFFFFF


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
        return _parse(stream, name, snapshot_zxid(path), compression)
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


def _parse(stream: Stream, name: str, zxid: int, compression: str) -> SnapshotFile:
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
    return stats, fields["acl_ref"].astype(np.int64), _crc32_of_stats(crcs, tail.view("<u2"))


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


def _crc32_of_stats(crcs: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Each node's digest: its CRC32 so far (path, data) continued over its nine stat fields in digest order
    (czxid mzxid pzxid ctime mtime version cversion aversion owner) — zlib.crc32(fields, crc), vectorized.

    ``words`` is each node's tail (aclRef, StatPersisted) as little-endian 16-bit words. CRC32 is linear over
    GF(2): for a message m of fixed length, crc32(m, c) = shift(~c) ^ H(m) ^ 0xFFFFFFFF, H the XOR of one table
    entry per 16-bit word of m and shift the XOR of one per 16-bit half of ~c.
    """
    shift_low, shift_high, word_tables = _crc_tables(len(DIGEST_WORDS) * 2)
    inverted = ~crcs
    result = shift_low[inverted & 0xFFFF] ^ shift_high[inverted >> 16]
    for table, column in zip(word_tables, DIGEST_WORDS, strict=True):
        result ^= table[words[:, column]]
    return ~result


# The 16-bit words of a node's tail in digest order: czxid mzxid (tail bytes 8-24), pzxid (60-68), ctime mtime
# version cversion aversion owner (24-60).
DIGEST_WORDS = (*range(4, 12), *range(30, 34), *range(12, 30))


@cache
def _crc_tables(length: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """For messages of ``length`` bytes: the tables of shift (by low and high 16 bits of ~c) and of H by
    2-byte position, each indexed by the little-endian 16-bit value."""
    def h_table(position: int) -> np.ndarray:
        message = bytearray(length)
        table = np.empty(256, dtype=np.uint32)
        for value in range(256):
            message[position] = value
            table[value] = ~zlib.crc32(message, MASK32) & MASK32
        return table

    def shift_table(byte: int) -> np.ndarray:
        zeros = bytes(length)
        return np.array([~zlib.crc32(zeros, ~(value << (8 * byte)) & MASK32) & MASK32 for value in range(256)],
                        dtype=np.uint32)

    def pair(low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return (high[:, None] ^ low[None, :]).ravel()  # index: high byte * 256 + low byte

    shift_low = pair(shift_table(0), shift_table(1))
    shift_high = pair(shift_table(2), shift_table(3))
    positions = [pair(h_table(2 * word), h_table(2 * word + 1)) for word in range(length // 2)]
    return shift_low, shift_high, positions


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
