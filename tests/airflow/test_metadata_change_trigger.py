"""The watch of a cluster's metadata (the triggerer's event trigger) against a real ZooKeeper: debounced events, a
burst as one event, ignored paths, re-armed watches after a session expiry and a server restart, the child-watch
fallback, the grace-end recheck from the alert state, and its serialized form."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.airflow.triggers.metadata_changes import Burst, KafkaMetadataChangeTrigger, pending_due
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

PATHS = ["/brokers", "/admin", "/consumers"]
STATE = "/brokers/topics/t/partitions/0/state"


def _connect(monkeypatch: pytest.MonkeyPatch, conn_id: str, hosts: str, chroot: str) -> None:
    conn = {"conn_type": "zookeeper", "host": hosts, "extra": {"chroot": chroot, "timeout": 4}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def _trigger(conn_id: str, **kwargs: Any) -> KafkaMetadataChangeTrigger:
    kwargs = {"quiet_period_s": 0.5, "max_delay_s": 5.0, "ignore": ["/consumers/*/offsets/*"], **kwargs}
    return KafkaMetadataChangeTrigger(cluster="c1", zk_conn_id=conn_id, paths=PATHS, **kwargs)


class Running:
    """A trigger's run() on this test's loop: its next event, or none within a time."""

    def __init__(self, trigger: KafkaMetadataChangeTrigger) -> None:
        self.trigger = trigger
        self.events: AsyncIterator = trigger.run()
        self._next: asyncio.Task | None = None

    async def wait(self, probe: Callable[[], bool], timeout: float = 20.0) -> None:
        if self._next is None:  # start the generator, so the watch starts
            self._next = asyncio.ensure_future(self.events.__anext__())
        deadline = asyncio.get_running_loop().time() + timeout
        while not probe():
            assert asyncio.get_running_loop().time() < deadline, "timed out"
            if self._next.done():
                self._next.result()  # raises what the trigger raised
            await asyncio.sleep(0.05)

    async def armed(self, count: int = 1) -> None:
        await self.wait(lambda: self.trigger.watch is not None and self.trigger.watch.arm_count >= count
                        and self.trigger.watch.armed.is_set())

    async def next(self, timeout: float = 15.0) -> dict[str, Any] | None:
        """The next event's payload, or None when none came within ``timeout``."""
        if self._next is None:
            self._next = asyncio.ensure_future(self.events.__anext__())
        done, _ = await asyncio.wait({self._next}, timeout=timeout)
        if not done:
            return None
        event, self._next = self._next.result(), None
        return event.payload

    async def close(self) -> None:
        if self._next is not None:
            self._next.cancel()
            try:
                await self._next
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
        await self.events.aclose()
        assert self.trigger.watch is not None and self.trigger.watch.client is None  # the session is closed


@pytest.fixture
def writer(zk_server: ZooKeeperServer, zk_chroot: str) -> KazooClient:
    client = KazooClient(hosts=zk_server.hosts + zk_chroot)
    client.start(timeout=15)
    client.create(STATE, b'{"leader":1,"isr":[1,2]}', makepath=True)
    client.ensure_path("/consumers/g/offsets/t")
    yield client
    client.stop()
    client.close()


def test_the_burst_is_due_after_its_quiet_period_and_at_most_its_max_delay():
    burst = Burst(quiet_s=2.0, max_delay_s=5.0)
    assert burst.due_at() is None
    burst.add(100.0, "changed", "/a")
    assert burst.due_at() == 102.0
    burst.add(101.5, "changed", "/a")
    burst.add(104.0, "child", "/b")
    assert burst.due_at() == 105.0  # the max delay after the first change
    payload = burst.take("c1")
    assert (payload["cluster"], payload["changes"], payload["reasons"], payload["paths"]) == (
        "c1", 3, {"changed": 2, "child": 1}, ["/a", "/b"])
    assert burst.due_at() is None
    burst.add(200.0, "grace_end", "key")
    assert burst.due_at() == 200.0  # a grace end does not wait for quiet


