"""Read a whole ZooKeeper tree into the warehouse: one Parquet row per znode, manifest last.

The walk is stat-guided (children are asked for only where ``numChildren > 0``) and pipelined
with a bounded number of requests in flight. On servers >= 3.6 it batches reads with multiRead
(see ``zk.multiread``); older servers (3.4/3.5, common under old Kafka) get the same walk with
one operation per request. Rows stream to Parquet in row groups, so client memory stays flat.
No walk is a point-in-time snapshot: the manifest records the mzxid range seen and the zxid of
a ``sync`` at the start and at the end, the consistency window of the snapshot.

The reader only reads: getData, getChildren and sync. It never writes to ZooKeeper.
"""

from __future__ import annotations

import logging
import resource
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.serialization import GetChildren, GetData
from kazoo.protocol.states import ZnodeStat

from kafka_zk_audit.contract.warehouse import Warehouse, validate_snapshot_id
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.multiread import MultiRead, ReadError

log = logging.getLogger(__name__)

ARROW_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("data", pa.binary()),
        ("czxid", pa.int64()),
        ("mzxid", pa.int64()),
        ("pzxid", pa.int64()),
        ("ctime", pa.int64()),
        ("mtime", pa.int64()),
        ("version", pa.int32()),
        ("cversion", pa.int32()),
        ("aversion", pa.int32()),
        ("ephemeral_owner", pa.int64()),
        ("data_length", pa.int32()),
        ("num_children", pa.int32()),
    ]
)
READ_MODES = ("auto", "multi", "single")
# The snapshot column of each field of kazoo's ZnodeStat, in its order (pzxid comes last there).
STAT_COLUMNS = tuple(
    {"ephemeralOwner": "ephemeral_owner", "dataLength": "data_length", "numChildren": "num_children"}.get(f, f)
    for f in ZnodeStat._fields
)


@dataclass(frozen=True)
class SnapshotOptions:
    """How to walk. Prefixes are paths relative to the chroot, e.g. ``/brokers``."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ("/zookeeper",)
    read_mode: str = "auto"
    batch_ops: int = 1000
    max_in_flight: int = 0  # 0: 50 multiRead requests, or 2,000 single-op requests
    row_group_rows: int = 50_000
    file_rows: int = 1_000_000
    progress_every_s: float = 5.0
    request_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.read_mode not in READ_MODES:
            raise ValueError(f"read_mode must be one of {READ_MODES}, not {self.read_mode!r}")
        if self.batch_ops < 1:
            raise ValueError("batch_ops must be at least 1")

    def in_flight(self, mode: str) -> int:
        return self.max_in_flight or (50 if mode == "multi" else 2000)

    def wants(self, path: str) -> bool:
        """Record this znode?"""
        if any(_under(path, prefix) for prefix in self.exclude):
            return False
        return not self.include or any(_under(path, prefix) for prefix in self.include)

    def descends(self, path: str) -> bool:
        """Walk this znode's children? (also ancestors of an include prefix)."""
        if any(_under(path, prefix) for prefix in self.exclude):
            return False
        return not self.include or any(_under(path, p) or _under(p, path) for p in self.include)

    def settled_below(self, path: str) -> bool:
        """Is every znode below the wanted ``path`` wanted too (no prefix lies strictly under it)?

        Then the walk records and descends its whole subtree without asking ``wants`` per znode.
        """
        inner = "/" if path == "/" else path + "/"
        return self.wants(path) and not any(
            p.rstrip("/").startswith(inner) for p in (*self.exclude, *self.include) if p.rstrip("/") != path
        )


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/") or "/"
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


