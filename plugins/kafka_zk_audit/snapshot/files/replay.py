"""Rebuild ZooKeeper's DataTree from its own files: the newest usable snapshot plus the logged txns after it.

Follows DataTree.processTxn: the snapshot is fuzzy (taken while txns were applied), so replay starts after its
file-name zxid Z0 and the tree is consistent from the digest trailer's zxid Z1 on; NONODE/NODEEXISTS are expected
inside (Z0, Z1] only. The tree digest (3.6+) is kept as ZooKeeper keeps it and compared with the snapshot's at
Z1 and with every logged txn digest after it, so a rebuilt tree is either ZooKeeper's own or refused.

Choosing the files is here (the newest snapshot consistent by the target, the logs after it, their txns in zxid
order); applying the txns and checking the digest is ``processtxn``.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kafka_zk_audit.snapshot.files.datatree import NodeMap
from kafka_zk_audit.snapshot.files.processtxn import OfflineFilesError, Replayer
from kafka_zk_audit.snapshot.files.snapdecode import SnapshotFileError
from kafka_zk_audit.snapshot.files.snapfile import read_snapshot, snapshot_files, snapshot_zxid
from kafka_zk_audit.snapshot.files.txndecode import Txn
from kafka_zk_audit.snapshot.files.txnlog import TxnLogError, iter_txns, log_files, log_start_zxid

__all__ = ["RebuiltTree", "cycle_collector_paused", "rebuild_tree"]

log = logging.getLogger(__name__)


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
    replayer, skipped = _newest_usable_replayer(snapshots, logs, target, say)
    snapshot = replayer.snapshot
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


def _newest_usable_replayer(
    snapshots: list[Path], logs: list[Path], target: int | None, say: Callable[[str], None]
) -> tuple[Replayer, list[str]]:
    """A replayer on the newest snapshot that starts at or before ``target``, is consistent by it, and parses whole.

    A snapshot is consistent from its trailer's zxid on, or from the next one when a txn was being applied as it
    was written (the replayer finds that): a target before that comes from an earlier snapshot and the logs.
    """
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
        replayer = Replayer(snapshot, lambda zxid=snapshot.zxid: _logged_digest(logs, zxid))
        if target is not None and replayer.fuzzy_end > target:
            skipped.append(f"{path.name}: holds part of txn {replayer.fuzzy_end:#x}, after the target")
            continue
        return replayer, skipped
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