def test_the_pending_findings_fire_when_their_for_ends():
    state = {"pending": {"k1": {"since": "2026-01-01T00:00:00+00:00", "for_s": 600},
                         "k2": {"since": "2026-01-01T00:05:00+00:00", "for_s": 0}, "bad": {"for_s": 1}}}
    assert pending_due(state) == {"k1": datetime(2026, 1, 1, 0, 10, tzinfo=UTC),
                                  "k2": datetime(2026, 1, 1, 0, 5, tzinfo=UTC)}
    assert pending_due(None) == {}


def test_the_trigger_serializes_to_names_paths_and_durations():
    trigger = _trigger("zk_secret_cluster", warehouse="/wh", recheck_poll_s=7)
    classpath, kwargs = trigger.serialize()
    module, name = classpath.rsplit(".", 1)
    again = getattr(importlib.import_module(module), name)(**kwargs)
    assert again.serialize() == (classpath, kwargs)
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert kwargs["zk_conn_id"] == "zk_secret_cluster" and kwargs["quiet_period_s"] == 0.5


@pytest.mark.zk
def test_a_write_fires_one_debounced_event_and_ignored_paths_none(zk_server, zk_chroot, writer, monkeypatch):
    _connect(monkeypatch, "zk_watch_one", zk_server.hosts, zk_chroot)

    async def scenario() -> None:
        running = Running(_trigger("zk_watch_one"))
        try:
            await running.armed()
            await asyncio.to_thread(writer.create, "/consumers/g/offsets/t/0", b"5")
            await asyncio.to_thread(writer.create, "/elsewhere", b"")
            assert await running.next(timeout=2.0) is None  # offsets and unwatched paths change nothing
            await asyncio.to_thread(writer.set, STATE, b'{"leader":1,"isr":[1]}')
            payload = await running.next()
            assert payload["cluster"] == "c1" and payload["paths"] == [STATE], payload
            assert payload["reasons"] == {"changed": 1}
            assert await running.next(timeout=1.5) is None
        finally:
            await running.close()

    asyncio.run(scenario())


@pytest.mark.zk
def test_a_burst_of_isr_changes_makes_one_event_and_a_long_one_waits_at_most_the_max_delay(
        zk_server, zk_chroot, writer, monkeypatch):
    _connect(monkeypatch, "zk_watch_burst", zk_server.hosts, zk_chroot)

    async def scenario() -> None:
        running = Running(_trigger("zk_watch_burst", quiet_period_s=1.0, max_delay_s=30.0))
        try:
            await running.armed()

            def burst(count: int, pause: float = 0.0) -> None:
                import time

                for i in range(count):
                    writer.set(STATE, json.dumps({"leader": 1, "isr": [1, 2][: 1 + i % 2]}).encode())
                    time.sleep(pause)

            await asyncio.to_thread(burst, 300)
            payload = await running.next()
            assert payload["changes"] == 300, payload
            assert await running.next(timeout=2.0) is None
        finally:
            await running.close()
        capped = Running(_trigger("zk_watch_burst", quiet_period_s=1.0, max_delay_s=1.5))
        try:
            await capped.armed()
            writes = asyncio.ensure_future(asyncio.to_thread(burst, 40, 0.1))  # 4 s, never quiet for 1 s
            first = await capped.next(timeout=10.0)
            assert not writes.done() and first is not None and 0 < first["changes"] < 40
            await writes
        finally:
            await capped.close()

    asyncio.run(scenario())


@pytest.mark.zk
def test_a_session_expiry_rearms_the_watches(zk_server, zk_chroot, writer, monkeypatch):
    _connect(monkeypatch, "zk_watch_expiry", zk_server.hosts, zk_chroot)

    async def scenario() -> None:
        trigger = _trigger("zk_watch_expiry")
        running = Running(trigger)
        try:
            await running.armed()
            session_id, password = trigger.watch.client.client_id
            # the standard way to expire a session: another client joins it and closes it
            thief = KazooClient(hosts=zk_server.hosts, client_id=(session_id, password))
            await asyncio.to_thread(thief.start, 15)
            await asyncio.to_thread(thief.stop)
            thief.close()
            await running.armed(2)
            assert trigger.watch.client.client_id[0] != session_id  # a new session
            resync = await running.next()
            assert resync["reasons"] == {"resync": 1}, resync
            await asyncio.to_thread(writer.set, STATE, b'{"leader":2,"isr":[2]}')
            payload = await running.next()
            assert payload["paths"] == [STATE], payload
        finally:
            await running.close()

    asyncio.run(scenario())


