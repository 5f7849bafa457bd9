"""Watch a cluster's Kafka metadata for changes: one read-only ZooKeeper session, notifications only.

:class:`MetadataWatch` keeps one kazoo session and arms a persistent recursive watch (ZooKeeper 3.6's
``addWatch``, opcode 106; kazoo 2.11 has no call for it, so the request and the dispatch of its events are here)
on each watched path. A server without ``addWatch`` (< 3.6) answers *unimplemented*: the watch falls back to
one-shot child and exists watches on every znode under the paths, re-armed at each notification. Every notification
is handed to ``on_change(kind, path)`` on kazoo's threads; the watch never writes and never reads data.

When the connection comes back (after a server restart, a connection loss or a session expiry) the watches are
armed again and ``on_change("resync", "")`` is called once: what changed while the watch was away is unknown.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, UnimplementedError
from kazoo.protocol.serialization import Watch, int_struct, write_string
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from kafka_zk_audit.snapshot.connection import ZkSettings

log = logging.getLogger(__name__)

PERSISTENT_RECURSIVE = 1  # AddWatchMode.PERSISTENT_RECURSIVE of ZooKeeper's addWatch
RESYNC = "resync"
# ZooKeeper's watcher event types (zookeeper.proto) as the kinds handed to on_change
_KINDS = {1: "created", 2: "deleted", 3: "changed", 4: "child"}

# kazoo's reconnection: forever, backing off to one attempt per 10 s (an unreachable ensemble costs one attempt and one
# log line per 10 s, for as long as the triggerer runs)
RECONNECT = {"max_tries": -1, "delay": 0.2, "backoff": 2, "max_delay": 10.0}

OnChange = Callable[[str, str], None]


class AddWatch:
    """ZooKeeper's ``addWatch`` request (3.6+): a persistent (recursive) watch on a path."""

    type = 106

    def __init__(self, path: str, mode: int = PERSISTENT_RECURSIVE) -> None:
        self.path, self.mode = path, mode

    def serialize(self) -> bytearray:
        out = bytearray(write_string(self.path))
        out.extend(int_struct.pack(self.mode))
        return out

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> bool:
        return True

    def __repr__(self) -> str:
        return f"AddWatch(path={self.path!r}, mode={self.mode})"


class MetadataWatch:
    """One cluster's watch: ``start()`` returns at once; the session connects (and reconnects) on its own."""

    def __init__(self, settings: ZkSettings, paths: Iterable[str], on_change: OnChange, *,
                 ignore: Iterable[str] = (), persistent: bool | None = None) -> None:
        """``persistent``: None asks the server (fallback on *unimplemented*), False forces the child watches."""
        self.settings = settings
        self.paths = tuple(sorted({"/" + p.strip("/") for p in paths}))
        self.ignore = tuple(ignore)
        self.on_change = on_change
        self.persistent = persistent
        self.client: KazooClient | None = None
        self.armed = threading.Event()
        self.arm_count = 0  # how many times the watches were armed (1 + the reconnections)
        self._lock = threading.Lock()
        self._stopped = False

    # --- life cycle -----------------------------------------------------------------------------------------------
    def start(self) -> None:
        kwargs = self.settings.kazoo_kwargs()
        kwargs["read_only"] = False  # the watch needs a session of the quorum's (a read-only server's can lag)
        kwargs["connection_retry"] = dict(RECONNECT)
        client = KazooClient(**kwargs)
        connection = client._connection
        original = connection._read_watch_event

        def read_watch_event(buffer: bytes, offset: int) -> Any:
            watch, _ = Watch.deserialize(buffer, offset)
            self._persistent_event(client, watch.type, watch.path)
            return original(buffer, offset)

        connection._read_watch_event = read_watch_event  # the persistent watches' events come here too
        client.add_listener(self._on_state)
        self.client = client
        client.start_async()

    def stop(self) -> None:
        self._stopped = True
        client, self.client = self.client, None
        if client is not None:
            client.stop()
            client.close()

    # --- arming ---------------------------------------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        # kazoo's connection thread: no blocking call here, the arming runs on a thread of its own
        if state == KazooState.CONNECTED and not self._stopped and self.client is not None:
            self.client.handler.spawn(self._arm)
        elif state in (KazooState.SUSPENDED, KazooState.LOST):
            self.armed.clear()

    def _arm(self) -> None:
        client = self.client
        if client is None or self._stopped:
            return
        with self._lock:
            try:
                if self.persistent is not False:
                    try:
                        for path in self.paths:
                            result = client.handler.async_result()
                            client._call(AddWatch(client.chroot + path), result)
                            result.get(timeout=self.settings.timeout)
                        self.persistent = True
                    except UnimplementedError:
                        log.info("ZooKeeper at %s has no addWatch (< 3.6): child and exists watches instead",
                                 self.settings.ensemble)
                        self.persistent = False
                if self.persistent is False:
                    for path in self.paths:
                        self._arm_tree(client, path)
            except Exception as exc:  # the connection went away meanwhile: the next CONNECTED arms again
                log.info("arming the watches on %s failed (%s); again at the next connection",
                         self.settings.ensemble, type(exc).__name__)
                return
            self.arm_count += 1
            resync = self.arm_count > 1
            self.armed.set()
        if resync:
            self.on_change(RESYNC, "")

    def _arm_tree(self, client: KazooClient, path: str) -> None:
        """Child watch and exists watch on ``path`` and every znode below (the fallback of servers < 3.6)."""
        pending = [path]
        while pending:
            node = pending.pop()
            if client.exists(node, watch=self._legacy_event) is None:
                continue
            try:
                children = client.get_children(node, watch=self._legacy_event)
            except NoNodeError:
                continue
            pending.extend(f"{node.rstrip('/')}/{child}" for child in children)

    # --- notifications --------------------------------------------------------------------------------------------
    def _persistent_event(self, client: KazooClient, kind: int, path: str) -> None:
        if self.persistent and not self._stopped and kind in _KINDS:
            self._notify(_KINDS[kind], client.unchroot(path))

    def _legacy_event(self, event: WatchedEvent) -> None:
        # kazoo's callback thread: re-arm the one-shot watches that fired (and below a new child) off this thread
        if self._stopped or self.client is None or event.type == EventType.NONE:
            return
        self._notify({EventType.CREATED: "created", EventType.DELETED: "deleted", EventType.CHANGED: "changed",
                      EventType.CHILD: "child"}.get(event.type, "changed"), event.path)
        if event.type != EventType.DELETED:
            self.client.handler.spawn(self._rearm_legacy, event.path)

    def _rearm_legacy(self, path: str) -> None:
        client = self.client
        if client is None or self._stopped:
            return
        try:
            self._arm_tree(client, path)
        except Exception as exc:  # connection lost: the whole tree is armed again at the next connection
            log.debug("re-arming %s failed: %s", path, type(exc).__name__)

    def _notify(self, kind: str, path: str) -> None:
        if not self.watched(path):
            return
        self.on_change(kind, path)

    def watched(self, path: str) -> bool:
        """Whether a change at ``path`` counts: under a watched path and not ignored."""
        under = any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.paths)
        return under and not any(fnmatch.fnmatchcase(path, pattern) for pattern in self.ignore)
