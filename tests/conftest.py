"""Session-wide real parts: one ZooKeeper server and one Spark session for the whole test run."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parents[1]
_chroot_counter = itertools.count()


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real standalone ZooKeeper on 127.0.0.1 and a free port, stopped at the end."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), port=free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def zk_chroot(zk_server: ZooKeeperServer, request: pytest.FixtureRequest) -> str:
    """A fresh chroot (e.g. ``/t007_test_name``) so tests sharing the server never see each other."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    chroot = f"/t{next(_chroot_counter):03d}_{name}"
    zk_server.ensure_chroot(chroot)
    return chroot


@pytest.fixture
def zk_client(zk_server: ZooKeeperServer, zk_chroot: str) -> Iterator[KazooClient]:
    """A kazoo client rooted at the test's chroot, for writing fixtures."""
    client = KazooClient(hosts=zk_server.hosts + zk_chroot)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="session")
def spark():
    """The one in-process Spark session for check and normalizer function tests."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from kafka_zk_audit.audit.session import get_spark

    session = get_spark("kafka-zk-audit-tests", master="local[2]", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def chromium_ok() -> str:
    """Debian's headless Chromium (installed when missing); a failure to get one fails the test with its reason."""
    from kafka_zk_audit_testing.browser import ensure_chromium

    try:
        return ensure_chromium()
    except Exception as exc:  # any failure to get a browser fails the test, with its reason
        pytest.fail(str(exc))