@pytest.mark.zk
def test_a_zookeeper_restart_rearms_the_watches(tmp_path: Path, monkeypatch):
    server = ZooKeeperServer(tmp_path / "zk", port=free_port()).start()
    try:
        server.ensure_chroot("/k")
        _connect(monkeypatch, "zk_watch_restart", server.hosts, "/k")
        writer = KazooClient(hosts=server.hosts + "/k")

        async def scenario() -> None:
            trigger = _trigger("zk_watch_restart")
            running = Running(trigger)
            try:
                await running.armed()
                await asyncio.to_thread(server.stop)
                await asyncio.to_thread(server.start)
                await running.armed(2)
                resync = await running.next()
                assert resync["reasons"] == {"resync": 1}, resync
                await asyncio.to_thread(writer.start, 15)
                await asyncio.to_thread(writer.create, "/brokers/ids/7", b"{}", makepath=True)
                payload = await running.next()
                assert "/brokers/ids/7" in payload["paths"], payload
            finally:
                await running.close()

        asyncio.run(scenario())
        writer.stop()
        writer.close()
    finally:
        server.stop()


@pytest.mark.zk
def test_the_child_watch_fallback_sees_new_znodes_and_their_changes(zk_server, zk_chroot, writer, monkeypatch):
    _connect(monkeypatch, "zk_watch_legacy", zk_server.hosts, zk_chroot)

    async def scenario() -> None:
        trigger = _trigger("zk_watch_legacy", persistent=False)
        running = Running(trigger)
        try:
            await running.armed()
            assert trigger.watch.persistent is False
            await asyncio.to_thread(writer.create, "/brokers/topics/u/partitions/0/state", b"{}", makepath=True)
            created = await running.next()
            assert created["reasons"].get("child"), created
            await asyncio.sleep(0.5)  # the new znodes' watches are armed off the callback thread
            await asyncio.to_thread(writer.set, "/brokers/topics/u/partitions/0/state", b'{"leader":1}')
            changed = await running.next()
            assert changed["paths"] == ["/brokers/topics/u/partitions/0/state"], changed
        finally:
            await running.close()

    asyncio.run(scenario())


@pytest.mark.zk
def test_a_pending_finding_is_rechecked_when_its_for_ends(zk_server, zk_chroot, writer, monkeypatch, tmp_path):
    _connect(monkeypatch, "zk_watch_grace", zk_server.hosts, zk_chroot)
    state = tmp_path / "wh" / "alerts" / "c1" / "state.json"
    state.parent.mkdir(parents=True)
    since = datetime.now(UTC) - timedelta(seconds=8)
    state.write_text(json.dumps({"version": 1, "cluster": "c1", "firing": {}, "pending": {
        "kafka-zk-audit:c1:under_replicated:abc": {"since": since.isoformat(), "for_s": 10}}}))

    async def scenario() -> None:
        running = Running(_trigger("zk_watch_grace", warehouse=str(tmp_path / "wh"), recheck_poll_s=0.5))
        try:
            payload = await running.next(timeout=15.0)
            assert payload["reasons"] == {"grace_end": 1}, payload
            assert datetime.fromisoformat(payload["fired_at"]) >= since + timedelta(seconds=10)
            assert await running.next(timeout=2.0) is None  # once per pending finding and due time
        finally:
            await running.close()

    asyncio.run(scenario())


@pytest.mark.zk
def test_an_unreachable_cluster_fires_nothing_and_stops_cleanly(monkeypatch):
    _connect(monkeypatch, "zk_watch_down", f"127.0.0.1:{free_port()}", "/k")

    async def scenario() -> None:
        running = Running(_trigger("zk_watch_down"))
        try:
            assert await running.next(timeout=3.0) is None
            assert running.trigger.watch.arm_count == 0
        finally:
            await running.close()

    asyncio.run(scenario())
