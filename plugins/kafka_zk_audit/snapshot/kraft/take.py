"""The snapshot task of a KRaft cluster: replay a controller's metadata log into the image, write it as a snapshot.

The snapshot table is the image laid out as znodes (``render``), so the normalizer, the checks, the gate, the alerts
and the reports run on it as on a ZooKeeper snapshot; secrets (sensitive configs, SCRAM salts and keys, token
details) are fingerprinted exactly as a ZooKeeper snapshot's are. The manifest has the live manifest's keys plus
``source: "kraft"`` and ``kraft`` (the offsets replayed, record and batch counts, files read, the quorum, what
could not be decoded). The controller is never contacted.
"""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.snapshot_table import ARROW_SCHEMA
from kafka_zk_audit.contract.warehouse import Warehouse, validate_snapshot_id
from kafka_zk_audit.snapshot.files.sources import StagedFiles, parse_at_time
from kafka_zk_audit.snapshot.ids import SnapshotIdTaken, under_new_id
from kafka_zk_audit.snapshot.kraft.render import Znode, znodes
from kafka_zk_audit.snapshot.kraft.replay import ReplayResult, replay_directory
from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key
from kafka_zk_audit.snapshot.targets import parse_at_offset
from kafka_zk_audit.snapshot.writer import write_parquet

log = logging.getLogger(__name__)

__all__ = ["snapshot_from_kraft", "write_kraft_snapshot", "write_new_kraft_snapshot"]


def _rows(nodes: list[Znode], fingerprinter: Fingerprinter | None) -> tuple[pa.Table, int]:
    """The snapshot table of the laid-out znodes (children counted, secrets fingerprinted) and how many were."""
    children: dict[str, int] = {}
    for node in nodes:
        if node.path != "/":
            parent = node.path.rsplit("/", 1)[0] or "/"
            children[parent] = children.get(parent, 0) + 1
    columns: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
    fingerprinted = 0
    for node in nodes:
        data, mark = (node.data, None) if fingerprinter is None else fingerprinter.scrub(node.path, node.data)
        fingerprinted += mark is not None
        count = children.get(node.path, 0)
        values = {
            "path": node.path, "data": data, "czxid": node.origin.created_offset, "mzxid": node.origin.changed_offset,
            "pzxid": node.origin.changed_offset, "ctime": node.origin.created_time, "mtime": node.origin.changed_time,
            "version": node.version, "cversion": count, "aversion": 0, "ephemeral_owner": node.ephemeral_owner,
            "data_length": len(data or b""), "num_children": count, "unreadable": None, "fingerprinted": mark,
        }
        for name, value in values.items():
            columns[name].append(value)
    return pa.table(columns, schema=ARROW_SCHEMA), fingerprinted


