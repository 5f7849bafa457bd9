"""The snapshot against real ZooKeeper processes that fail mid-walk: it resumes and loses nothing, or it
leaves no snapshot and says what happened.

Each fault is injected from the walk's progress hook once a third of the tree has been read. To be sure
reads are in flight when a server goes away, the server is first frozen (SIGSTOP: it accepts requests but
answers none), then killed (SIGKILL) a moment later while the walk waits for its answers.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.faults import SnapshotInterrupted
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit.snapshot.walker import WalkStats
from kafka_zk_audit_testing.zk_server import ZooKeeperEnsemble, ZooKeeperServer, free_port

pytestmark = pytest.mark.zk

PARENTS, CHILDREN = 30, 100  # 3,000 leaves with 1 KB of data each, 3,032 znodes with the containers
FAULT_AT_READS = 1000
# Small requests and few of them, so that a fault finds reads in flight and more still to send.
OPTIONS = SnapshotOptions(batch_ops=50, max_in_flight=4, reconnect_timeout_s=30)


def write_tree(hosts: str) -> None:
    client = KazooClient(hosts=hosts)
    client.start(timeout=30)
    client.ensure_path("/tree")
    for p in range(PARENTS):
        transaction = client.transaction()
        transaction.create(f"/tree/p{p:02d}", f"parent {p}".encode())
        for c in range(CHILDREN):
            transaction.create(f"/tree/p{p:02d}/c{c:03d}", bytes([p, c]) * 512)
        assert all(isinstance(result, str) for result in transaction.commit())
    client.stop()
    client.close()


def snapshot(hosts: str, warehouse: Warehouse, snapshot_id: str, progress: Callable[[WalkStats], None] | None = None,
             options: SnapshotOptions = OPTIONS) -> tuple[dict, KazooClient]:
    """Walk the ensemble at ``hosts`` into the warehouse; returns the manifest and the (stopped) client."""
    settings = ZkSettings(hosts=hosts)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=30)
    try:
        return write_snapshot(reader, settings, warehouse, snapshot_id, options, progress=progress), reader
    finally:
        reader.stop()
        reader.close()


def rows(warehouse: Warehouse, snapshot_id: str) -> dict[str, tuple]:
    """path -> (data, mzxid, version, cversion, num_children) of every znode recorded."""
    table = pq.read_table(warehouse.snapshot_dir(snapshot_id)).to_pylist()
    return {r["path"]: (r["data"], r["mzxid"], r["version"], r["cversion"], r["num_children"]) for r in table}


class FaultAt:
    """A progress hook that runs ``fault`` once, when the walk has answered ``reads`` reads."""

    def __init__(self, reads: int, fault: Callable[[], None]) -> None:
        self.reads, self.fault = reads, fault
        self.fired_at: int | None = None

    def __call__(self, stats: WalkStats) -> None:
        if self.fired_at is None and stats.reads >= self.reads:
            self.fired_at = stats.reads
            self.fault()


def freeze_then(server: ZooKeeperServer, then: Callable[[], None], delay: float = 2.0) -> threading.Timer:
    """Freeze the server now and run ``then`` (which kills it) in ``delay`` seconds, in another thread, returned. The
    delay gives the walk time to send its next reads to the frozen server, so that the kill finds them in flight. With
    half a second, on a machine loaded to 15 runnable processes, a walk once recorded no interruption: reads the
    client had queued but not yet sent are sent again after a reconnect, without an error."""
    os.kill(server.pid, signal.SIGSTOP)
    timer = threading.Timer(delay, then)
    timer.daemon = True
    timer.start()
    return timer


def assert_resumed_and_equal(manifest: dict, fault: FaultAt, faulted: dict, baseline: dict) -> None:
    assert fault.fired_at is not None and FAULT_AT_READS <= fault.fired_at < manifest["reads"]
    assert faulted == baseline, "the resumed walk must record exactly what a walk without the fault records"
    assert len(baseline) == 1 + 1 + PARENTS * (1 + CHILDREN)  # the root, /tree, parents and leaves
    assert manifest["znodes"] == len(baseline) and manifest["vanished"] == 0


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    servers = ZooKeeperEnsemble(tmp_path_factory.mktemp("ensemble"), heap_mb=192).start()
    write_tree(servers.hosts)
    yield servers
    servers.stop()


def test_killing_the_server_the_auditor_reads_from_mid_walk(ensemble, tmp_path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    snapshot(ensemble.hosts, warehouse, "20260101T000000Z")
    killed: list[ZooKeeperServer] = []
    readers: list[KazooClient] = []

    def kill_connected_server() -> None:
        server = ensemble.server_of_session(readers[0].client_id[0])
        killed.append(server)
        freeze_then(server, server.kill)

    fault = FaultAt(FAULT_AT_READS, kill_connected_server)
    settings = ZkSettings(hosts=ensemble.hosts)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=30)
    readers.append(reader)
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000001Z", OPTIONS, progress=fault)
    now_on = ensemble.server_of_session(reader.client_id[0])
    reader.stop()
    reader.close()

    assert_resumed_and_equal(manifest, fault, rows(warehouse, "20260101T000001Z"), rows(warehouse, "20260101T000000Z"))
    assert killed and not killed[0].is_serving() and now_on not in (None, killed[0])
    (interruption,) = manifest["interruptions"]
    assert interruption["error"] == "ConnectionLoss" and interruption["requeued_reads"] > 0
    assert warehouse.complete_snapshots() == ["20260101T000000Z", "20260101T000001Z"]


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path / "zk", port=free_port(), heap_mb=192).start()
    write_tree(server.hosts)
    yield server
    server.stop()


def test_a_standalone_server_restarted_mid_walk(standalone, tmp_path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    snapshot(standalone.hosts, warehouse, "20260101T000000Z")

    def restart() -> None:
        standalone.kill()
        standalone.start()

    restarts: list[threading.Timer] = []
    fault = FaultAt(FAULT_AT_READS, lambda: restarts.append(freeze_then(standalone, restart)))
    manifest, _ = snapshot(standalone.hosts, warehouse, "20260101T000001Z", fault)
    # the walk may finish as soon as the new server accepts it, before the restart has seen it serve: wait for the
    # restart, or the fixture's stop races it (the restarting thread then sees its server exit)
    for timer in restarts:
        timer.join(timeout=120)
    assert_resumed_and_equal(manifest, fault, rows(warehouse, "20260101T000001Z"), rows(warehouse, "20260101T000000Z"))
    (interruption,) = manifest["interruptions"]
    assert interruption["error"] == "ConnectionLoss"
    assert interruption["requeued_reads"] > 0 and interruption["reconnected_after_s"] > 0


def expire_session(hosts: str, reader: KazooClient) -> None:
    """Expire the reader's session the kazoo way: a second client on the same session id and password closes it."""
    twin = KazooClient(hosts=hosts, client_id=reader.client_id)
    twin.start(timeout=30)
    twin.stop()
    twin.close()


