"""The multiRead request on a real ZooKeeper 3.8: one request, many reads, each with its own result or error."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.serialization import GetChildren, GetData
from kazoo.security import CREATOR_ALL_ACL

from kafka_zk_audit.snapshot.multiread import MultiRead, ReadError

pytestmark = pytest.mark.zk


def multi_read(client: KazooClient, *operations) -> list:
    result = client.handler.async_result()
    client._call(MultiRead(list(operations)), result)
    return result.get(timeout=30)


def test_each_read_has_its_own_result_or_error(zk_server, zk_chroot, zk_client):
    owner = KazooClient(hosts=zk_server.hosts + zk_chroot, auth_data=[("digest", "kafka:kafka-secret")])
    owner.start()
    owner.create("/open", b"hello")
    owner.create("/open/child", b"")
    owner.create("/secret", b"s3cret", acl=CREATOR_ALL_ACL)
    owner.create("/secret/child", b"", acl=CREATOR_ALL_ACL)
    owner.stop()
    reader = KazooClient(hosts=zk_server.hosts)  # no identity, no chroot: full paths
    reader.start()
    base = zk_chroot
    results = multi_read(
        reader,
        GetData(f"{base}/open", None),
        GetData(f"{base}/secret", None),
        GetChildren(f"{base}/secret", None),
        GetData(f"{base}/gone", None),
        GetChildren(f"{base}/open", None),
    )
    reader.stop()
    data, stat = results[0]
    assert data == b"hello" and stat.numChildren == 1 and stat.dataLength == 5
    assert isinstance(results[1], ReadError) and isinstance(results[1].error, NoAuthError)
    assert isinstance(results[2], ReadError) and isinstance(results[2].error, NoAuthError)
    assert isinstance(results[3], ReadError) and isinstance(results[3].error, NoNodeError)
    assert results[4] == ["child"]
    assert results.response_bytes > len(b"hello") + 68 + len("child")


def test_large_responses_arrive_whole(zk_server, zk_chroot, zk_client):
    sizes = [0, 1, 500_000, 1_000_000]
    for i, size in enumerate(sizes):
        zk_client.create(f"/z{i}", bytes([i % 256]) * size)
    names = [f"c{i:05d}" for i in range(20_000)]
    zk_client.ensure_path("/wide")
    for start in range(0, len(names), 1000):
        transaction = zk_client.transaction()
        for name in names[start:start + 1000]:
            transaction.create(f"/wide/{name}")
        assert all(isinstance(result, str) for result in transaction.commit())
    reads = [GetData(f"{zk_chroot}/z{i}", None) for i in range(len(sizes))]
    results = multi_read(zk_client, *reads, GetChildren(f"{zk_chroot}/wide", None))
    assert [len(data) for data, _ in results[:-1]] == sizes
    assert sorted(results[-1]) == names
    assert results.response_bytes >= sum(sizes) + 20_000 * 6
