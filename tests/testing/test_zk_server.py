"""The local ZooKeeper helpers: a standalone server that can be killed and restarted, and a 3-server ensemble."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit_testing.zk_server import ZooKeeperEnsemble, ZooKeeperServer, four_letter_word, free_port

pytestmark = pytest.mark.zk


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def jvm_options(pid: int) -> list[str]:
    return [arg for arg in Path(f"/proc/{pid}/cmdline").read_text().split("\0") if arg.startswith("-X")]


def test_a_killed_server_restarts_with_its_data(tmp_path):
    """(Started with the JVM's quick JIT only, the default; restarted with the full JIT, as the benchmarks' load
    servers run.)"""
    server = ZooKeeperServer(tmp_path / "zk", port=free_port(), heap_mb=128).start()
    try:
        assert server.mode() == "standalone"
        client = KazooClient(hosts=server.hosts)
        client.start(timeout=30)
        client.create("/kept", b"across restarts")
        client.stop()
        pid = server.pid
        assert jvm_options(pid) == ["-Xmx128m", "-XX:TieredStopAtLevel=1"]
        server.kill()
        assert not alive(pid) and server.pid is None and not server.is_serving()
        server.c1_only = False
        server.start()
        assert server.pid != pid and jvm_options(server.pid) == ["-Xmx128m"]
        client = KazooClient(hosts=server.hosts)
        client.start(timeout=30)
        assert client.get("/kept")[0] == b"across restarts"
        client.stop()
    finally:
        server.stop()
    assert not server.is_serving()


def test_an_ensemble_of_three_real_servers_on_loopback(tmp_path):
    ensemble = ZooKeeperEnsemble(tmp_path / "ensemble", heap_mb=128)
    servers = ensemble.servers
    ports = [p for peer in servers[0].peers for p in (peer.client_port, peer.quorum_port, peer.election_port)]
    assert len(set(ports)) == 9 and [s.port for s in servers] == [peer.client_port for peer in servers[0].peers]
    ensemble.start()
    try:
        for server in servers:
            config = (server.data_dir / "zoo.cfg").read_text()
            assert set(re.findall(r"=(\d+\.\d+\.\d+\.\d+)", config)) == {"127.0.0.1"}
            assert (server.data_dir / "data" / "myid").read_text().strip() == str(server.server_id)
            assert four_letter_word("127.0.0.1", server.port, "ruok") == "imok"
        assert sorted(server.mode() for server in servers) == ["follower", "follower", "leader"]
        assert ensemble.hosts == ",".join(f"127.0.0.1:{s.port}" for s in servers)

        writer = KazooClient(hosts=servers[0].hosts)
        writer.start(timeout=30)
        writer.create("/replicated", b"by server 1")
        reader = KazooClient(hosts=servers[2].hosts)
        reader.start(timeout=30)
        reader.sync("/replicated")
        assert reader.get("/replicated")[0] == b"by server 1"
        assert ensemble.server_of_session(reader.client_id[0]) is servers[2]
        reader.stop()

        leader = ensemble.leader()
        leader_pid = leader.pid
        leader.kill()
        assert not alive(leader_pid)
        survivors = [s for s in servers if s is not leader]
        deadline = time.monotonic() + 60
        while sorted(filter(None, (s.mode() for s in survivors))) != ["follower", "leader"]:
            assert time.monotonic() < deadline, "the two survivors elect a new leader"
            time.sleep(0.2)
        writer.set("/replicated", b"after the leader died")  # the writer moves to a survivor
        assert writer.get("/replicated")[0] == b"after the leader died"
        writer.stop()
    finally:
        pids = [s.pid for s in servers if s.pid]
        ensemble.stop()
    assert not any(alive(pid) for pid in pids)
    assert not any(s.is_serving() for s in servers)


def test_threads_that_start_servers_side_by_side_never_get_the_same_port():
    """The fleet run starts its Spark cluster in a thread while the receivers take their ports."""
    barrier = threading.Barrier(16)
    ports: list[int] = []

    def take() -> None:
        barrier.wait()
        ports.extend(free_port() for _ in range(20))

    threads = [threading.Thread(target=take) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ports) == 320
    assert len(set(ports)) == len(ports)