@dataclass
class WalkStats:
    znodes: int = 0
    data_bytes: int = 0
    vanished: int = 0
    requests: int = 0
    min_mzxid: int | None = None
    max_mzxid: int | None = None
    mode: str = ""
    peak_rss_mb: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class TreeWalker:
    """Pipelined, stat-guided walk that yields Arrow record batches of snapshot rows."""

    def __init__(self, client: KazooClient, options: SnapshotOptions) -> None:
        self.client = client
        self.options = options
        self.stats = WalkStats()

    def _full(self, path: str) -> str:
        chroot = self.client.chroot or ""
        return chroot + path if path != "/" else (chroot or "/")

    def _send(self, ops: list[tuple[str, str, bool]], mode: str):
        requests = [GetData(self._full(p), None) if kind == "data" else GetChildren(self._full(p), None)
                    for kind, p, _ in ops]
        async_result = self.client.handler.async_result()
        self.client._call(MultiRead(requests) if mode == "multi" else requests[0], async_result)
        self.stats.requests += 1
        return async_result

    def _receive(self, async_result, mode: str) -> list:
        if mode == "multi":
            return async_result.get(timeout=self.options.request_timeout_s)
        try:
            return [async_result.get(timeout=self.options.request_timeout_s)]
        except NoNodeError as exc:
            return [ReadError(exc)]

    def probe_mode(self) -> str:
        """multiRead if the server answers it, else single operations."""
        if self.options.read_mode != "auto":
            return self.options.read_mode
        try:
            result = self._receive(self._send([("data", "/", False)], "multi"), "multi")
            if len(result) == 1 and not isinstance(result[0], ReadError):
                return "multi"
        except Exception as exc:  # old servers reject opcode 22 in several ways
            log.info("server does not answer multiRead (%s); reading one operation per request", exc)
            deadline = time.monotonic() + 30
            while not self.client.connected and time.monotonic() < deadline:
                time.sleep(0.1)
        return "single"

    def batches(self) -> Iterator[pa.RecordBatch]:
        opts = self.options
        mode = self.stats.mode = self.probe_mode()
        batch_ops = opts.batch_ops if mode == "multi" else 1
        max_in_flight = opts.in_flight(mode)
        # Pending operations: (kind, path, settled). A settled znode lies in a subtree that is wanted
        # whole (the usual case: everything but /zookeeper), so its children need no filtering.
        root_settled = opts.settled_below("/")
        pending: deque[tuple[str, str, bool]] = deque([("data", "/", root_settled)])
        in_flight: deque[tuple[list[tuple[str, str, bool]], Any]] = deque()
        columns: dict[str, list] = {name: [] for name in ARROW_SCHEMA.names}
        started = last_report = time.monotonic()
        while pending or in_flight:
            while pending and len(in_flight) < max_in_flight:
                ops = [pending.pop() for _ in range(min(batch_ops, len(pending)))]
                in_flight.append((ops, self._send(ops, mode)))
            ops, async_result = in_flight.popleft()
            for (kind, path, settled), result in zip(ops, self._receive(async_result, mode), strict=True):
                if isinstance(result, ReadError):
                    if not isinstance(result.error, NoNodeError):
                        raise result.error
                    if kind == "data":
                        self.stats.vanished += 1
                    continue
                if kind == "children":
                    prefix = "/" if path == "/" else path + "/"
                    if settled:
                        pending.extend(("data", prefix + name, True) for name in result)
                        continue
                    for name in result:
                        child = prefix + name
                        if opts.wants(child) or opts.descends(child):
                            pending.append(("data", child, opts.settled_below(child)))
                    continue
                data, stat = result
                if stat.numChildren > 0 and (settled or opts.descends(path)):
                    pending.append(("children", path, settled))
                if settled or opts.wants(path):
                    self._add_row(columns, path, data, stat)
            if len(columns["path"]) >= opts.row_group_rows:
                yield self._flush(columns)
            now = time.monotonic()
            if now - last_report >= opts.progress_every_s:
                last_report = now
                self._report(now - started, len(in_flight))
        if columns["path"]:
            yield self._flush(columns)
        self._report(time.monotonic() - started, 0)

    @staticmethod
    def _add_row(columns: dict[str, list], path: str, data: bytes | None, stat) -> None:
        """Append one znode (``stat``: kazoo's ZnodeStat)."""
        columns["path"].append(path)
        columns["data"].append(data)
        for name, value in zip(STAT_COLUMNS, stat, strict=True):
            columns[name].append(value)

    def _flush(self, columns: dict[str, list]) -> pa.RecordBatch:
        """One record batch of the buffered rows; counts, bytes and the mzxid range go to the stats."""
        batch = pa.RecordBatch.from_pydict(columns, schema=ARROW_SCHEMA)
        for values in columns.values():
            values.clear()
        s = self.stats
        s.znodes += batch.num_rows
        s.data_bytes += int(pc.sum(pc.binary_length(batch.column("data"))).as_py() or 0)
        low, high = pc.min_max(batch.column("mzxid")).values()
        if low.is_valid:
            s.min_mzxid = low.as_py() if s.min_mzxid is None else min(s.min_mzxid, low.as_py())
            s.max_mzxid = high.as_py() if s.max_mzxid is None else max(s.max_mzxid, high.as_py())
        return batch

    def _report(self, elapsed: float, in_flight: int) -> None:
        s = self.stats
        s.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        log.info(
            "read %d znodes in %.1fs (%.0f znodes/s, %s mode), %d vanished, %d requests in flight, "
            "peak RSS %.0f MB",
            s.znodes, elapsed, s.znodes / elapsed if elapsed else 0.0, s.mode, s.vanished, in_flight,
            s.peak_rss_mb,
        )


