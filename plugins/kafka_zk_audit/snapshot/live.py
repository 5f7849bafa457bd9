"""A live snapshot: claim its id, walk the ensemble (one connection, or several: ``parallel``), write the manifest last.

The Parquet files are written first (``writer``) and ``_MANIFEST.json`` last, so a snapshot is complete or absent.
No walk is a point-in-time snapshot: the manifest records the mzxid range seen and the zxid of a ``sync`` at the
start and at the end, the consistency window of the snapshot, with the ACLs of Kafka's znodes (``acls``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import OperationTimeoutError

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse, validate_snapshot_id
from kafka_zk_audit.snapshot.acls import kafka_znode_acls
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.faults import with_retry
from kafka_zk_audit.snapshot.ids import SnapshotIdTaken, under_new_id
from kafka_zk_audit.snapshot.parallel import walk_in_parallel
from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder
from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key
from kafka_zk_audit.snapshot.walker import TreeWalker, WalkStats
from kafka_zk_audit.snapshot.writer import write_parquet

log = logging.getLogger(__name__)


def _sync_zxid(client: KazooClient, timeout: float) -> int:
    """The zxid the server reports right after a ``sync`` (the leader's state at that moment)."""
    try:
        client.sync_async("/").get(timeout=timeout)
    except client.handler.timeout_exception:
        raise OperationTimeoutError(f"sync not answered within {timeout:.0f}s") from None
    return int(client.last_zxid)


def _server_version(client: KazooClient) -> str | None:
    try:
        return ".".join(str(part) for part in client.server_version())
    except Exception:  # the envi four-letter word may be disabled
        return None


def write_snapshot(
    client: KazooClient,
    settings: ZkSettings,
    warehouse: Warehouse,
    snapshot_id: str,
    options: SnapshotOptions | None = None,
    progress: Callable[[WalkStats], None] | None = None,
    cluster: str | None = None,
    decoder: PasswordDecoder | None = None,
) -> dict[str, Any]:
    """Walk the tree into ``<warehouse>/snapshots/snapshot_id=<id>/`` and return its manifest.

    ``cluster`` is the fleet's name for the ensemble (the manifest's ``cluster``): history, baselines and
    retention go by it. ``decoder`` (the brokers' ``password.encoder.secret``, a paired cluster's) decodes encoded
    broker passwords before they are fingerprinted (``snapshot.secrets``).

    The Parquet files are written first and ``_MANIFEST.json`` last: a snapshot is complete or
    absent. On any failure (``SnapshotInterrupted`` when ZooKeeper stayed out of reach) the partial
    directory is removed and the error is raised. Secrets are fingerprinted with the warehouse's key
    unless ``options.copy_secrets``. ``progress`` is called with the walk's stats after every response (in a
    parallel walk, ``options.parallel_connections`` > 1: with the summed stats each time a worker finishes).
    """
    options = options or SnapshotOptions()
    validate_snapshot_id(snapshot_id)
    target = warehouse.snapshot_dir(snapshot_id)
    if not warehouse.claim_snapshot_dir(snapshot_id):
        raise SnapshotIdTaken(f"snapshot {snapshot_id} exists or is being written in {warehouse.root}; "
                              "pick a new id")
    fingerprinter = None if options.copy_secrets else Fingerprinter(warehouse_key(warehouse), decoder)
    started_at = datetime.now(UTC)
    started = time.monotonic()
    walker = TreeWalker(client, options, fingerprinter, progress)
    files: list[str] = []
    workers: list[dict[str, Any]] = []
    try:
        sync_start = with_retry(options, lambda: _sync_zxid(client, options.request_timeout_s))
        log.info("snapshot %s of %s as %s: sync zxid 0x%x", snapshot_id, settings.ensemble, settings.identity,
                 sync_start)
        if options.parallel_connections > 1:
            key = None if fingerprinter is None else warehouse_key(warehouse)
            files, workers = walk_in_parallel(walker, settings, warehouse, target, key, decoder)
        else:
            files = write_parquet(warehouse, target, walker.batches(), options.file_rows)
        sync_end = with_retry(options, lambda: _sync_zxid(client, options.request_timeout_s))
        znode_acls = kafka_znode_acls(client, lambda call: with_retry(options, call))
    except BaseException:
        warehouse.remove(target)
        raise
    stats = walker.stats
    elapsed = time.monotonic() - started
    manifest = {
        "snapshot_id": snapshot_id,
        "source": "live",
        "cluster": cluster,
        "ensemble": settings.hosts,
        "chroot": settings.chroot or "/",
        "identity": settings.identity,
        "server_version": _server_version(client),
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "znodes": stats.znodes,
        "bytes": stats.data_bytes,
        "vanished": stats.vanished,
        "unreadable": stats.unreadable,
        "secrets": {
            "mode": "copied" if fingerprinter is None else "fingerprinted",
            "fingerprinted_znodes": stats.fingerprinted,
            "key_id": None if fingerprinter is None else fingerprinter.key_id,
        },
        "zxid_window": [stats.min_mzxid, stats.max_mzxid],
        "sync_zxid": {"start": sync_start, "end": sync_end},
        "read_mode": stats.mode,
        "requests": stats.requests,
        "reads": stats.reads,
        "interruptions": stats.interruptions,
        "seconds": round(elapsed, 3),
        "znodes_per_second": round(stats.znodes / elapsed, 1) if elapsed else None,
        "peak_rss_mb": round(stats.peak_rss_mb, 1),
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        "znode_acls": znode_acls,
        "files": files,
        "workers": workers or [{"worker": 0, "znodes": stats.znodes, "reads": stats.reads,
                                "seconds": round(elapsed, 3), "peak_rss_mb": round(stats.peak_rss_mb, 1)}],
    }
    try:
        warehouse.write_json(warehouse.manifest_path(snapshot_id), manifest)
    except BaseException:
        warehouse.remove(target)
        raise
    log.info(
        "snapshot %s complete: %d znodes, %d bytes of data, %d vanished, %d unreadable, %d fingerprinted, "
        "%d reconnections, %.1fs (%.0f znodes/s)",
        snapshot_id, stats.znodes, stats.data_bytes, stats.vanished, stats.unreadable, stats.fingerprinted,
        len(stats.interruptions), elapsed, manifest["znodes_per_second"] or 0,
    )
    return manifest


ID_ATTEMPTS = 5  # snapshot ids are per second: writers of one cluster starting together take the next seconds


def write_new_snapshot(
    client: KazooClient,
    settings: ZkSettings,
    warehouse: Warehouse,
    suffix: str = "",
    options: SnapshotOptions | None = None,
    progress: Callable[[WalkStats], None] | None = None,
    cluster: str | None = None,
    decoder: PasswordDecoder | None = None,
) -> dict[str, Any]:
    """:func:`write_snapshot` under a new id (``<UTC start>-<suffix>``); when another writer has taken that
    second's id, the next second's (up to ``ID_ATTEMPTS`` tries). Returns the manifest (its ``snapshot_id``)."""
    return under_new_id(suffix, lambda snapshot_id: write_snapshot(
        client, settings, warehouse, snapshot_id, options, progress, cluster=cluster, decoder=decoder))
