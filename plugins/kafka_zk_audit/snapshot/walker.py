"""Walk a whole ZooKeeper tree: Arrow record batches of snapshot rows, one row per znode (``TreeWalker``).

The walk is stat-guided (children are asked for only where ``numChildren > 0``) and pipelined
with a bounded number of reads in flight. On servers >= 3.6 it batches reads with multiRead
(see ``multiread``); older servers (3.4/3.5, common under old Kafka) get the same walk with
one operation per request (see ``requests``). Rows come in record batches (the row groups ``writer``
writes), so client memory stays flat. ``live`` takes a snapshot with it.

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
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    NoAuthError,
    NoNodeError,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import RetryFailedError

from kafka_zk_audit.contract.secrets import CHILDREN_NO_READ_PERMISSION, NO_READ_PERMISSION, SECRET_PATHS
from kafka_zk_audit.contract.snapshot_options import MIB, SnapshotOptions
from kafka_zk_audit.contract.snapshot_table import ARROW_SCHEMA
from kafka_zk_audit.snapshot.faults import RESUMABLE_ERRORS, SnapshotInterrupted, await_connection
from kafka_zk_audit.snapshot.multiread import ReadError
from kafka_zk_audit.snapshot.requests import STAT_BYTES, Reply, receive, send
from kafka_zk_audit.snapshot.secrets import Fingerprinter

log = logging.getLogger(__name__)

# The snapshot column of each field of kazoo's ZnodeStat, in its order (pzxid comes last there).
STAT_COLUMNS = tuple(
    {"ephemeralOwner": "ephemeral_owner", "dataLength": "data_length", "numChildren": "num_children"}.get(f, f)
    for f in ZnodeStat._fields
)

# A child's name in a children list, for the in-flight byte estimate (a stat: requests.STAT_BYTES).
CHILD_NAME_BYTES = 24
FIRST_ESTIMATE_BYTES = 1024  # per read, until the walk has seen real responses
# A row group is written once it holds row_group_rows rows or this much data, whichever comes first,
# so that client memory stays flat on trees of large znodes too.
ROW_GROUP_BYTES = 64 * MIB
# Single-operation reads are sent and awaited in groups of this many (one wake-up of the walker per group).
SINGLE_GROUP = 64


@dataclass
class WalkStats:
    """What a walk counted: znodes, bytes, reads and requests, the mzxid range, reconnections, peak memory."""

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


class InFlight(NamedTuple):
    """Requests on their way: their reads, kazoo's replies, their estimated response bytes and their number."""

    ops: list[Op]
    result: list[Reply]
    estimated_bytes: int
    requests: int


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

    def _send(self, ops: list[Op], mode: str) -> list[Reply]:
        """Send the reads (``requests.send``); the replies, the last one awaitable."""
        replies = send(self.client, ops, mode, self._signal)
        self.stats.requests += len(replies)
        return replies

    def _receive(self, replies: list[Reply], mode: str, kind: str = "data") -> list:
        """The results of the requests, one per read (``requests.receive``); their bytes go to the estimate."""
        results, answered = receive(replies, mode, kind, self.options.request_timeout_s)
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
            await_connection(self.client, self.options)
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
