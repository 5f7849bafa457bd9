"""The watch of one cluster's Kafka metadata, as an Airflow event trigger (``AssetWatcher``) run by the triggerer.

:class:`KafkaMetadataChangeTrigger` keeps one ZooKeeper session on kazoo's threads
(:class:`kafka_zk_audit.snapshot.watch.MetadataWatch`: persistent recursive watches, re-armed after a connection
loss or a session expiry); their notifications reach the triggerer's asyncio loop through a queue and are debounced
(:class:`Burst`): one event once the cluster has been quiet for ``quiet_period_s``, at most ``max_delay_s`` after
the burst's first change. With a ``warehouse`` it also reads the cluster's alert state every ``recheck_poll_s`` and
fires when a pending finding's ``for`` ends (reason ``grace_end``), so that the audit deciding whether it fires runs
then, even if the cluster never changes again. The kwargs are names, paths and durations: the connection's hosts,
chroot and credentials are read from the Airflow connection in the triggerer, never serialized or logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from kafka_zk_audit.snapshot.watch import MetadataWatch

log = logging.getLogger(__name__)

GRACE_END = "grace_end"
MAX_LISTED_PATHS = 10
GRACE_SLACK_S = 1.0  # the audit's snapshot must start after the end of the `for`, not at it


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat()


@dataclass
class Burst:
    """The changes since the last event: when the next event is due, and what it says."""

    quiet_s: float
    max_delay_s: float
    first: float | None = None  # monotonic times
    last: float | None = None
    first_wall: float | None = None
    now_due: bool = False
    reasons: Counter = field(default_factory=Counter)
    paths: list[str] = field(default_factory=list)

    def add(self, now: float, reason: str, path: str = "") -> None:
        if self.first is None:
            self.first, self.first_wall = now, time.time()
        self.last = now
        self.reasons[reason] += 1
        if path and path not in self.paths and len(self.paths) < MAX_LISTED_PATHS:
            self.paths.append(path)
        if reason == GRACE_END:
            self.now_due = True

    def due_at(self) -> float | None:
        """The monotonic time the event is due: quiet period after the last change, capped by the max delay."""
        if self.first is None or self.last is None:
            return None
        if self.now_due:
            return self.last
        return min(self.last + self.quiet_s, self.first + self.max_delay_s)

    def take(self, cluster: str) -> dict[str, Any]:
        """The event's payload; the burst starts anew."""
        payload = {"cluster": cluster, "changes": sum(self.reasons.values()), "reasons": dict(self.reasons),
                   "paths": list(self.paths), "first_change_at": _iso(self.first_wall or time.time()),
                   "fired_at": _iso(time.time())}
        self.first = self.last = self.first_wall = None
        self.now_due = False
        self.reasons, self.paths = Counter(), []
        return payload


def pending_due(state: Mapping[str, Any] | None) -> dict[str, datetime]:
    """When each pending finding of an alert state outlives its ``for``: ``since`` + ``for_s``, by dedup key."""
    due = {}
    for key, entry in ((state or {}).get("pending") or {}).items():
        try:
            since = datetime.fromisoformat(str(entry["since"]))
            due[key] = since + timedelta(seconds=float(entry.get("for_s") or 0))
        except (KeyError, TypeError, ValueError):
            continue
    return due


class KafkaMetadataChangeTrigger(BaseEventTrigger):
    """Fires ``{"cluster", "changes", "reasons", "paths", ...}`` when the cluster's watched metadata changed."""

    def __init__(self, cluster: str, zk_conn_id: str, paths: Iterable[str], ignore: Iterable[str] = (),
                 quiet_period_s: float = 10.0, max_delay_s: float = 60.0, warehouse: str | None = None,
                 recheck_poll_s: float = 30.0, persistent: bool | None = None) -> None:
        super().__init__()
        self.cluster = cluster
        self.zk_conn_id = zk_conn_id
        self.paths = list(paths)
        self.ignore = list(ignore)
        self.quiet_period_s = float(quiet_period_s)
        self.max_delay_s = float(max_delay_s)
        self.warehouse = warehouse
        self.recheck_poll_s = float(recheck_poll_s)
        self.persistent = persistent
        self.watch: MetadataWatch | None = None  # while run() runs: the tests look at its arm_count

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "cluster": self.cluster, "zk_conn_id": self.zk_conn_id, "paths": self.paths, "ignore": self.ignore,
            "quiet_period_s": self.quiet_period_s, "max_delay_s": self.max_delay_s, "warehouse": self.warehouse,
            "recheck_poll_s": self.recheck_poll_s, "persistent": self.persistent,
        })

    def _zk_settings(self) -> Any:
        from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook

        return ZooKeeperHook(zk_conn_id=self.zk_conn_id).get_settings()

    def _pending_due(self) -> dict[str, datetime]:
        from kafka_zk_audit.contract.warehouse import Warehouse
        from kafka_zk_audit.report.alert_state import read_state

        try:
            return pending_due(read_state(Warehouse(str(self.warehouse)), self.cluster))
        except Exception as exc:  # an unreadable state must not end the watch: the next poll reads it again
            log.warning("cannot read the alert state of %s: %s", self.cluster, exc)
            return {}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from asgiref.sync import sync_to_async

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

        def on_change(kind: str, path: str) -> None:  # kazoo's threads
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, path))
            except RuntimeError:  # the loop is closed: the trigger is gone
                pass

        settings = await sync_to_async(self._zk_settings)()
        self.watch = watch = MetadataWatch(settings, self.paths, on_change, ignore=self.ignore,
                                           persistent=self.persistent)
        log.info("watching %s on %s as %s: %s", self.cluster, settings.ensemble, settings.identity,
                 ", ".join(watch.paths))
        await asyncio.to_thread(watch.start)
        burst = Burst(self.quiet_period_s, self.max_delay_s)
        next_poll = loop.time() if self.warehouse else None
        due: dict[str, datetime] = {}
        fired: set[tuple[str, datetime]] = set()
        try:
            while True:
                if next_poll is not None and loop.time() >= next_poll:
                    due = await asyncio.to_thread(self._pending_due)
                    next_poll = loop.time() + self.recheck_poll_s
                waiting = {(key, at) for key, at in due.items() if (key, at) not in fired}
                wall = time.time()
                deadlines = [d for d in (burst.due_at(), next_poll) if d is not None]
                if waiting:
                    first_due = min(at for _, at in waiting).timestamp() + GRACE_SLACK_S
                    deadlines.append(loop.time() + max(0.0, first_due - wall))
                timeout = max(0.0, min(deadlines) - loop.time()) if deadlines else None
                try:
                    kind, path = await asyncio.wait_for(queue.get(), timeout)
                    burst.add(loop.time(), kind, path)
                    while not queue.empty():
                        kind, path = queue.get_nowait()
                        burst.add(loop.time(), kind, path)
                except TimeoutError:
                    pass
                wall = time.time()
                for key, at in sorted(waiting):
                    if at.timestamp() + GRACE_SLACK_S <= wall:
                        fired.add((key, at))
                        burst.add(loop.time(), GRACE_END, key)
                at_due = burst.due_at()
                if at_due is not None and at_due <= loop.time():
                    payload = burst.take(self.cluster)
                    log.info("%s changed: %s", self.cluster, payload)
                    yield TriggerEvent(payload)
        finally:
            await asyncio.to_thread(watch.stop)