def _sync_zxid(client: KazooClient) -> int:
    """The zxid the server reports right after a ``sync`` (the leader's state at that moment)."""
    client.sync("/")
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
) -> dict[str, Any]:
    """Walk the tree into ``<warehouse>/snapshots/snapshot_id=<id>/`` and return its manifest.

    The Parquet files are written first and ``_MANIFEST.json`` last: a snapshot is complete or
    absent. On any failure the partial directory is removed and the error is raised.
    """
    options = options or SnapshotOptions()
    validate_snapshot_id(snapshot_id)
    target = warehouse.snapshot_dir(snapshot_id)
    if warehouse.exists(warehouse.manifest_path(snapshot_id)):
        raise FileExistsError(f"snapshot {snapshot_id} already exists in {warehouse.root}; pick a new id")
    warehouse.remove(target)  # leftovers of an earlier failed attempt
    started_at = datetime.now(UTC)
    started = time.monotonic()
    walker = TreeWalker(client, options)
    files: list[str] = []
    try:
        sync_start = _sync_zxid(client)
        log.info("snapshot %s of %s: sync zxid 0x%x", snapshot_id, settings.ensemble, sync_start)
        files = _write_parquet(warehouse, target, walker.batches(), options.file_rows)
        sync_end = _sync_zxid(client)
    except BaseException:
        warehouse.remove(target)
        raise
    stats = walker.stats
    elapsed = time.monotonic() - started
    manifest = {
        "snapshot_id": snapshot_id,
        "ensemble": settings.hosts,
        "chroot": settings.chroot or "/",
        "server_version": _server_version(client),
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "znodes": stats.znodes,
        "bytes": stats.data_bytes,
        "vanished": stats.vanished,
        "zxid_window": [stats.min_mzxid, stats.max_mzxid],
        "sync_zxid": {"start": sync_start, "end": sync_end},
        "read_mode": stats.mode,
        "requests": stats.requests,
        "seconds": round(elapsed, 3),
        "znodes_per_second": round(stats.znodes / elapsed, 1) if elapsed else None,
        "peak_rss_mb": round(stats.peak_rss_mb, 1),
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        "files": files,
    }
    try:
        warehouse.write_json(warehouse.manifest_path(snapshot_id), manifest)
    except BaseException:
        warehouse.remove(target)
        raise
    log.info(
        "snapshot %s complete: %d znodes, %d bytes of data, %d vanished, %.1fs (%.0f znodes/s)",
        snapshot_id, stats.znodes, stats.data_bytes, stats.vanished, elapsed,
        manifest["znodes_per_second"] or 0,
    )
    return manifest


def _write_parquet(
    warehouse: Warehouse, target: str, batches: Iterable[pa.RecordBatch], file_rows: int
) -> list[str]:
    fs = warehouse.fs
    fs_target = warehouse.fs_path(target)
    fs.makedirs(fs_target, exist_ok=True)
    files: list[str] = []
    writer: pq.ParquetWriter | None = None
    handle = None
    rows_in_file = 0
    try:
        for batch in batches:
            if writer is None or rows_in_file >= file_rows:
                if writer is not None:
                    writer.close()
                    handle.close()
                name = f"part-{len(files):05d}.parquet"
                files.append(name)
                handle = fs.open(f"{fs_target}/{name}", "wb")
                writer = pq.ParquetWriter(handle, ARROW_SCHEMA, compression="zstd")
                rows_in_file = 0
            writer.write_batch(batch)
            rows_in_file += batch.num_rows
        if writer is None:  # an empty tree still yields a (empty) file so readers see the schema
            files.append("part-00000.parquet")
            with fs.open(f"{fs_target}/part-00000.parquet", "wb") as empty:
                pq.write_table(ARROW_SCHEMA.empty_table(), empty)
    finally:
        if writer is not None:
            writer.close()
            handle.close()
    return files
