"""Fast bulk writes through one ZooKeeper session: pipelined multi-op transactions.

Operations are grouped into kazoo ``transaction()`` batches of at most ``batch_size`` operations,
committed with ``commit_async()``, with at most ``max_in_flight_ops`` operations awaiting their
answer. ZooKeeper applies one session's requests in order, so a batch may create children of
nodes created by an earlier batch still in flight. A transaction is atomic: one failing operation
fails its batch and the writer raises ``WriteError`` naming the first failing path.

Creates may carry ``None`` data: Kafka's structural nodes (``partitions``, ``partitions/<p>``,
the roots, 1.1+ delete markers) hold null, not an empty byte string.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import Create, Delete, SetData
from kazoo.security import OPEN_ACL_UNSAFE

log = logging.getLogger(__name__)

EPHEMERAL, SEQUENTIAL = 1, 2
# What the other operations of a failed transaction report: not the cause.
_ROLLED_BACK = (RolledBackError, RuntimeInconsistency)


class WriteError(RuntimeError):
    """A batch of writes failed; ``path`` is the first operation ZooKeeper refused."""

    def __init__(self, label: str, path: str, error: BaseException) -> None:
        super().__init__(f"{label}: {type(error).__name__} on {path}")
        self.path = path
        self.error = error


@dataclass
class WriteCounts:
    """What a writer (or a whole simulation) has done so far."""

    creates: int = 0
    sets: int = 0
    deletes: int = 0
    seconds: float = 0.0

    @property
    def ops(self) -> int:
        return self.creates + self.sets + self.deletes

    def add(self, other: WriteCounts) -> None:
        self.creates += other.creates
        self.sets += other.sets
        self.deletes += other.deletes


@dataclass
class _Batch:
    paths: list[str] = field(default_factory=list)
    ops: list[Any] = field(default_factory=list)


class BatchWriter:
    """Write many znodes through ``client``; use as a context manager or call ``flush()``."""

    def __init__(
        self,
        client: KazooClient,
        label: str = "writer",
        batch_size: int = 1000,
        max_in_flight_ops: int = 20_000,
        progress_every: int = 200_000,
        totals: WriteCounts | None = None,
    ) -> None:
        self.client = client
        self.label = label
        self.batch_size = batch_size
        self.max_in_flight_batches = max(1, max_in_flight_ops // batch_size)
        self.progress_every = progress_every
        self.counts = WriteCounts()
        self.totals = totals
        self._reported = WriteCounts()
        self._chroot = client.chroot or ""
        self._batch = _Batch()
        self._in_flight: deque[tuple[_Batch, Any]] = deque()
        self._started = time.monotonic()
        self._next_progress = progress_every

    # -- operations ------------------------------------------------------------------------
    def create(
        self, path: str, data: bytes | None = None, ephemeral: bool = False, sequence: bool = False
    ) -> None:
        flags = (EPHEMERAL if ephemeral else 0) | (SEQUENTIAL if sequence else 0)
        self._add(path, Create(self._chroot + path, data, OPEN_ACL_UNSAFE, flags))
        self.counts.creates += 1

    def set_data(self, path: str, data: bytes, version: int = -1) -> None:
        self._add(path, SetData(self._chroot + path, data, version))
        self.counts.sets += 1

    def delete(self, path: str, version: int = -1) -> None:
        self._add(path, Delete(self._chroot + path, version))
        self.counts.deletes += 1

    def flush(self) -> WriteCounts:
        """Commit what is pending and wait for every batch; raises ``WriteError`` on a failure."""
        self._commit()
        while self._in_flight:
            self._await_oldest()
        self.counts.seconds = time.monotonic() - self._started
        if self.totals is not None:
            counts, reported = self.counts, self._reported
            self.totals.add(
                WriteCounts(counts.creates - reported.creates, counts.sets - reported.sets,
                            counts.deletes - reported.deletes)
            )
            self._reported = WriteCounts(counts.creates, counts.sets, counts.deletes)
        return self.counts

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        if exc_type is None:
            self.flush()
        else:
            self._drain_quietly()

    # -- internals -------------------------------------------------------------------------
    def _add(self, path: str, op: Any) -> None:
        self._batch.paths.append(path)
        self._batch.ops.append(op)
        if len(self._batch.ops) >= self.batch_size:
            self._commit()

    def _commit(self) -> None:
        batch = self._batch
        if not batch.ops:
            return
        self._batch = _Batch()
        transaction = self.client.transaction()
        transaction.operations.extend(batch.ops)
        self._in_flight.append((batch, transaction.commit_async()))
        while len(self._in_flight) > self.max_in_flight_batches:
            self._await_oldest()

    def _await_oldest(self) -> None:
        batch, result = self._in_flight.popleft()
        outcomes = result.get()
        for path, outcome in zip(batch.paths, outcomes, strict=False):
            if isinstance(outcome, BaseException) and not isinstance(outcome, _ROLLED_BACK):
                self._drain_quietly()
                raise WriteError(self.label, path, outcome)
        done = self.counts.ops - len(self._batch.ops) - sum(len(b.ops) for b, _ in self._in_flight)
        if done >= self._next_progress:
            elapsed = time.monotonic() - self._started
            log.info("%s: %d operations written (%.0f/s)", self.label, done, done / max(elapsed, 1e-9))
            self._next_progress += self.progress_every

    def _drain_quietly(self) -> None:
        while self._in_flight:
            _, result = self._in_flight.popleft()
            try:
                result.get()
            except Exception:  # noqa: BLE001 - already failing; only wait for the answers
                pass
