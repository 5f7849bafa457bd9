"""Rebuild ZooKeeper's DataTree from its own files: the newest usable snapshot plus the logged txns after it.

Follows DataTree.processTxn: the snapshot is fuzzy (taken while txns were applied), so replay starts after its
file-name zxid Z0 and the tree is consistent from the digest trailer's zxid Z1 on; NONODE/NODEEXISTS are expected
inside (Z0, Z1] only. The tree digest (3.6+) is kept as ZooKeeper keeps it and compared with the snapshot's at
Z1 and with every logged txn digest after it, so a rebuilt tree is either ZooKeeper's own or refused.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa

from kafka_zk_audit.snapshot.files.snapfile import (
    Node,
    NodeMap,
    SnapshotFile,
    SnapshotFileError,
    node_digest,
    read_snapshot,
    snapshot_files,
    snapshot_zxid,
    tree_digest,
)
from kafka_zk_audit.snapshot.files.txnlog import (
    CREATE_OPS,
    Txn,
    TxnLogError,
    TxnOp,
    iter_txns,
    log_files,
    log_start_zxid,
)

__all__ = ["Node", "OfflineFilesError", "RebuiltTree", "cycle_collector_paused", "rebuild_tree"]

log = logging.getLogger(__name__)

CONTAINER_OWNER = -(1 << 63)  # EphemeralType.CONTAINER_EPHEMERAL_OWNER (Long.MIN_VALUE)
TTL_OWNER_BASE = 0xFF << 56
DIGEST_VERSION = 2
MASK64 = (1 << 64) - 1
NONODE, NODEEXISTS = "NONODE", "NODEEXISTS"
REPLAY_CHUNK = 50_000  # txns decoded ahead of applying them, so that their znodes are found in one lookup


class OfflineFilesError(ValueError):
    """The files cannot give a trustworthy tree: no usable snapshot, a gap, a digest mismatch, a corrupt file."""


@dataclass
class RebuiltTree:
    """The tree at ``zxid`` as ZooKeeper would hold it after loading these files.

    ``nodes`` is a mapping of absolute path to Node: the snapshot's columns plus the znodes the replay changed
    (``nodes.table``, ``nodes.changed()``, ``nodes.untouched_rows()``); a Node is made when a path is looked up.
    """

    nodes: NodeMap
    zxid: int
    time_ms: int | None
    snapshot_file: str
    log_files: list[str]
    digest_verified: bool | None
    format: str
    skipped_snapshots: list[str] = field(default_factory=list)


class _NodeError(Exception):
    """NONODE / NODEEXISTS while applying one op."""

    def __init__(self, code: str, path: str) -> None:
        super().__init__(f"{code} {path}")
        self.code, self.path = code, path


def rebuild_tree(
    data_dir: str | Path,
    log_dir: str | Path | None = None,
    *,
    at_zxid: int | None = None,
    at_time: datetime | None = None,
    progress: Callable[[str], None] | None = None,
) -> RebuiltTree:
    """The tree at ``at_zxid``, at ``at_time`` (the last txn at or before it) or at the end of the logs."""
    with cycle_collector_paused():
        return _rebuild_tree(data_dir, log_dir, at_zxid, at_time, progress)


@contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while the tree is rebuilt: the decoded txns and the Nodes made are many
    long-lived objects that hold no cycles, and each collection would walk them all again (refcounting still
    frees everything as usual)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _rebuild_tree(
    data_dir: str | Path,
    log_dir: str | Path | None,
    at_zxid: int | None,
    at_time: datetime | None,
    progress: Callable[[str], None] | None,
) -> RebuiltTree:
    say = progress or (lambda message: log.info("%s", message))
    logs = log_files(log_dir or data_dir)
    snapshots = snapshot_files(data_dir)
    if not snapshots:
        raise OfflineFilesError(f"no snapshot.<zxid> file in {data_dir} (nor its version-2); pass ZooKeeper's "
                                "dataDir (the directory holding version-2/snapshot.*)")
    target = at_zxid
    if at_time is not None:
        target = _zxid_at_time(logs, at_time, target, snapshots)
        say(f"--at-time {at_time.isoformat()} is zxid {target:#x}")
    snapshot, skipped = _newest_usable_snapshot(snapshots, target, say)
    replayer = _Replayer(snapshot, lambda: _logged_digest(logs, snapshot.zxid))
    used_logs = [path for path in _logs_after(logs, snapshot.zxid) if target is None or log_start_zxid(path) <= target]
    say(f"snapshot {Path(snapshot.path).name}: {len(snapshot.nodes)} znodes; replaying {len(used_logs)} log file(s)")
    reached: list[int] = []
    replayer.run(_txns_in_order(used_logs, snapshot.zxid, target, reached))
    replayer.finish(target, logs_go_past_target=bool(reached))
    say(f"replayed {replayer.applied} txns to zxid {replayer.zxid:#x}; {len(replayer.nodes.changed())} znodes changed")
    return RebuiltTree(
        nodes=replayer.nodes, zxid=replayer.zxid, time_ms=replayer.time_ms, snapshot_file=snapshot.path,
        log_files=[str(path) for path in used_logs], digest_verified=replayer.digest_verified,
        format=snapshot.file_format, skipped_snapshots=skipped,
    )


def _zxid_at_time(logs: list[Path], at_time: datetime, at_zxid: int | None, snapshots: list[Path]) -> int:
    """The zxid of the last logged txn at or before ``at_time`` (and at or before ``at_zxid`` if given)."""
    if at_time.tzinfo is None:  # naive: UTC, as the CLI and DAG params read it
        at_time = at_time.replace(tzinfo=UTC)
    limit_ms = int(at_time.timestamp() * 1000)
    last = None
    first_time = None
    for txn in _txns_in_order(logs, -1, at_zxid):
        if first_time is None:
            first_time = txn.time_ms
        if txn.time_ms > limit_ms:
            break
        last = txn.zxid
    if last is None:
        if first_time is None:
            raise OfflineFilesError(f"no txn in the logs of {Path(snapshots[0]).parent}: --at-time needs the txn "
                                    "logs (pass --log-dir if they live apart from the snapshots)")
        raise OfflineFilesError(f"--at-time {at_time.isoformat()} is before the first logged txn "
                                f"({datetime.fromtimestamp(first_time / 1000).astimezone().isoformat()}); "
                                "older logs and snapshots are needed")
    return last


def _newest_usable_snapshot(
    snapshots: list[Path], target: int | None, say: Callable[[str], None]
) -> tuple[SnapshotFile, list[str]]:
    """The newest snapshot that starts at or before ``target``, ends by it, and parses whole."""
    skipped: list[str] = []
    for path in reversed(snapshots):
        if target is not None and snapshot_zxid(path) > target:
            continue
        try:
            snapshot = read_snapshot(path)
        except SnapshotFileError as exc:
            log.warning("skipping snapshot %s: %s", path.name, exc)
            say(f"warning: skipping snapshot {path.name}: {exc}")
            skipped.append(f"{path.name}: {exc}")
            continue
        if target is not None and snapshot.digest_zxid is not None and snapshot.digest_zxid > target:
            skipped.append(f"{path.name}: holds txns up to {snapshot.digest_zxid:#x}, after the target")
            continue
        return snapshot, skipped
    where = "" if target is None else f" at or before zxid {target:#x}"
    reasons = "; ".join(skipped) or "none starts early enough"
    raise OfflineFilesError(f"no usable snapshot{where} in {snapshots[0].parent} ({reasons}); copy an older or "
                            "intact snapshot from this server or another one")


def _logs_after(logs: list[Path], zxid: int) -> list[Path]:
    """The last log starting at or before ``zxid`` and every later one."""
    first = 0
    for index, path in enumerate(logs):
        if log_start_zxid(path) <= zxid:
            first = index
    return logs[first:]


def _logged_digest(logs: list[Path], zxid: int) -> int | None:
    """The tree digest the logs hold for txn ``zxid`` (None without that txn or without digests)."""
    for path in _logs_after(logs, zxid - 1):
        try:
            txn = next(iter_txns(path, after_zxid=zxid - 1), None)
        except TxnLogError:
            return None
        if txn is not None and txn.zxid == zxid:
            return txn.digest
    return None


def _txns_in_order(
    logs: list[Path], after_zxid: int, up_to: int | None, past_target: list[int] | None = None
) -> Iterator[Txn]:
    """The txns after ``after_zxid`` up to ``up_to``; a log's tail superseded by the next log is dropped.

    The first zxid after ``up_to`` (if the logs hold one) is appended to ``past_target``.
    """
    for index, path in enumerate(logs):
        next_start = log_start_zxid(logs[index + 1]) if index + 1 < len(logs) else None
        try:
            for txn in iter_txns(path, after_zxid=after_zxid):
                if next_start is not None and txn.zxid >= next_start:
                    break
                if up_to is not None and txn.zxid > up_to:
                    if past_target is not None:
                        past_target.append(txn.zxid)
                    return
                yield txn
        except TxnLogError as exc:
            raise OfflineFilesError(str(exc)) from exc


class _Replayer:
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
