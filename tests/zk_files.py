"""One private ZooKeeper whose own files (several snapshots, several logs) the files-source and history tests read.

``zk_files`` (session-scoped, shared by tests/snapshot/files and tests/history through tests/conftest.py) starts a
real ZooKeeper with a small ``snapCount`` and a separate ``dataLogDir``, writes a simulated Kafka cluster under
``/kafka`` and then a few hundred more writes of every kind Kafka and its tools make (setData, deletes, a multi, an
ACL change, an ephemeral owner's session closed). At two moments it takes a live snapshot with the walker —
the oracle of the files rebuild — and records the server's zxid and time. The server is stopped at the end so the logs
are complete; the files stay for the whole session (treat them as read-only: copy before corrupting).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_acl

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, four_letter_word, free_port

CHROOT = "/kafka"
SPEC = ClusterSpec(brokers=3, topics=12, partitions=3, groups=2, consumers_per_group=2, seed=13)


@dataclass(frozen=True)
class LiveMoment:
    """A live snapshot taken while the server ran, and the server's zxid and wall time right after it."""

    snapshot_id: str
    zxid: int
    time: datetime


@dataclass(frozen=True)
class ZkFiles:
    """The stopped server's files and the live snapshots taken of it on the way."""

    data_dir: Path  # dataDir: version-2/snapshot.*
    log_dir: Path  # dataLogDir: version-2/log.*
    warehouse: Warehouse  # holds the live snapshots (the oracles)
    settings: ZkSettings  # how the live snapshots connected (hosts, chroot)
    early: LiveMoment  # after the simulated cluster was written
    late: LiveMoment  # after the later writes, before the sessions closed
    final_zxid: int  # the last zxid the server logged


def server_zxid(server: ZooKeeperServer) -> int:
    """The last zxid the server processed (``srvr``)."""
    answer = four_letter_word(server.host, server.port, "srvr")
    return int(answer.split("Zxid:")[1].split()[0], 16)


def _live_moment(server: ZooKeeperServer, settings: ZkSettings, warehouse: Warehouse, name: str) -> LiveMoment:
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=15)
    try:
        write_snapshot(reader, settings, warehouse, name)
        zxid = server_zxid(server)  # the walk wrote nothing: the tree is the same at this zxid
    finally:
        reader.stop()
        reader.close()
    moment = datetime.now(UTC)
    time.sleep(0.05)  # later txns get a later timestamp than ``moment``
    return LiveMoment(name, zxid, moment)


def _later_writes(admin: KazooClient) -> None:
    """A few hundred writes of every kind: setData, create/delete, a multi, setACL, an ephemeral session closed."""
    topics = sorted(admin.get_children("/brokers/topics"))
    for round_ in range(12):
        for topic in topics:
            state = f"/brokers/topics/{topic}/partitions/0/state"
            admin.set(state, b'{"controller_epoch":2,"leader":1,"version":1,"leader_epoch":%d,"isr":[1,2]}' % round_)
    for index in range(40):
        admin.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/x"}', sequence=True)
        admin.create(f"/admin/delete_topics/doomed-{index}", b"")
    for index in range(0, 40, 2):
        admin.delete(f"/admin/delete_topics/doomed-{index}")
    transaction = admin.transaction()
    transaction.check("/controller_epoch", admin.get("/controller_epoch")[1].version)
    transaction.set_data("/controller_epoch", b"7")
    transaction.create("/isr_change_notification/isr_change_", b'{"version":1,"partitions":[]}', sequence=True)
    transaction.commit()
    failed = admin.transaction()  # a failed multi: no effect, but it takes a zxid
    failed.create("/never-created", b"")
    failed.delete("/no-such-node")
    failed.commit()
    admin.create("/nulldata", None)
    admin.set_acls("/config/users", [make_acl("world", "anyone", all=True), make_acl("ip", "127.0.0.1", read=True)])
    admin.set_acls("/config/users", [make_acl("world", "anyone", all=True)])


@pytest.fixture(scope="session")
def zk_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkFiles]:
    """A stopped ZooKeeper's dataDir and dataLogDir with several snapshots and logs, and two live oracles."""
    base = tmp_path_factory.mktemp("zk_files")
    log_dir = base / "txnlog"
    server = ZooKeeperServer(
        base / "server", port=free_port(), heap_mb=256,
        extra_config=("snapCount=80", f"dataLogDir={log_dir}", "autopurge.purgeInterval=0"),
    ).start()
    try:
        server.ensure_chroot(CHROOT)
        settings = ZkSettings(hosts=server.hosts, chroot=CHROOT)
        warehouse = Warehouse(str(base / "warehouse"))
        with Simulator(hosts=server.hosts + CHROOT) as simulator:
            simulator.write(SPEC)
            early = _live_moment(server, settings, warehouse, "20260101T000000Z-early")
            _later_writes(simulator.admin)
            holder = KazooClient(hosts=server.hosts + CHROOT)
            holder.start(timeout=15)
            holder.create("/brokers/ids/99", b'{"version":5,"host":"gone","port":9092}', ephemeral=True)
            holder.create("/consumers/gone-group/owners/t/0", b"gone-consumer", ephemeral=True, makepath=True)
            holder.stop()  # closeSession deletes its ephemerals
            holder.close()
            late = _live_moment(server, settings, warehouse, "20260101T000001Z-late")
        final_zxid = server_zxid(server)
    finally:
        server.stop()
    yield ZkFiles(server.data_dir / "data", log_dir, warehouse, settings, early, late, final_zxid)
