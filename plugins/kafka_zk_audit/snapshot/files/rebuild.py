"""Write a snapshot table from ZooKeeper's files: the rows and manifest a live walk writes, from a rebuilt tree.

The rows are a live walk's (``contract.snapshot_table.ARROW_SCHEMA``, paths relative to the chroot, the walk's
include/exclude, secrets fingerprinted with the warehouse key), so every later stage reads them unchanged. The
manifest has the live manifest's keys plus ``source: "files"``, ``source_files``, ``zxid``, ``zxid_time``,
``digest_verified`` and ``file_format``.
"""

from __future__ import annotations

import itertools
import logging
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from kazoo.security import ACL, Id

from kafka_zk_audit.contract.secrets import SECRET_PATHS
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.snapshot_table import ARROW_SCHEMA
from kafka_zk_audit.contract.warehouse import Warehouse, validate_snapshot_id
from kafka_zk_audit.snapshot.acls import KAFKA_ACL_PATHS, format_acl
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.files.datatree import NodeTable
from kafka_zk_audit.snapshot.files.processtxn import OfflineFilesError
from kafka_zk_audit.snapshot.files.replay import RebuiltTree, cycle_collector_paused, rebuild_tree
from kafka_zk_audit.snapshot.ids import SnapshotIdTaken, under_new_id
from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder
from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key
from kafka_zk_audit.snapshot.writer import write_parquet

log = logging.getLogger(__name__)

__all__ = ["write_new_offline_snapshot", "write_offline_snapshot"]


def write_offline_snapshot(
    source_dir: str,
    warehouse: Warehouse,
    snapshot_id: str,
    *,
    log_dir: str | None = None,
    at_zxid: int | None = None,
    at_time: datetime | None = None,
    chroot: str | None = None,
    options: SnapshotOptions | None = None,
    cluster: str | None = None,
    settings: ZkSettings | None = None,
    progress: Callable[[str], None] | None = None,
    origin: str | None = None,
    decoder: PasswordDecoder | None = None,
) -> dict[str, Any]:
    """Rebuild the tree from ``source_dir`` (and ``log_dir``) and write it as snapshot ``snapshot_id``.

    ``origin`` names where the files came from when ``source_dir`` is a staging copy (a URL without credentials,
    ``<sftp conn id>:<path>``): the manifest's ``source_files.dir``, and its ensemble and identity without
    ``settings``.

    Raises OfflineFilesError (nothing written) when the files cannot give a trustworthy tree. ``settings``
    (the cluster's live connection settings) makes ``ensemble``, ``identity`` and the chroot those of the
    live runs, so history and baselines line up.
    """
    options = options or SnapshotOptions()
    validate_snapshot_id(snapshot_id)
    if settings is not None and chroot is None:
        chroot = settings.chroot
    root = _normalized_chroot(chroot)
    started_at = datetime.now(UTC)
    started = time.monotonic()
    tree = rebuild_tree(source_dir, log_dir, at_zxid=at_zxid, at_time=at_time, progress=progress)
    tree.nodes.prefetch([root, *(_absolute(root, relative) for relative in KAFKA_ACL_PATHS)])
    if root not in tree.nodes:
        raise OfflineFilesError(f"chroot {root} does not exist in the tree rebuilt at zxid {tree.zxid:#x}; "
                                "check the chroot (Kafka's zookeeper.connect suffix)")
    target = warehouse.snapshot_dir(snapshot_id)
    if not warehouse.claim_snapshot_dir(snapshot_id):
        raise SnapshotIdTaken(f"snapshot {snapshot_id} exists or is being written in {warehouse.root}; pick a new id")
    fingerprinter = None if options.copy_secrets else Fingerprinter(warehouse_key(warehouse), decoder)
    counts = _Counts()
    try:
        with cycle_collector_paused():
            files = write_parquet(warehouse, target, _batches(tree, root, options, fingerprinter, counts),
                                   options.file_rows)
    except BaseException:
        warehouse.remove(target)
        raise
    elapsed = time.monotonic() - started
    peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    source = origin or str(Path(source_dir))
    manifest = {
        "snapshot_id": snapshot_id,
        "source": "files",
        "cluster": cluster,
        "ensemble": settings.hosts if settings is not None else f"files:{source}",
        "chroot": root,
        "identity": settings.identity if settings is not None else f"files:{source}",
        "server_version": None,
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "znodes": counts.znodes,
        "bytes": counts.data_bytes,
        "vanished": 0,
        "unreadable": 0,
        "secrets": {
            "mode": "copied" if fingerprinter is None else "fingerprinted",
            "fingerprinted_znodes": counts.fingerprinted,
            "key_id": None if fingerprinter is None else fingerprinter.key_id,
        },
        "zxid_window": [counts.min_mzxid, counts.max_mzxid],
        "sync_zxid": {"start": tree.zxid, "end": tree.zxid},
        "read_mode": "files",
        "requests": 0,
        "reads": 0,
        "interruptions": [],
        "seconds": round(elapsed, 3),
        "znodes_per_second": round(counts.znodes / elapsed, 1) if elapsed else None,
        "peak_rss_mb": peak_rss_mb,
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        "znode_acls": _kafka_znode_acls(tree, root),
        "files": files,
        "workers": [{"worker": 0, "znodes": counts.znodes, "reads": 0, "seconds": round(elapsed, 3),
                     "peak_rss_mb": peak_rss_mb}],
        "source_files": {
            "dir": source,
            "snapshot": Path(tree.snapshot_file).name,
            "logs": [Path(name).name for name in tree.log_files],
        },
        "zxid": tree.zxid,
        "zxid_time": None if tree.time_ms is None else datetime.fromtimestamp(tree.time_ms / 1000, UTC).isoformat(),
        "digest_verified": tree.digest_verified,
        "file_format": tree.format,
    }
    try:
        warehouse.write_json(warehouse.manifest_path(snapshot_id), manifest)
    except BaseException:
        warehouse.remove(target)
        raise
    log.info("offline snapshot %s: %d znodes at zxid 0x%x from %s (digest verified: %s), %.1fs",
             snapshot_id, counts.znodes, tree.zxid, Path(tree.snapshot_file).name, tree.digest_verified, elapsed)
    return manifest


