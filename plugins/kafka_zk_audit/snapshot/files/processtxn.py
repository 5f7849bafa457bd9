"""Apply logged txns to a snapshot's tree as ZooKeeper's DataTree.processTxn does, keeping the tree digest and
checking it against the snapshot's trailer and every logged txn digest; OfflineFilesError is the files source's
refusal of files that cannot give a trustworthy tree.

The snapshot is fuzzy: txns up to its digest trailer's zxid Z1 may fail with NONODE/NODEEXISTS (they are partly in
it); after Z1 every txn must apply cleanly and the tree must meet every logged digest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa

from kafka_zk_audit.snapshot.files.datatree import Node, NodeMap
from kafka_zk_audit.snapshot.files.digest import node_digest, tree_digest
from kafka_zk_audit.snapshot.files.snapdecode import SnapshotFile
from kafka_zk_audit.snapshot.files.txndecode import CREATE_OPS, Txn, TxnOp

CONTAINER_OWNER = -(1 << 63)  # EphemeralType.CONTAINER_EPHEMERAL_OWNER (Long.MIN_VALUE)
TTL_OWNER_BASE = 0xFF << 56
DIGEST_VERSION = 2
MASK64 = (1 << 64) - 1
NONODE, NODEEXISTS = "NONODE", "NODEEXISTS"
REPLAY_CHUNK = 50_000  # txns decoded ahead of applying them, so that their znodes are found in one lookup


class OfflineFilesError(ValueError):
    """The files cannot give a trustworthy tree: no usable snapshot, a gap, a digest mismatch, a corrupt file."""


class _NodeError(Exception):
    """NONODE / NODEEXISTS while applying one op."""

    def __init__(self, code: str, path: str) -> None:
        super().__init__(f"{code} {path}")
        self.code, self.path = code, path


class Replayer:
    """Applies txns to the snapshot's tree as DataTree.processTxn does, keeping the tree digest."""

    def __init__(self, snapshot: SnapshotFile,
                 digest_logged_at_snapshot: Callable[[], int | None] = lambda: None) -> None:
        self.snapshot = snapshot
        # the digest the logs hold for the txn of the snapshot's own zxid (read when needed): it vouches for the
        # trailer when a txn in flight makes the tree differ from it (_check_snapshot_digest)
        self.digest_logged_at_snapshot = digest_logged_at_snapshot
        self.trailer_deferred = False
        self.nodes = snapshot.nodes
        self.zxid = snapshot.zxid
        self.time_ms: int | None = None
        self.fuzzy_end = snapshot.digest_zxid if snapshot.digest_zxid is not None else snapshot.zxid
        self.digest = tree_digest(self.nodes)
        self.snapshot_digest_pending = (
            snapshot.digest is not None and snapshot.digest_version == DIGEST_VERSION
            and snapshot.digest_zxid is not None and snapshot.digest_zxid >= snapshot.zxid
            and not (snapshot.digest_zxid == 0 and snapshot.digest == 0)  # the empty initial snapshot
        )
        self.digest_verified: bool | None = None
        self.applied = 0
        self.owned: dict[int, set[str]] = {}
        for path, owner in _ephemerals(self.nodes):
            self.owned.setdefault(owner, set()).add(path)
        self._check_snapshot_digest()

    # ---------------------------------------------------------------- driving

    def run(self, txns: Iterator[Txn]) -> None:
        while chunk := list(islice(txns, REPLAY_CHUNK)):
            self.nodes.prefetch(self._paths_of(chunk))
            self._run(chunk)

    def _paths_of(self, txns: list[Txn]) -> Iterator[str]:
        """Every path applying the txns looks up: the changed znodes, the parents of those created or deleted,
        a closed session's znodes."""
        for txn in txns:
            if txn.failed:
                continue
            for op in txn.ops:
                name = op.op
                if name in ("setData", "reconfig", "setACL"):
                    yield _key(op.path or "")
                    continue
                if name in CREATE_OPS or name in ("delete", "deleteContainer"):
                    paths: Iterable[str] = (op.path or "",)
                elif name == "closeSession":
                    paths = [*(op.paths or ()), *self.owned.get(txn.session, ())]
                else:
                    continue
                for path in paths:
                    yield _key(path)
                    yield path[:path.rfind("/")] or "/"

    def _run(self, txns: list[Txn]) -> None:
        for txn in txns:
            self.applied += 1
            zxid = txn.zxid
            if zxid != self.zxid + 1:
                self._check_continuity(zxid)
            fuzzy = zxid <= self.fuzzy_end
            self.apply(txn, fuzzy)
            self.zxid, self.time_ms = zxid, txn.time_ms
            if self.trailer_deferred and zxid == self.fuzzy_end:
                self._check_after_txn_in_flight(txn)
            elif self.snapshot_digest_pending:
                self._check_snapshot_digest()
            if txn.digest is not None and not self.snapshot_digest_pending and txn.zxid > self.fuzzy_end:
                if txn.digest != self.digest:
                    raise OfflineFilesError(
                        f"tree digest mismatch after txn {txn.zxid:#x} (logged {txn.digest:#x}, rebuilt "
                        f"{self.digest:#x}): the snapshot and logs disagree — a file is corrupt or from another "
                        "server; try another server's files"
                    )
                self.digest_verified = True

    def finish(self, target: int | None, *, logs_go_past_target: bool = False) -> None:
        if self.zxid < self.fuzzy_end:
            raise OfflineFilesError(
                f"the logs end at zxid {self.zxid:#x}, before {self.fuzzy_end:#x} where snapshot "
                f"{Path(self.snapshot.path).name} becomes consistent; copy the txn logs written after it"
            )
        if target is not None and self.zxid < target and not logs_go_past_target:  # else: target in an epoch gap
            raise OfflineFilesError(f"the logs end at zxid {self.zxid:#x}, before the requested zxid {target:#x}; "
                                    "copy the later txn logs (or ask for an earlier zxid)")
        if self.snapshot.digest is not None and self.digest_verified is None:
            self.digest_verified = not self.snapshot_digest_pending and self.snapshot.digest_zxid != 0

    def _check_continuity(self, zxid: int) -> None:
        previous = self.zxid
        if zxid == previous + 1 or (zxid >> 32 > previous >> 32 and zxid & 0xFFFFFFFF == 1):
            return
        raise OfflineFilesError(f"txn {zxid:#x} follows {previous:#x}: txns are missing (a gap in the logs, or a "
                                "follower's logs after a snapshot sync); use the leader's files or add the missing log")

    def _check_snapshot_digest(self) -> None:
        if not self.snapshot_digest_pending or self.zxid != self.snapshot.digest_zxid:
            return
        if (self.digest != self.snapshot.digest and self.applied == 0
                and self.snapshot.digest_zxid == self.snapshot.zxid
                and self.digest_logged_at_snapshot() == self.snapshot.digest):
            # ZooKeeper changes the tree before it moves lastProcessedZxid and the digest: a snapshot written while
            # a txn was being applied (a closeSession deleting its ephemerals one by one) can hold part of it under
            # a trailer that still names the previous zxid, with the digest the log confirms for that zxid. The
            # txn in flight is then replayed as fuzzy, and the tree must meet the digest logged with it.
            self.fuzzy_end = self.zxid + 1
            self.trailer_deferred = True
            return
        self.snapshot_digest_pending = False
        if self.digest != self.snapshot.digest:
            raise OfflineFilesError(
                f"tree digest mismatch at zxid {self.zxid:#x} (snapshot {Path(self.snapshot.path).name} says "
                f"{self.snapshot.digest:#x}, rebuilt {self.digest:#x}): the snapshot or the logs are corrupt; "
                "use an older snapshot or another server's files"
            )
        self.digest_verified = True

    def _check_after_txn_in_flight(self, txn: Txn) -> None:
        """The deferred snapshot check: after the txn that was in flight, the tree meets its logged digest."""
        self.trailer_deferred = self.snapshot_digest_pending = False
        if txn.digest is None:
            return  # a log without digests cannot confirm it: the tree stays unverified
        if txn.digest != self.digest:
            raise OfflineFilesError(
                f"tree digest mismatch at zxid {self.snapshot.zxid:#x} (snapshot {Path(self.snapshot.path).name}) "
                f"and after the next txn {txn.zxid:#x} (logged {txn.digest:#x}, rebuilt {self.digest:#x}): the "
                "snapshot or the logs are corrupt; use an older snapshot or another server's files"
            )
        self.digest_verified = True

    # ---------------------------------------------------------------- applying

    def apply(self, txn: Txn, fuzzy: bool) -> None:
        if txn.failed:
            return
        for op in txn.ops:
            try:
                self._apply_op(txn, op)
            except _NodeError as exc:
                if txn.type == "create" and exc.code == NODEEXISTS and op.path is not None:
                    self._bump_parent_after_exists(op, txn.zxid)
                if not fuzzy:
                    raise OfflineFilesError(
                        f"txn {txn.zxid:#x} ({txn.type} {op.op} {exc.path}) fails with {exc.code} outside the "
                        "snapshot's fuzzy window: the snapshot and logs do not fit together (a gap or corruption)"
                    ) from None

    def _apply_op(self, txn: Txn, op: TxnOp) -> None:
        name = op.op
        if name in CREATE_OPS:
            owner = 0
            if name == "createContainer":
                owner = CONTAINER_OWNER
            elif name == "createTTL":
                owner = ((TTL_OWNER_BASE | (op.ttl or 0)) ^ (1 << 63)) - (1 << 63)
            elif op.ephemeral:
                owner = txn.session
            self._create(op, owner, txn.zxid, txn.time_ms)
        elif name in ("delete", "deleteContainer"):
            self._delete(op.path or "", txn.zxid)
        elif name in ("setData", "reconfig"):
            self._set_data(op, txn.zxid, txn.time_ms)
        elif name == "setACL":
            node = self._existing(op.path)
            self._change(op.path, node, acl=op.acl or (), aversion=op.version)
        elif name == "closeSession":
            self._close_session(txn.session, op.paths, txn.zxid)
        # check, createSession, error: no change to the tree

    def _existing(self, path: str | None) -> Node:
        node = self.nodes.get(_key(path or ""))
        if node is None:
            raise _NodeError(NONODE, path or "")
        return node

    def _set_data(self, op: TxnOp, zxid: int, time_ms: int) -> None:
        """setData: new data, mtime, mzxid and version (the most frequent txn: no generic _change)."""
        key = _key(op.path or "")
        node = self.nodes.get(key)
        if node is None:
            raise _NodeError(NONODE, op.path or "")
        digest = self.digest - node_digest(key, node)
        data = op.data
        node.data, node.data_null = data or b"", data is None
        node.mtime, node.mzxid, node.version = time_ms, zxid, op.version  # type: ignore[assignment]
        self.digest = (digest + node_digest(key, node)) & MASK64

    def _change(self, path: str | None, node: Node, **changes: object) -> None:
        """Change a node's fields, keeping the tree digest (the node's old digest out, its new one in)."""
        key = _key(path or "")
        self.digest -= node_digest(key, node)
        if "data" in changes:
            data = changes.pop("data")
            node.data = data or b""  # type: ignore[assignment]
            node.data_null = data is None
        for attr, value in changes.items():
            setattr(node, attr, value)
        self.digest = (self.digest + node_digest(key, node)) & MASK64

    def _create(self, op: TxnOp, owner: int, zxid: int, time_ms: int) -> None:
        path = op.path or ""
        cut = path.rfind("/")
        parent_key, child = path[:cut] or "/", path[cut + 1:]
        parent = self.nodes.get(parent_key)
        if parent is None:
            raise _NodeError(NONODE, path)
        if child in parent.children:
            raise _NodeError(NODEEXISTS, path)
        cversion = parent.cversion + 1 if op.parent_cversion in (None, -1) else op.parent_cversion
        self.digest -= node_digest(parent_key, parent)
        if cversion > parent.cversion:
            parent.cversion, parent.pzxid = cversion, zxid
        parent.children.add(child)
        self.digest += node_digest(parent_key, parent)
        node = Node(op.data or b"", op.acl or (), zxid, zxid, zxid, time_ms, time_ms, 0, 0, 0, owner, set(),
                    op.data is None)
        self.nodes[path] = node
        self.digest = (self.digest + node_digest(path, node)) & MASK64
        if owner and owner != CONTAINER_OWNER:
            self.owned.setdefault(owner, set()).add(path)

    def _bump_parent_after_exists(self, op: TxnOp, zxid: int) -> None:
        """DataTree.processTxn: a create that hits NODEEXISTS still sets the parent's cversion and pzxid."""
        path = op.path or ""
        parent_key = path[:path.rfind("/")] or "/"
        parent = self.nodes.get(parent_key)
        if parent is None:
            return
        cversion = parent.cversion + 1 if op.parent_cversion in (None, -1) else op.parent_cversion
        if cversion > parent.cversion:
            self._change(parent_key, parent, cversion=cversion, pzxid=zxid)

    def _delete(self, path: str, zxid: int) -> None:
        cut = path.rfind("/")
        parent_key, child = path[:cut] or "/", path[cut + 1:]
        parent = self.nodes.get(parent_key)
        if parent is None:
            raise _NodeError(NONODE, path)
        self.digest -= node_digest(parent_key, parent)
        parent.children.discard(child)
        if zxid > parent.pzxid:
            parent.pzxid = zxid
        self.digest += node_digest(parent_key, parent)
        node = self.nodes.pop(path, None)
        if node is None:
            self.digest &= MASK64
            raise _NodeError(NONODE, path)
        self.digest = (self.digest - node_digest(path, node)) & MASK64
        if node.ephemeral_owner in self.owned:
            self.owned[node.ephemeral_owner].discard(path)

    def _close_session(self, session: int, paths: tuple[str, ...] | None, zxid: int) -> None:
        """Delete the txn's paths2Delete (3.6+), then whatever else the session still owns (ZooKeeper ignores
        NONODE here)."""
        owned = self.owned.pop(session, set())
        for path in [*(paths or ()), *sorted(owned - set(paths or ()))]:
            try:
                self._delete(path, zxid)
            except _NodeError:
                continue


def _key(path: str) -> str:
    return "/" if path in ("", "/") else path


def _ephemerals(nodes: NodeMap) -> Iterator[tuple[str, int]]:
    """(path, owner) of every znode of the snapshot with an ephemeral owner other than the container mark."""
    table = nodes.table
    owners = table.stats["ephemeral_owner"]
    rows = np.nonzero((owners != 0) & (owners != CONTAINER_OWNER))[0]
    yield from zip(table.paths.take(pa.array(rows)).to_pylist(), owners[rows].tolist(), strict=True)