def write_kraft_snapshot(metadata_dir: str, warehouse: Warehouse, snapshot_id: str, *, at_offset: int | None = None,
                         at_time: datetime | None = None, options: SnapshotOptions | None = None,
                         cluster: str | None = None, origin: str | None = None,
                         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Replay ``metadata_dir`` (up to ``at_offset``/``at_time``; default: all of it) and write the image as snapshot
    ``snapshot_id``; returns its manifest. Raises KraftLogError (nothing written) when the files cannot give a
    trustworthy image."""
    options = options or SnapshotOptions()
    validate_snapshot_id(snapshot_id)
    started_at, started = datetime.now(UTC), time.monotonic()
    result = replay_directory(metadata_dir, at_offset=at_offset, at_time=at_time, progress=progress)
    image = result.builder.image
    nodes = list(znodes(image, result.cluster_id))
    fingerprinter = None if options.copy_secrets else Fingerprinter(warehouse_key(warehouse))
    rows, fingerprinted = _rows(nodes, fingerprinter)
    target = warehouse.snapshot_dir(snapshot_id)
    if not warehouse.claim_snapshot_dir(snapshot_id):
        raise SnapshotIdTaken(f"snapshot {snapshot_id} exists or is being written in {warehouse.root}; pick a new id")
    try:
        files = write_parquet(warehouse, target, iter(rows.to_batches(max_chunksize=options.row_group_rows)),
                              options.file_rows)
    except BaseException:
        warehouse.remove(target)
        raise
    elapsed = time.monotonic() - started
    source = origin or str(Path(metadata_dir))
    manifest = _manifest(snapshot_id, cluster, source, started_at, elapsed, rows, fingerprinted, fingerprinter,
                         options, files, result)
    try:
        warehouse.write_json(warehouse.manifest_path(snapshot_id), manifest)
    except BaseException:
        warehouse.remove(target)
        raise
    log.info("KRaft snapshot %s: %d znodes from %d records up to offset %d (%s), %.1fs", snapshot_id,
             rows.num_rows, result.records, image.last_offset, source, elapsed)
    return manifest


def _manifest(snapshot_id: str, cluster: str | None, source: str, started_at: datetime, elapsed: float,
              rows: pa.Table, fingerprinted: int, fingerprinter: Fingerprinter | None, options: SnapshotOptions,
              files: list[str], result: ReplayResult) -> dict[str, Any]:
    image = result.builder.image
    peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    data_bytes = int(pc.sum(rows.column("data_length")).as_py() or 0)
    last_time = None if image.last_time is None else datetime.fromtimestamp(image.last_time / 1000, UTC).isoformat()
    return {
        "snapshot_id": snapshot_id, "source": "kraft", "cluster": cluster,
        "ensemble": f"kraft:{source}", "chroot": "/", "identity": f"kraft:{result.cluster_id or source}",
        "server_version": None, "started_at": started_at.isoformat(), "finished_at": datetime.now(UTC).isoformat(),
        "znodes": rows.num_rows, "bytes": data_bytes, "vanished": 0, "unreadable": 0,
        "secrets": {"mode": "copied" if fingerprinter is None else "fingerprinted",
                    "fingerprinted_znodes": fingerprinted,
                    "key_id": None if fingerprinter is None else fingerprinter.key_id},
        "zxid_window": [0, max(image.last_offset, 0)], "sync_zxid": {"start": image.last_offset,
                                                                     "end": image.last_offset},
        "read_mode": "kraft", "requests": 0, "reads": 0, "interruptions": [], "seconds": round(elapsed, 3),
        "znodes_per_second": round(rows.num_rows / elapsed, 1) if elapsed else None, "peak_rss_mb": peak_rss_mb,
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        "znode_acls": {}, "files": files,
        "kraft": {
            "dir": source, "cluster_id": result.cluster_id, "node_id": result.node_id,
            "offset": image.last_offset, "time": last_time, "time_ms": image.last_time,
            "checkpoint": result.checkpoint, "segments": result.segments, "records": result.records,
            "batches": result.batches, "topics": len(image.topics), "partitions": len(image.partitions),
            "brokers": len(image.brokers), "controllers": len(image.controllers),
            "metadata_version": image.features.get("metadata.version", (None,))[0],
            "quorum": {"leader_id": image.quorum.leader_id, "epoch": image.quorum.epoch,
                       "voters": image.quorum.voters},
            "zk_migration_state": None if image.migration_state is None else image.migration_state[0],
            "open_transaction": None if result.builder.open_transaction is None
            else {"offset": result.builder.open_transaction[0], "name": result.builder.open_transaction[1]},
            "aborted_transactions": result.builder.aborted_transactions,
            "undecodable": result.undecodable, "anomalies": len(image.anomalies), "warnings": result.warnings,
        },
    }


def write_new_kraft_snapshot(metadata_dir: str, warehouse: Warehouse, suffix: str = "",
                             **kwargs: Any) -> dict[str, Any]:
    """:func:`write_kraft_snapshot` under a new id (``<UTC start>-<suffix>``), claimed as a live one is."""
    return under_new_id(suffix, lambda snapshot_id: write_kraft_snapshot(metadata_dir, warehouse, snapshot_id,
                                                                         **kwargs))


def snapshot_from_kraft(fetch: Callable[[], AbstractContextManager[StagedFiles]], warehouse: Warehouse,
                        suffix: str = "", *, at_offset: int | str | None = None, at_time: str | datetime | None = None,
                        options: SnapshotOptions | None = None, cluster: str | None = None,
                        task_log: Any = None) -> dict[str, Any]:
    """Fetch the metadata directory with ``fetch()`` and write the replayed image under a new id; its manifest."""
    offset, moment = parse_at_offset(at_offset), parse_at_time(at_time)
    with fetch() as staged:
        (task_log or log).info("snapshot%s from the KRaft metadata log at %s (%s) into %s",
                               f" of cluster {cluster}" if cluster else "", staged.origin,
                               "the newest state" if offset is None and moment is None
                               else f"offset {offset}" if offset is not None else f"{moment:%Y-%m-%dT%H:%M:%SZ}",
                               warehouse.root)
        return write_new_kraft_snapshot(staged.data_dir, warehouse, suffix, at_offset=offset, at_time=moment,
                                        options=options, cluster=cluster,
                                        origin=staged.origin if staged.fetched else None)
