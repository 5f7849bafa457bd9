"""A snapshot's DataTree: its znodes as columns (:class:`NodeTable`), the tree by path over them (:class:`NodeMap`).

The nodes are kept as columns (Arrow arrays for paths and data, numpy arrays for the stat fields), decoded by
``snapdecode``; a :class:`Node` object is made only for a znode that is looked up, and the znodes a replay changes
sit in the NodeMap's overlay.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_zk_audit.snapshot.files.jute import Acl

OPEN_ACL_UNSAFE_REF = -1
OPEN_ACL_UNSAFE: tuple[Acl, ...] = ((31, "world", "anyone"),)
STAT_COLUMNS = ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeral_owner")
SCANS_BEFORE_INDEX = 8  # single paths looked up by scanning the path column before an index of every path is built


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

