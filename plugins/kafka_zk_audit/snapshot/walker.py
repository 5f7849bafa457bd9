"""Read a whole ZooKeeper tree into the warehouse: one Parquet row per znode, manifest last.

The walk is stat-guided (children are asked for only where ``numChildren > 0``) and pipelined
with a bounded number of reads in flight. On servers >= 3.6 it batches reads with multiRead
(see ``multiread``); older servers (3.4/3.5, common under old Kafka) get the same walk with
one operation per request. Rows stream to Parquet in row groups, so client memory stays flat.
No walk is a point-in-time snapshot: the manifest records the mzxid range seen and the zxid of
a ``sync`` at the start and at the end, the consistency window of the snapshot.

On a production ensemble:

* **Least privilege.** A znode the auditor may not read (NoAuth) is still recorded: its stat comes
  from ``exists`` (which needs no permission), its data is null and ``unreadable`` says why; its
  children are unknown. The walk goes on.
* **No secret copied.** SCRAM credentials, broker password configs and delegation tokens are
  replaced by keyed fingerprints before anything is written (``secrets``), unless
  ``copy_secrets`` is set.
* **Faults survived.** On connection loss or session expiry the walk waits for kazoo to reconnect
  (to any server of the ensemble, with a new session if need be) and re-reads whatever was in
  flight, within ``max_reconnects`` and ``reconnect_timeout_s``. Otherwise it raises
  ``SnapshotInterrupted`` and no snapshot is written.
* **Gentle.** Reads in flight are capped by count (``max_reads_in_flight``, ``max_in_flight``
  requests of up to ``batch_ops`` reads) and by estimated response bytes (``max_bytes_in_flight``),
  and optionally paced (``reads_per_second``).
* **One connection by default.** ``parallel_connections`` > 1 (opt-in) walks disjoint subtrees in
  worker processes, one connection each, the caps shared out among them (see ``parallel``).

The reader only reads: getData, getChildren, exists and sync. It never writes to ZooKeeper.
"""

from __future__ import annotations

import logging
import resource
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.serialization import Exists, GetChildren, GetData
from kazoo.protocol.states import KeeperState, ZnodeStat
from kazoo.retry import KazooRetry, RetryFailedError

from kafka_zk_audit.contract.secrets import CHILDREN_NO_READ_PERMISSION, NO_READ_PERMISSION
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id, validate_snapshot_id
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.multiread import GET_CHILDREN, GET_DATA, PathReads, ReadError
from kafka_zk_audit.snapshot.secrets import SECRET_PATHS, Fingerprinter, warehouse_key

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
        # null, or why the data/children could not be read (contract.secrets UNREADABLE_REASONS)
        ("unreadable", pa.string()),
        # null, or what was replaced by fingerprints: "values" (secret config values) or "data" (all of it)
        ("fingerprinted", pa.string()),
    ]
)
READ_MODES = ("auto", "multi", "single")
# The snapshot column of each field of kazoo's ZnodeStat, in its order (pzxid comes last there).
STAT_COLUMNS = tuple(
    {"ephemeralOwner": "ephemeral_owner", "dataLength": "data_length", "numChildren": "num_children"}.get(f, f)
    for f in ZnodeStat._fields
)

# A response's size for the in-flight byte estimate: a stat is 68 bytes, plus headers and lengths;
# a child's name in a children list, about 24.
STAT_BYTES = 80
CHILD_NAME_BYTES = 24
FIRST_ESTIMATE_BYTES = 1024  # per read, until the walk has seen real responses
MIB = 1024 * 1024
# A row group is written once it holds row_group_rows rows or this much data, whichever comes first,
# so that client memory stays flat on trees of large znodes too.
ROW_GROUP_BYTES = 64 * MIB
# Errors after which the connection (or session) is re-established and the reads in flight resent.
RESUMABLE_ERRORS = (ConnectionLoss, SessionExpiredError, OperationTimeoutError)
# Requests in flight at most when multiRead is not available (one read each) and when it is (batch_ops reads each).
SINGLE_IN_FLIGHT = 2000
MULTI_IN_FLIGHT = 50
# Single-operation reads are sent and awaited in groups of this many (one wake-up of the walker per group).
SINGLE_GROUP = 64


class SnapshotIdTaken(FileExistsError):
    """Another writer has (or is writing) a snapshot of this id; nothing was read or written."""


class SnapshotInterrupted(ConnectionError):
    """The walk lost ZooKeeper and could not resume within its retry budget; no snapshot was written."""


