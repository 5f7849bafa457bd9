"""The ZooKeeper side of a migration diff: a cluster's znodes (relative to its chroot) with what the diff reads.

Two sources give the same ``ZkTree``: ZooKeeper's own files (``snapshot.files.replay.rebuild_tree``) and a stored
snapshot table (``migration.paired.snapshot_tree``; a live ensemble is walked by the snapshot stage's walker into
one). Secrets are fingerprinted as the snapshot does (``snapshot.secrets.Fingerprinter``) before the tree is handed
on, so the diff compares them by fingerprint and never holds one in clear text; a snapshot table is fingerprinted
already.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka_zk_audit.snapshot.secrets import Fingerprinter

ZkTree = Mapping[str, "ZkNode"]
_CHILDREN: dict[int, tuple[ZkTree, int, dict[str, list[str]]]] = {}


@dataclass(frozen=True)
class ZkNode:
    """One znode: its data (None for a null), stat version, last-modified zxid and time (ms)."""

    data: bytes | None
    version: int = 0
    mzxid: int = 0
    mtime: int = 0


def children(tree: ZkTree, parent: str) -> Iterator[str]:
    """The names of ``parent``'s children in the tree (sorted); a path implies its parents."""
    cached = _CHILDREN.get(id(tree))
    if cached is None or cached[0] is not tree or cached[1] != len(tree) or len(_CHILDREN) > 8:
        _CHILDREN.clear()
        index: dict[str, set[str]] = {}
        for path in tree:
            while path not in ("", "/"):
                head, _, name = path.rpartition("/")
                index.setdefault(head or "/", set()).add(name)
                path = head
        cached = _CHILDREN[id(tree)] = (tree, len(tree), {key: sorted(names) for key, names in index.items()})
    yield from cached[2].get(parent.rstrip("/") or "/", [])


def _scrubbed(path: str, node: ZkNode, fingerprinter: Fingerprinter | None) -> ZkNode:
    if fingerprinter is None:
        return node
    data, _ = fingerprinter.scrub(path, node.data)
    return ZkNode(data, node.version, node.mzxid, node.mtime)


def tree_from_files(data_dir: str | Path, chroot: str = "/", log_dir: str | Path | None = None,
                    fingerprinter: Fingerprinter | None = None) -> dict[str, ZkNode]:
    """The newest tree ZooKeeper's files at ``data_dir`` hold, under ``chroot``, secrets fingerprinted."""
    from kafka_zk_audit.snapshot.files.replay import rebuild_tree

    rebuilt = rebuild_tree(data_dir, log_dir)
    root = "/" + chroot.strip("/") if chroot.strip("/") else ""
    tree: dict[str, ZkNode] = {}
    for path, node in rebuilt.nodes.items():
        if root and path != root and not path.startswith(root + "/"):
            continue
        relative = path[len(root):] or "/"
        data = None if node.data_null else bytes(node.data)
        tree[relative] = _scrubbed(relative, ZkNode(data, node.version, node.mzxid, node.mtime), fingerprinter)
    return tree


def data_of(tree: ZkTree, path: str) -> bytes | None:
    """The data of ``path``, None when it is null or the znode is absent (a path implied by a child only)."""
    node = tree.get(path)
    return None if node is None else node.data