def write_new_offline_snapshot(
    source_dir: str, warehouse: Warehouse, suffix: str = "", **kwargs: Any
) -> dict[str, Any]:
    """:func:`write_offline_snapshot` under a new id (``<UTC start>-<suffix>``), claimed as a live one is."""
    return under_new_id(suffix, lambda snapshot_id: write_offline_snapshot(source_dir, warehouse, snapshot_id,
                                                                           **kwargs))


class _Counts:
    """What the manifest reports about the rows written."""

    def __init__(self) -> None:
        self.znodes = self.data_bytes = self.fingerprinted = 0
        self.min_mzxid: int | None = None
        self.max_mzxid: int | None = None

    def add(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        self.znodes += rows.num_rows
        self.data_bytes += int(pc.sum(pc.binary_length(rows["data"])).as_py() or 0)
        low, high = pc.min_max(rows["mzxid"]).values()
        self.min_mzxid = low.as_py() if self.min_mzxid is None else min(self.min_mzxid, low.as_py())
        self.max_mzxid = high.as_py() if self.max_mzxid is None else max(self.max_mzxid, high.as_py())


def _normalized_chroot(chroot: str | None) -> str:
    root = "/" + (chroot or "").strip("/")
    return root


def _absolute(root: str, relative: str) -> str:
    if root == "/":
        return relative
    return root if relative == "/" else root + relative


def _batches(
    tree: RebuiltTree, root: str, options: SnapshotOptions, fingerprinter: Fingerprinter | None, counts: _Counts
) -> Iterator[pa.RecordBatch]:
    """The rows of the znodes the live walk would record (under the chroot, wanted by ``options``): the
    snapshot's untouched rows straight from its columns, one row group at a time (made while the previous one is
    written), then the znodes the replay changed."""
    table = tree.nodes.table
    keep = tree.nodes.untouched_rows() & _wanted(table.paths, root, options)
    step = options.row_group_rows
    parts = (_table_rows(table, np.flatnonzero(keep[start:start + step]) + start, root)
             for start in range(0, len(table), step))
    for columns in itertools.chain(parts, [_changed_rows(tree, root, options)]):
        if not len(columns["path"]):
            continue
        _scrub_secrets(columns, fingerprinter, counts)
        rows = pa.table([columns[name] for name in ARROW_SCHEMA.names], schema=ARROW_SCHEMA)
        counts.add(rows)
        yield from rows.to_batches(max_chunksize=step)


def _table_rows(table: NodeTable, rows: np.ndarray, root: str) -> dict[str, pa.Array | np.ndarray]:
    """The columns of the snapshot's ``rows`` (no per-znode Python work)."""
    stats = {name: values[rows] for name, values in table.stats.items()}
    num_children = table.num_children[rows]
    take = pa.array(rows)
    data = table.data.take(take)
    return {
        "path": _relative_paths(table.paths.take(take), root), "data": data, **stats,
        "cversion": (2 * stats["cversion"] - num_children).astype(np.int32),  # as clients see it (DataNode.copyStat)
        "data_length": pc.fill_null(pc.binary_length(data), 0), "num_children": num_children,
        "unreadable": pa.nulls(len(rows), pa.string()), "fingerprinted": pa.nulls(len(rows), pa.string()),
    }


def _changed_rows(tree: RebuiltTree, root: str, options: SnapshotOptions) -> dict[str, pa.Array]:
    """The rows of the znodes the replay created or changed (or looked up), from their Node objects."""
    changed = sorted(tree.nodes.changed().items())
    absolute = pa.array([path for path, _ in changed], pa.string())
    wanted = _wanted(absolute, root, options)
    nodes = [node for (_, node), keep in zip(changed, wanted.tolist(), strict=True) if keep]
    stats = {name: pa.array([getattr(node, name) for node in nodes], ARROW_SCHEMA.field(name).type)
             for name in ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "aversion", "ephemeral_owner")}
    return {
        "path": _relative_paths(absolute.filter(pa.array(wanted)), root),
        "data": pa.array([None if node.data_null else node.data for node in nodes], pa.binary()), **stats,
        # cversion as clients see it (DataNode.copyStat)
        "cversion": pa.array([node.cversion * 2 - len(node.children) for node in nodes], pa.int32()),
        "data_length": pa.array([len(node.data) for node in nodes], pa.int32()),
        "num_children": pa.array([len(node.children) for node in nodes], pa.int32()),
        "unreadable": pa.nulls(len(nodes), pa.string()), "fingerprinted": pa.nulls(len(nodes), pa.string()),
    }