def test_a_session_expired_mid_walk(zk_server, zk_chroot, tmp_path):
    hosts = zk_server.hosts + zk_chroot
    write_tree(hosts)
    warehouse = Warehouse(str(tmp_path / "wh"))
    snapshot(hosts, warehouse, "20260101T000000Z")
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=30)
    first_session = reader.client_id[0]
    fault = FaultAt(FAULT_AT_READS, lambda: expire_session(zk_server.hosts, reader))
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000001Z", OPTIONS, progress=fault)
    second_session = reader.client_id[0]
    reader.stop()
    reader.close()
    assert_resumed_and_equal(manifest, fault, rows(warehouse, "20260101T000001Z"), rows(warehouse, "20260101T000000Z"))
    assert second_session != first_session, "the walk went on in a new session"
    assert manifest["interruptions"], "the expiry was noticed and survived"
    assert all(i["error"] in ("ConnectionLoss", "SessionExpiredError") for i in manifest["interruptions"])


def test_no_snapshot_when_the_ensemble_stays_away(standalone, tmp_path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    fault = FaultAt(FAULT_AT_READS, lambda: freeze_then(standalone, standalone.kill, delay=0.2))
    options = SnapshotOptions(batch_ops=50, max_in_flight=4, reconnect_timeout_s=3)
    with pytest.raises(SnapshotInterrupted, match=r"lost ZooKeeper mid-walk \(ConnectionLoss\) after \d+ reads and "
                                                  r"could not reconnect within 3s.*no snapshot was written"):
        snapshot(standalone.hosts, warehouse, "20260101T000000Z", fault, options)
    assert warehouse.complete_snapshots() == []
    assert not Path(warehouse.snapshot_dir("20260101T000000Z")).exists()


def test_no_snapshot_beyond_the_retry_budget(standalone, tmp_path):
    warehouse = Warehouse(str(tmp_path / "wh"))

    def freeze_briefly() -> None:  # the reads in flight time out: one interruption, and the budget is zero
        os.kill(standalone.pid, signal.SIGSTOP)
        thaw = threading.Timer(1.5, os.kill, (standalone.pid, signal.SIGCONT))
        thaw.daemon = True
        thaw.start()

    options = SnapshotOptions(batch_ops=50, max_in_flight=4, max_reconnects=0, request_timeout_s=0.5)
    with pytest.raises(SnapshotInterrupted, match=r"lost ZooKeeper 1 times during the walk \(last: "
                                                  r"OperationTimeoutError\).*more than the retry budget"):
        snapshot(standalone.hosts, warehouse, "20260101T000000Z", FaultAt(FAULT_AT_READS, freeze_briefly), options)
    assert warehouse.complete_snapshots() == []