@dataclass(frozen=True)
class SnapshotOptions:
    """How to walk. Prefixes are paths relative to the chroot, e.g. ``/brokers``.

    Load on the ensemble: at most ``max_reads_in_flight`` reads are outstanding, in at most
    ``max_in_flight`` requests (0: 50 multiRead requests of ``batch_ops`` reads, or 2,000 single-op
    requests) whose responses are estimated at no more than ``max_bytes_in_flight`` bytes, and at most
    ``reads_per_second`` reads start per second (default 20,000; 0: no limit). Before these caps the walk kept up to
    50 × 1,000 reads in flight with no byte cap. Secrets are fingerprinted unless ``copy_secrets``.
    ``parallel_connections`` > 1 walks disjoint subtrees over that many connections in worker processes; the caps
    above then hold for the whole snapshot (each worker gets its share).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ("/zookeeper",)
    read_mode: str = "auto"
    batch_ops: int = 1000
    max_in_flight: int = 0
    max_reads_in_flight: int = 10_000
    max_bytes_in_flight: int = 32 * MIB
    reads_per_second: float = 20_000.0
    copy_secrets: bool = False
    max_reconnects: int = 10
    reconnect_timeout_s: float = 60.0
    row_group_rows: int = 50_000
    file_rows: int = 1_000_000
    progress_every_s: float = 5.0
    request_timeout_s: float = 60.0
    parallel_connections: int = 1

    def __post_init__(self) -> None:
        if self.read_mode not in READ_MODES:
            raise ValueError(f"read_mode must be one of {READ_MODES}, not {self.read_mode!r}")
        for name in ("batch_ops", "max_reads_in_flight", "max_bytes_in_flight", "parallel_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("max_in_flight", "reads_per_second", "max_reconnects"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.reconnect_timeout_s <= 0 or self.request_timeout_s <= 0:
            raise ValueError("reconnect_timeout_s and request_timeout_s must be positive")

    def in_flight(self, mode: str) -> int:
        """Requests in flight at most (before the read and byte caps)."""
        return self.max_in_flight or (MULTI_IN_FLIGHT if mode == "multi" else SINGLE_IN_FLIGHT)

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
    unreadable: int = 0
    fingerprinted: int = 0
    requests: int = 0
    reads: int = 0
    min_mzxid: int | None = None
    max_mzxid: int | None = None
    mode: str = ""
    peak_rss_mb: float = 0.0
    interruptions: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


# One read: ("data" | "children" | "stat", path, settled, payload). payload: for "data", the number of
# its group of siblings (see TreeWalker._new_group); for "children", the znode's (data, stat, wanted),
# its row being recorded once its children are known; for "stat", the reason its data could not be read.
# Ops and buffered rows hold plain values only (no object per group or row), which keeps the garbage
# collector's work flat however large the tree.
Op = tuple[str, str, bool, Any]
# Flag of a group of siblings: one of their sizes is known.
SIZE_SEEN = 1


class Reply:
    """What kazoo's connection fills in for one request: a lock-free stand-in for its ``AsyncResult``.

    kazoo calls ``set`` or ``set_exception`` only. Replies the walker waits on carry its ``signal``;
    the others are plain slots (a session's requests are answered in order, so once the last request
    of a group is answered, the group's others are too).
    """

    __slots__ = ("done", "error", "signal", "value")

    def __init__(self, signal: threading.Condition | None = None) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.signal = signal

    def set(self, value: Any = None) -> None:
        self.value = value
        self._finish()

    def set_exception(self, exception: BaseException) -> None:
        self.error = exception
        self._finish()

    def _finish(self) -> None:
        if self.signal is None:
            self.done = True
            return
        with self.signal:
            self.done = True
            self.signal.notify_all()


class InFlight(NamedTuple):
    """Requests on their way: their reads, kazoo's replies, their estimated response bytes and their number."""

    ops: list[Op]
    result: list[Reply]
    estimated_bytes: int
    requests: int


def _call_all(client: KazooClient, requests: list[Any], replies: list[Reply]) -> None:
    """kazoo's ``_call`` for each request, with a single wake-up of its connection thread for all of them."""
    if len(requests) == 1 or client.client_state != KeeperState.CONNECTED:
        for request, reply in zip(requests, replies, strict=True):
            client._call(request, reply)  # kazoo's own checks of the session state
        return
    client._queue.extend(zip(requests, replies, strict=True))
    try:
        client._connection._write_sock.sendall(b"\0" * len(requests))  # one byte per request, as ``_call`` writes
    except Exception:  # closed meanwhile: kazoo fails whatever is queued, as ``_call`` does
        for reply in replies:
            if not reply.done:
                reply.set_exception(ConnectionClosedError("Connection has been closed"))


def _response_bytes(result: Any) -> int:
    """The size of one single-operation response, for the byte estimate."""
    if isinstance(result, ZnodeStat) or result is None:
        return STAT_BYTES
    if isinstance(result, tuple):
        return STAT_BYTES + len(result[0] or b"")
    if isinstance(result, list):
        return 8 + 4 * len(result) + sum(map(len, result))
    return STAT_BYTES


class TreeWalker:
    """Pipelined, stat-guided walk that yields Arrow record batches of snapshot rows.

    ``fingerprinter`` replaces secrets (a throw-away key when not given; none with ``copy_secrets``);
    ``progress`` is called with the stats after every response. The walk starts at ``roots`` (each recorded
    and descended as the options say) and lists no children of the znodes in ``prune`` (still recorded):
    that is how the workers of a parallel walk share a tree.
    """

    def __init__(
        self,
        client: KazooClient,
        options: SnapshotOptions,
        fingerprinter: Fingerprinter | None = None,
        progress: Callable[[WalkStats], None] | None = None,
        roots: Iterable[str] = ("/",),
        prune: Iterable[str] = (),
    ) -> None:
        self.client = client
        self.options = options
        self.roots = tuple(roots)
        self.prune = frozenset(prune)
        self._signal = threading.Condition(threading.Lock())
        self._requests_in_flight = 0
        if options.copy_secrets:
            self.fingerprinter = None
        else:
            self.fingerprinter = fingerprinter or Fingerprinter(secrets.token_bytes(32))
        self.progress = progress
        self.stats = WalkStats()
        self._reads_in_flight = 0
        self._bytes_in_flight = 0
        self._answered_reads = 0
        self._answered_bytes = 0
        self._next_send_at = 0.0
        self._buffered_bytes = 0
        # Per group of siblings (siblings in a Kafka tree are alike: topics, partition states…): the
        # largest data read so far, the SIZE_SEEN flag, and how many reads were sent before a size was known.
        self._largest: list[int] = []
        self._group_flags = bytearray()
        self._blind_reads: list[int] = []
        # The buffered rows, column by column; marks[i] = (unreadable, fingerprinted) where either is set.
        self._paths: list[str] = []
        self._data: list[bytes | None] = []
        self._stats: list[ZnodeStat] = []
        self._marks: dict[int, tuple[str | None, str | None]] = {}

    def _new_group(self) -> int:
        self._largest.append(0)
        self._group_flags.append(0)
        self._blind_reads.append(0)
        return len(self._largest) - 1

    def _full(self, path: str) -> str:
        chroot = self.client.chroot or ""
        return chroot + path if path != "/" else (chroot or "/")

    def _send(self, ops: list[Op], mode: str) -> list[Reply]:
        """Send the reads: one multiRead, or one request per read; the replies, the last one awaitable."""
        chroot = self.client.chroot or ""
        root = chroot or "/"
        if ops[0][0] == "stat":
            requests: list[Any] = [Exists(self._full(ops[0][1]), None)]
        elif mode == "multi":
            requests = [PathReads([(GET_DATA if kind == "data" else GET_CHILDREN, chroot + p if p != "/" else root)
                                   for kind, p, _, _ in ops])]
        else:
            requests = [
                GetData(chroot + p if p != "/" else root, None) if kind == "data"
                else GetChildren(chroot + p if p != "/" else root, None)
                for kind, p, _, _ in ops
            ]
        replies = [Reply() for _ in range(len(requests) - 1)]
        replies.append(Reply(self._signal))
        _call_all(self.client, requests, replies)
        self.stats.requests += len(requests)
        return replies

    def _await(self, reply: Reply, timeout: float) -> None:
        """Wait for ``reply`` (``OperationTimeoutError`` after ``timeout`` seconds)."""
        if reply.done:
            return
        if reply.signal is not None:
            with reply.signal:
                if reply.signal.wait_for(lambda: reply.done, timeout):
                    return
        else:  # not expected: kazoo answers in order, and the group's last reply is awaited first
            deadline = time.monotonic() + timeout
            while not reply.done and time.monotonic() < deadline:
                time.sleep(0.001)
            if reply.done:
                return
        raise OperationTimeoutError(f"no response within {timeout:.0f}s")

    def _receive(self, replies: list[Reply], mode: str, kind: str = "data") -> list:
        """The results of the requests, one per read; per-read errors (NoNode, NoAuth) as ``ReadError``."""
        timeout = self.options.request_timeout_s
        self._await(replies[-1], timeout)
        results: list = []
        answered = 0
        for reply in replies:
            if not reply.done:
                self._await(reply, timeout)
            error = reply.error
            if error is not None:
                if not isinstance(error, (NoNodeError, NoAuthError)):
                    raise error
                results.append(None if kind == "stat" else ReadError(error))
            elif mode == "multi" and kind != "stat":
                answered += getattr(reply.value, "response_bytes", 0)
                results.extend(reply.value)
            else:
                answered += _response_bytes(reply.value)
                results.append(reply.value)
        self._answered_bytes += answered
        return results

    def _bytes_per_read(self, op: Op) -> float:
        """The expected response size of a read: its siblings' largest data once one was read, a children
        list by its length, else the mean of the walk so far."""
        kind, payload = op[0], op[3]
        if kind == "data" and self._group_flags[payload] & SIZE_SEEN:
            return STAT_BYTES + self._largest[payload]
        if kind == "children":
            return 8 + CHILD_NAME_BYTES * payload[1].numChildren
        return self._answered_bytes / self._answered_reads if self._answered_reads else FIRST_ESTIMATE_BYTES

    def probe_mode(self) -> str:
        """multiRead if the server answers it, else single operations."""
        if self.options.read_mode != "auto":
            return self.options.read_mode
        try:
            result = self._receive(self._send([("data", "/", False, 0)], "multi"), "multi")
            if len(result) == 1:  # a result or a per-read error (e.g. NoAuth on the root): multiRead works
                return "multi"
        except Exception as exc:  # old servers reject opcode 22 in several ways (some drop the connection)
            log.info("server does not answer multiRead (%s); reading one operation per request", exc)
            deadline = time.monotonic() + 30
            while not self.client.connected and time.monotonic() < deadline:
                time.sleep(0.1)
        return "single"

    def _with_retry(self, call: Callable[[], Any]) -> Any:
        """``call()``, retried across reconnections within the walk's retry budget."""
        retry = KazooRetry(
            max_tries=self.options.max_reconnects + 1, delay=0.1, backoff=2, max_delay=2.0,
            deadline=self.options.reconnect_timeout_s,
        )
        try:
            return retry(call)
        except (RetryFailedError, ConnectionClosedError) as exc:
            raise SnapshotInterrupted(
                f"lost ZooKeeper and could not get an answer within the retry budget "
                f"({self.options.max_reconnects} reconnections, {self.options.reconnect_timeout_s:.0f}s): {exc}"
            ) from None

    def _await_connection(self) -> None:
        """Wait until kazoo has reconnected (or raise ``SnapshotInterrupted`` after ``reconnect_timeout_s``)."""

        def connected() -> None:
            if self.client.client_state == KeeperState.CLOSED:
                raise ConnectionClosedError("the ZooKeeper client was closed")
            if not self.client.connected:
                raise ConnectionLoss("not connected yet")

        retry = KazooRetry(
            max_tries=-1, delay=0.05, backoff=2, max_delay=1.0, deadline=self.options.reconnect_timeout_s
        )
        retry(connected)

    def _resume(self, error: Exception, lost: list[InFlight], pending: deque[Op], stat_pending: deque[Op]) -> None:
        """Put the reads of the lost requests back, wait for the connection, or give up."""
        for request in lost:
            for op in request.ops:
                (stat_pending if op[0] == "stat" else pending).append(op)
        self._reads_in_flight = self._bytes_in_flight = self._requests_in_flight = 0
        self._blind_reads = [0] * len(self._blind_reads)  # nothing is in flight any more
        s = self.stats
        what = type(error).__name__
        log.warning(
            "lost ZooKeeper mid-walk (%s) after %d reads; %d reads in flight are queued again",
            what, s.reads, sum(len(r.ops) for r in lost),
        )
        interruption = {"error": what, "after_reads": s.reads, "requeued_reads": sum(len(r.ops) for r in lost)}
        s.interruptions.append(interruption)
        budget = f"{self.options.max_reconnects} reconnections, {self.options.reconnect_timeout_s:.0f}s each"
        if len(s.interruptions) > self.options.max_reconnects:
            raise SnapshotInterrupted(
                f"lost ZooKeeper {len(s.interruptions)} times during the walk (last: {what}) after {s.reads} reads; "
                f"more than the retry budget ({budget}); no snapshot was written"
            ) from error
        waited = time.monotonic()
        try:
            self._await_connection()
        except (RetryFailedError, ConnectionClosedError) as exc:
            raise SnapshotInterrupted(
                f"lost ZooKeeper mid-walk ({what}) after {s.reads} reads and could not reconnect within "
                f"{self.options.reconnect_timeout_s:.0f}s ({exc}); no snapshot was written"
            ) from error
        interruption["reconnected_after_s"] = round(time.monotonic() - waited, 3)
        log.warning("reconnected after %.1fs; resuming the walk", interruption["reconnected_after_s"])

    def _fill(self, pending: deque[Op], stat_pending: deque[Op], in_flight: deque[InFlight], mode: str,
              batch_ops: int, max_requests: int) -> None:
        """Send requests while the caps allow (always one when nothing is in flight and pacing allows)."""
        opts = self.options
        rate = opts.reads_per_second
        one_per_read = mode != "multi"
        while (pending or stat_pending) and self._requests_in_flight < max_requests:
            now = time.monotonic()
            if rate and now < self._next_send_at:
                return
            top = stat_pending[-1] if stat_pending else pending[-1]
            if (in_flight and top[0] == "data" and not self._group_flags[top[3]] & SIZE_SEEN
                    and self._blind_reads[top[3]] >= opts.batch_ops):
                return  # a request's worth of these siblings is on its way, sizes unknown: wait for it
            per_read = self._bytes_per_read(top)
            room_reads = opts.max_reads_in_flight - self._reads_in_flight
            room_bytes = opts.max_bytes_in_flight - self._bytes_in_flight
            if in_flight and (room_reads < 1 or room_bytes < per_read):
                return
            if stat_pending:
                ops = [stat_pending.pop()]
            else:
                count = min(batch_ops, len(pending), max(1, room_reads), max(1, int(room_bytes // per_read)))
                if one_per_read:
                    count = min(count, max(1, max_requests - self._requests_in_flight))
                ops = [pending.pop() for _ in range(count)]
                self._count_blind_reads(ops)
            estimate = int(len(ops) * per_read)
            requests = len(ops) if one_per_read else 1
            in_flight.append(InFlight(ops, self._send(ops, mode), estimate, requests))
            self._requests_in_flight += requests
            self._reads_in_flight += len(ops)
            self._bytes_in_flight += estimate
            if rate:
                self._next_send_at = max(self._next_send_at, now) + len(ops) / rate

    def _count_blind_reads(self, ops: list[Op]) -> None:
        """Count the reads of the request's last group of siblings if none of their sizes is known yet.

        Reads are popped from the top of the stack, siblings together, so only the last group of a request
        can have siblings left to send; at most ``batch_ops`` of them go out before a size is known.
        """
        last = ops[-1]
        if last[0] != "data" or self._group_flags[last[3]] & SIZE_SEEN:
            return
        group, count = last[3], 0
        for kind, _, _, payload in reversed(ops):
            if kind != "data" or payload != group:
                break
            count += 1
        self._blind_reads[group] += count

    def batches(self) -> Iterator[pa.RecordBatch]:
        opts = self.options
        mode = self.stats.mode = self.probe_mode()
        self._answered_bytes = 0  # the probe's response is not a read of the walk
        # multiRead: batch_ops reads per request; single operations: sent and awaited in groups
        batch_ops = opts.batch_ops if mode == "multi" else SINGLE_GROUP
        if opts.reads_per_second:  # about ten requests a second rather than one burst
            batch_ops = max(1, min(batch_ops, int(opts.reads_per_second / 10)))
        max_requests = opts.in_flight(mode)
        # Pending reads (kind, path, settled, payload). A settled znode lies in a subtree that is wanted
        # whole (the usual case: everything but /zookeeper), so its children need no filtering.
        roots = self._new_group()
        pending: deque[Op] = deque(("data", root, opts.settled_below(root), roots) for root in reversed(self.roots))
        stat_pending: deque[Op] = deque()  # exists of znodes whose data the auditor may not read
        in_flight: deque[InFlight] = deque()
        started = last_report = time.monotonic()
        while pending or stat_pending or in_flight:
            self._fill(pending, stat_pending, in_flight, mode, batch_ops, max_requests)
            if not in_flight:  # reads_per_second holds the next request back
                time.sleep(max(0.0, self._next_send_at - time.monotonic()))
                continue
            request = in_flight.popleft()
            kind = request.ops[0][0]
            try:
                results = self._receive(request.result, mode, kind)
            except RESUMABLE_ERRORS as exc:
                lost = [request, *in_flight]
                in_flight.clear()
                self._resume(exc, lost, pending, stat_pending)
                continue
            self._requests_in_flight -= request.requests
            self._reads_in_flight -= len(request.ops)
            self._bytes_in_flight -= request.estimated_bytes
            self._answered_reads += len(request.ops)
            self.stats.reads += len(request.ops)
            if kind == "stat":
                self._stat_result(request.ops[0], results[0])
            else:
                self._results(request.ops, results, pending, stat_pending)
            if len(self._paths) >= opts.row_group_rows or self._buffered_bytes >= ROW_GROUP_BYTES:
                yield self._flush()
            if self.progress is not None:
                self.progress(self.stats)
            now = time.monotonic()
            if now - last_report >= opts.progress_every_s:
                last_report = now
                self._report(now - started, len(in_flight))
        if self._paths:
            yield self._flush()
        self._report(time.monotonic() - started, 0)

    def _results(self, ops: list[Op], results: list, pending: deque[Op], stat_pending: deque[Op]) -> None:
        """Record the znodes of one response and queue the reads they lead to."""
        opts, prune = self.options, self.prune
        add_row, largest, group_flags = self._add_row, self._largest, self._group_flags
        # rows that need no fingerprinting are buffered here directly (the usual case), the others by _add_row
        scrubbing = self.fingerprinter is not None
        add_path, add_data, add_stat = self._paths.append, self._data.append, self._stats.append
        data_bytes = 0
        for (kind, path, settled, payload), result in zip(ops, results, strict=True):
            if isinstance(result, ReadError):
                self._read_error(kind, path, settled, payload, result.error, stat_pending)
                continue
            if kind == "children":
                if payload[2]:
                    add_row(path, payload[0], payload[1], None)
                prefix = "/" if path == "/" else path + "/"
                siblings = self._new_group()
                if settled:
                    pending.extend(("data", prefix + name, True, siblings) for name in result)
                    continue
                for name in result:
                    child = prefix + name
                    if opts.wants(child) or opts.descends(child):
                        pending.append(("data", child, opts.settled_below(child), siblings))
                continue
            data, stat = result
            if data:
                size = len(data)
                if size > largest[payload]:
                    largest[payload] = size
            group_flags[payload] |= SIZE_SEEN
            wanted = settled or opts.wants(path)
            if stat.numChildren > 0 and (settled or opts.descends(path)) and path not in prune:
                pending.append(("children", path, settled, (data, stat, wanted)))
            elif not wanted:
                continue
            elif scrubbing and data and path.startswith(SECRET_PATHS):
                add_row(path, data, stat, None)
            else:
                add_path(path)
                add_data(data)
                add_stat(stat)
                if data:
                    data_bytes += size
        self._buffered_bytes += data_bytes

    def _read_error(self, kind: str, path: str, settled: bool, payload: Any, error: Exception,
                    stat_pending: deque[Op]) -> None:
        """NoNode: the znode vanished since its parent was listed. NoAuth: record what ``exists`` shows."""
        if isinstance(error, NoNodeError):
            if kind == "data":
                self.stats.vanished += 1
            elif payload[2]:  # its data was read; it went away before its children were listed
                self._add_row(path, payload[0], payload[1], None)
            return
        if not isinstance(error, NoAuthError):
            raise error
        if kind == "data" and (settled or self.options.wants(path)):
            stat_pending.append(("stat", path, settled, NO_READ_PERMISSION))
        elif kind == "children" and payload[2]:
            self._add_row(path, payload[0], payload[1], CHILDREN_NO_READ_PERMISSION)
        else:  # an ancestor of an include prefix: nothing below it can be reached
            self.stats.unreadable += 1
            log.warning("no READ permission on %s: the included paths below it are not in the snapshot", path)

    def _stat_result(self, op: Op, stat: ZnodeStat | None) -> None:
        """The stat of a znode whose data may not be read (None: it vanished meanwhile)."""
        if stat is None:
            self.stats.vanished += 1
            return
        self._add_row(op[1], None, stat, op[3])

    def _add_row(self, path: str, data: bytes | None, stat: ZnodeStat, unreadable: str | None) -> None:
        """Buffer one znode (``stat``: kazoo's ZnodeStat), secrets fingerprinted."""
        fingerprinted = None
        if self.fingerprinter is not None and data and path.startswith(SECRET_PATHS):
            data, fingerprinted = self.fingerprinter.scrub(path, data)
            if fingerprinted:
                self.stats.fingerprinted += 1
        if unreadable:
            self.stats.unreadable += 1
        if unreadable or fingerprinted:
            self._marks[len(self._paths)] = (unreadable, fingerprinted)
        if data:
            self._buffered_bytes += len(data)
        self._paths.append(path)
        self._data.append(data)
        self._stats.append(stat)

    def _flush(self) -> pa.RecordBatch:
        """One record batch of the buffered rows; counts, bytes and the mzxid range go to the stats."""
        count = len(self._paths)
        columns: dict[str, list] = {"path": self._paths, "data": self._data}
        stat_columns = zip(*self._stats, strict=True)
        columns.update((name, list(values)) for name, values in zip(STAT_COLUMNS, stat_columns, strict=True))
        unreadable, fingerprinted = [None] * count, [None] * count
        for index, (reason, replaced) in self._marks.items():
            unreadable[index], fingerprinted[index] = reason, replaced
        columns.update(unreadable=unreadable, fingerprinted=fingerprinted)
        batch = pa.RecordBatch.from_pydict(columns, schema=ARROW_SCHEMA)
        self._paths, self._data, self._stats, self._marks = [], [], [], {}
        self._buffered_bytes = 0
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
            "read %d znodes in %.1fs (%.0f znodes/s, %s mode), %d vanished, %d unreadable, %d reconnections, "
            "%d requests in flight, peak RSS %.0f MB",
            s.znodes, elapsed, s.znodes / elapsed if elapsed else 0.0, s.mode, s.vanished, s.unreadable,
            len(s.interruptions), in_flight, s.peak_rss_mb,
        )


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


# Kafka's own znodes whose ZooKeeper ACLs the manifest records (``znode_acls``): the KRaft controllers of a
# ZK→KRaft migration must log in to ZooKeeper as the principal these ACLs name (zookeeper.set.acl).
KAFKA_ACL_PATHS = (
    "/", "/admin", "/admin/delete_topics", "/brokers", "/brokers/ids", "/brokers/seqid", "/brokers/topics",
    "/cluster", "/cluster/id", "/config", "/config/brokers", "/config/changes", "/config/clients",
    "/config/topics", "/config/users", "/consumers", "/controller", "/controller_epoch", "/delegation_token",
    "/feature", "/isr_change_notification", "/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended",
    "/kafka-acl-extended-changes", "/latest_producer_id_block", "/log_dir_event_notification", "/migration",
)
_PERMS = ((4, "c"), (8, "d"), (1, "r"), (2, "w"), (16, "a"))  # ZooKeeper's cdrwa order


def format_acl(acl: Any) -> str:
    """``scheme:id:perms`` as ZooKeeper's CLI prints it; a digest id keeps its user name only (the rest is
    a password hash)."""
    scheme, ident = acl.id.scheme, acl.id.id
    if scheme == "digest":
        ident = ident.split(":", 1)[0]
    perms = "".join(letter for bit, letter in _PERMS if acl.perms & bit)
    return f"{scheme}:{ident}:{perms}"


def kafka_znode_acls(client: KazooClient, walker: TreeWalker) -> dict[str, list[str]]:
    """The ACLs of Kafka's top-level znodes that exist (``KAFKA_ACL_PATHS``), a few reads in all; a znode
    whose ACL the auditor may not read maps to ``["unreadable"]``."""
    acls: dict[str, list[str]] = {}
    for path in KAFKA_ACL_PATHS:
        try:
            found, _stat = walker._with_retry(lambda path=path: client.get_acls(path))
        except NoNodeError:
            continue
        except NoAuthError:
            acls[path] = ["unreadable"]
            continue
        acls[path] = sorted(format_acl(acl) for acl in found)
    return acls


def write_snapshot(
    client: KazooClient,
    settings: ZkSettings,
    warehouse: Warehouse,
    snapshot_id: str,
    options: SnapshotOptions | None = None,
    progress: Callable[[WalkStats], None] | None = None,
    cluster: str | None = None,
) -> dict[str, Any]:
    """Walk the tree into ``<warehouse>/snapshots/snapshot_id=<id>/`` and return its manifest.

    ``cluster`` is the fleet's name for the ensemble (the manifest's ``cluster``): history, baselines and
    retention go by it.

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
    fingerprinter = None if options.copy_secrets else Fingerprinter(warehouse_key(warehouse))
    started_at = datetime.now(UTC)
    started = time.monotonic()
    walker = TreeWalker(client, options, fingerprinter, progress)
    files: list[str] = []
    workers: list[dict[str, Any]] = []
    try:
        sync_start = walker._with_retry(lambda: _sync_zxid(client, options.request_timeout_s))
        log.info("snapshot %s of %s as %s: sync zxid 0x%x", snapshot_id, settings.ensemble, settings.identity,
                 sync_start)
        if options.parallel_connections > 1:
            from kafka_zk_audit.snapshot.parallel import walk_in_parallel  # it builds on this module

            key = None if fingerprinter is None else warehouse_key(warehouse)
            files, workers = walk_in_parallel(walker, settings, warehouse, target, key)
        else:
            files = _write_parquet(warehouse, target, walker.batches(), options.file_rows)
        sync_end = walker._with_retry(lambda: _sync_zxid(client, options.request_timeout_s))
        znode_acls = kafka_znode_acls(client, walker)
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
) -> dict[str, Any]:
    """:func:`write_snapshot` under a new id (``<UTC start>-<suffix>``); when another writer has taken that
    second's id, the next second's (up to ``ID_ATTEMPTS`` tries). Returns the manifest (its ``snapshot_id``)."""
    return under_new_id(suffix, lambda snapshot_id: write_snapshot(
        client, settings, warehouse, snapshot_id, options, progress, cluster=cluster))


def under_new_id(suffix: str, write: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """``write(snapshot_id)`` with a new id (``<UTC start>-<suffix>``), the next second's while the id is taken by
    another writer (``SnapshotIdTaken``, up to ``ID_ATTEMPTS`` tries); what ``write`` returned."""
    for attempt in range(ID_ATTEMPTS):
        snapshot_id = new_snapshot_id(suffix=suffix)
        try:
            return write(snapshot_id)
        except SnapshotIdTaken:
            if attempt == ID_ATTEMPTS - 1:
                raise
            log.info("snapshot id %s is taken by another writer; taking the next second's", snapshot_id)
            time.sleep(1.0)
    raise AssertionError("unreachable")


class _PartFiles:
    """Parquet files ``<prefix>-00000.parquet``… in one folder, a new one every ``file_rows`` rows."""

    def __init__(self, fs: Any, folder: str, prefix: str, file_rows: int) -> None:
        self.fs, self.folder, self.prefix, self.file_rows = fs, folder, prefix, file_rows
        self.files: list[str] = []
        self._writer: pq.ParquetWriter | None = None
        self._handle: Any = None
        self._rows = 0

    def _open(self) -> pq.ParquetWriter:
        name = f"{self.prefix}-{len(self.files):05d}.parquet"
        self.files.append(name)
        self._handle = self.fs.open(f"{self.folder}/{name}", "wb")
        self._writer = pq.ParquetWriter(self._handle, ARROW_SCHEMA, compression="zstd")
        self._rows = 0
        return self._writer

    def write(self, batch: pa.RecordBatch) -> None:
        writer = self._writer
        if writer is None or self._rows >= self.file_rows:
            self.close()
            writer = self._open()
        writer.write_batch(batch)
        self._rows += batch.num_rows

    def finish(self) -> None:
        """An empty tree still yields an (empty) file, so that readers see the schema."""
        if not self.files:
            self._open()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._handle.close()
            self._writer = self._handle = None


def _write_parquet(
    warehouse: Warehouse, target: str, batches: Iterable[pa.RecordBatch], file_rows: int, prefix: str = "part"
) -> list[str]:
    """Write the batches into ``target``; the names of the files written.

    Each batch is encoded and compressed on a writer thread (Parquet does it without the GIL) while the
    walk goes on reading; at most one batch waits to be written.
    """
    fs = warehouse.fs
    fs_target = warehouse.fs_path(target)
    fs.makedirs(fs_target, exist_ok=True)
    parts = _PartFiles(fs, fs_target, prefix, file_rows)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="snapshot-parquet") as pool:
            writing: Future | None = None
            for batch in batches:
                if writing is not None:
                    writing.result()
                writing = pool.submit(parts.write, batch)
            if writing is not None:
                writing.result()
        parts.finish()
    finally:
        parts.close()
    return parts.files