def _under(paths: pa.Array, prefix: str) -> np.ndarray:
    """Which ``paths`` are ``prefix`` or below it (the walker's prefix rule)."""
    prefix = prefix.rstrip("/") or "/"
    if prefix == "/":
        return np.ones(len(paths), dtype=bool)
    below = pc.or_(pc.equal(paths, prefix), pc.starts_with(paths, prefix + "/"))
    return below.to_numpy(zero_copy_only=False)


def _relative_paths(paths: pa.Array, root: str) -> pa.Array:
    """Absolute paths under ``root`` as the live walk records them: relative to the chroot, which is "/"."""
    if root == "/" or not len(paths):
        return paths
    relative = pc.utf8_slice_codeunits(paths, len(root))
    if relative[0].as_py() == "":  # the chroot itself, first in pre-order
        relative = pa.concat_arrays([pa.array(["/"]), relative.slice(1)])
    return relative


def _wanted(paths: pa.Array, root: str, options: SnapshotOptions) -> np.ndarray:
    """Which absolute ``paths`` the live walk from ``root`` records: under the chroot, and SnapshotOptions.wants
    of the path relative to it (its prefixes are relative: each is matched as ``root`` + prefix)."""
    wanted = _under(paths, root)
    for prefix in options.exclude:
        wanted &= ~_under(paths, _absolute(root, prefix.rstrip("/") or "/"))
    if options.include:
        included = np.zeros(len(paths), dtype=bool)
        for prefix in options.include:
            included |= _under(paths, _absolute(root, prefix.rstrip("/") or "/"))
        wanted &= included
    return wanted


def _scrub_secrets(columns: dict, fingerprinter: Fingerprinter | None, counts: _Counts) -> None:
    """Fingerprint the data of the rows under the secret paths (a handful) in ``columns``, as the live walk
    does."""
    paths, data = columns["path"], columns["data"]
    if fingerprinter is None or not len(paths):
        return
    secret = np.zeros(len(paths), dtype=bool)
    for prefix in SECRET_PATHS:
        secret |= pc.starts_with(paths, prefix).to_numpy(zero_copy_only=False)
    secret &= pc.fill_null(pc.greater(pc.binary_length(data), 0), False).to_numpy(zero_copy_only=False)
    where = np.nonzero(secret)[0]
    if not len(where):
        return
    scrubbed, marks = [], []
    for path, value in zip(paths.take(pa.array(where)).to_pylist(), data.take(pa.array(where)).to_pylist(),
                           strict=True):
        value, fingerprinted = fingerprinter.scrub(path, value)
        scrubbed.append(value)
        marks.append(fingerprinted)
        counts.fingerprinted += fingerprinted is not None
    mask = pa.array(secret)
    columns["data"] = pc.replace_with_mask(data, mask, pa.array(scrubbed, pa.binary()))
    columns["fingerprinted"] = pc.replace_with_mask(columns["fingerprinted"], mask, pa.array(marks, pa.string()))


def _kafka_znode_acls(tree: RebuiltTree, root: str) -> dict[str, list[str]]:
    """The ACLs of Kafka's top-level znodes that exist, formatted as the live manifest's ``znode_acls``."""
    acls: dict[str, list[str]] = {}
    for relative in KAFKA_ACL_PATHS:
        node = tree.nodes.get(_absolute(root, relative))
        if node is not None:
            acls[relative] = sorted(format_acl(ACL(perms, Id(scheme, ident))) for perms, scheme, ident in node.acl)
    return acls
