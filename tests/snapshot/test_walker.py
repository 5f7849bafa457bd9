"""The snapshot on a real ZooKeeper: every znode's data and stat round-trip, in both read modes."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id, read_manifest
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.walker import SnapshotOptions, TreeWalker, write_snapshot
from kafka_zk_audit_testing.zk_server import four_letter_word

pytestmark = pytest.mark.zk

STAT_FIELDS = {
    "czxid": "czxid", "mzxid": "mzxid", "pzxid": "pzxid", "ctime": "ctime", "mtime": "mtime",
    "version": "version", "cversion": "cversion", "aversion": "aversion",
    "ephemeral_owner": "ephemeralOwner", "data_length": "dataLength", "num_children": "numChildren",
}


def _write_tree(client: KazooClient) -> dict[str, bytes | None]:
    """A small Kafka-like tree with every data shape: JSON, empty, null, binary, ephemeral, sequential."""
    written: dict[str, bytes | None] = {}

    def create(path: str, data: bytes | None, **kwargs) -> None:
        real = client.create(path, data, makepath=True, **kwargs)
        written[real] = data

    create("/brokers/ids/1", b'{"version":5,"host":"hadoop1","port":9092}', ephemeral=True)
    create("/brokers/topics/topic2", b'{"version":1,"partitions":{"2":[1,2,3],"1":[0,1,2],"0":[3,0,1]}}')
    create("/brokers/topics/topic2/partitions/0/state",
           b'{"controller_epoch":1,"leader":3,"version":1,"leader_epoch":0,"isr":[3,0,1]}')
    create("/controller_epoch", b"5")
    create("/admin/delete_topics/gone", b"")
    create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/topic2"}', sequence=True)
    create("/binary", bytes(range(256)))
    create("/nulldata", None)
    client.set("/controller_epoch", b"6")  # version 1
    written["/controller_epoch"] = b"6"
    for parent in ("/brokers", "/brokers/ids", "/brokers/topics", "/brokers/topics/topic2/partitions",
                   "/brokers/topics/topic2/partitions/0", "/admin", "/admin/delete_topics", "/config",
                   "/config/changes"):
        written.setdefault(parent, client.get(parent)[0])
    return written


@pytest.mark.parametrize("read_mode", ["multi", "single"])
def test_snapshot_round_trips_data_and_stat_of_every_znode(zk_server, zk_chroot, zk_client, tmp_path, read_mode):
    written = _write_tree(zk_client)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    zxid_before = four_letter_word("127.0.0.1", zk_server.port, "srvr").split("Zxid:")[1].split()[0]
    warehouse = Warehouse(str(tmp_path / "wh"))
    snapshot_id = new_snapshot_id(suffix=read_mode)
    options = SnapshotOptions(read_mode=read_mode, batch_ops=3)
    manifest = write_snapshot(reader, settings, warehouse, snapshot_id, options)
    zxid_after = four_letter_word("127.0.0.1", zk_server.port, "srvr").split("Zxid:")[1].split()[0]
    reader.stop()

    rows = {row["path"]: row for row in pq.read_table(warehouse.snapshot_dir(snapshot_id)).to_pylist()}
    assert set(rows) == set(written) | {"/"}
    for path, data in written.items():
        live_data, stat = zk_client.get(path)
        assert rows[path]["data"] == live_data == data, path
        for column, attr in STAT_FIELDS.items():
            assert rows[path][column] == getattr(stat, attr), (path, column)
    assert rows["/binary"]["data"] == bytes(range(256))
    assert rows["/nulldata"]["data"] is None
    assert rows["/brokers/ids/1"]["ephemeral_owner"] == zk_client.client_id[0]
    assert rows["/controller_epoch"]["version"] == 1

    assert zxid_before == zxid_after, "the snapshot must not write to ZooKeeper"
    assert manifest == read_manifest(warehouse, snapshot_id)
    assert manifest["read_mode"] == read_mode
    assert manifest["znodes"] == len(written) + 1
    assert manifest["vanished"] == 0
    assert manifest["chroot"] == zk_chroot and manifest["ensemble"] == zk_server.hosts
    assert manifest["server_version"].startswith("3.8")
    mzxids = [row["mzxid"] for row in rows.values()]
    assert manifest["zxid_window"] == [min(mzxids), max(mzxids)]
    assert manifest["sync_zxid"]["start"] <= manifest["sync_zxid"]["end"]
    assert manifest["sync_zxid"]["start"] >= max(mzxids)
    assert warehouse.complete_snapshots() == [snapshot_id]


def test_include_and_exclude_prefixes(zk_server, zk_chroot, zk_client, tmp_path):
    _write_tree(zk_client)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    options = SnapshotOptions(include=("/brokers",), exclude=("/brokers/ids",))
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000000Z", options)
    deep = SnapshotOptions(exclude=("/zookeeper", "/brokers/topics/topic2/partitions/"))
    write_snapshot(reader, settings, warehouse, "20260101T000001Z", deep)
    reader.stop()
    assert manifest["read_mode"] == "multi"  # "auto" finds that a 3.8 server answers multiRead
    paths = set(pq.read_table(warehouse.snapshot_dir("20260101T000000Z")).column("path").to_pylist())
    assert "/brokers/topics/topic2/partitions/0/state" in paths and "/brokers" in paths
    assert "/" not in paths  # an ancestor of an include prefix is walked, not recorded
    assert not any(p.startswith("/brokers/ids") or p.startswith("/admin") for p in paths)
    paths = set(pq.read_table(warehouse.snapshot_dir("20260101T000001Z")).column("path").to_pylist())
    assert {"/", "/brokers/topics/topic2", "/admin/delete_topics/gone", "/brokers/ids/1"} <= paths
    assert not any(p.startswith("/brokers/topics/topic2/partitions") or p.startswith("/zookeeper") for p in paths)


class _DeletingWalker(TreeWalker):
    """Deletes a znode right after its parent's children were listed, before its data is read."""

    def __init__(self, client, options, deleter: KazooClient, victims: set[str]) -> None:
        super().__init__(client, options)
        self.deleter, self.victims = deleter, victims

    def _send(self, ops, mode):
        for kind, path, *_ in ops:
            if kind == "data" and path in self.victims:
                self.deleter.delete(path)
                self.victims.discard(path)
        return super()._send(ops, mode)


@pytest.mark.parametrize("read_mode", ["multi", "single"])
def test_nodes_that_vanish_during_the_walk_are_counted_not_errors(zk_server, zk_chroot, zk_client, read_mode):
    for i in range(20):
        zk_client.create(f"/consumers/g/offsets/t/{i}", str(i * 100).encode(), makepath=True)
    reader = KazooClient(hosts=zk_server.hosts + zk_chroot)
    reader.start()
    walker = _DeletingWalker(reader, SnapshotOptions(read_mode=read_mode), zk_client,
                             {"/consumers/g/offsets/t/3", "/consumers/g/offsets/t/7"})
    rows = [row for batch in walker.batches() for row in batch.to_pylist()]
    reader.stop()
    paths = {row["path"] for row in rows}
    assert walker.stats.vanished == 2
    assert "/consumers/g/offsets/t/3" not in paths and "/consumers/g/offsets/t/4" in paths
    assert len(paths) == 1 + 4 + 18  # root, /consumers … /offsets/t, 20 offsets less the 2 that vanished


def test_failed_snapshot_leaves_nothing_behind(zk_server, zk_chroot, zk_client, tmp_path, monkeypatch):
    _write_tree(zk_client)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))

    def broken_flush(columns):
        raise OSError("disk full")

    monkeypatch.setattr(TreeWalker, "_flush", staticmethod(broken_flush))
    with pytest.raises(OSError, match="disk full"):
        write_snapshot(reader, settings, warehouse, "20260101T000000Z", SnapshotOptions(row_group_rows=2))
    reader.stop()
    assert warehouse.complete_snapshots() == []
    assert not (tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z").exists()


def test_snapshot_with_digest_auth_reads_protected_znodes(zk_server, zk_chroot, tmp_path):
    owner = KazooClient(hosts=zk_server.hosts + zk_chroot, auth_data=[("digest", "kafka:s3cret")])
    owner.start()
    acl = [make_digest_acl("kafka", "s3cret", all=True)]
    owner.create("/config/users/alice", b'{"version":1,"config":{}}', acl=acl, makepath=True)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot, auth=(("digest", "kafka:s3cret"),))
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000000Z")
    reader.stop()
    owner.stop()
    rows = {r["path"]: r for r in pq.read_table(warehouse.snapshot_dir("20260101T000000Z")).to_pylist()}
    assert rows["/config/users/alice"]["data"] == b'{"version":1,"config":{}}'
    text = (tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z" / "_MANIFEST.json").read_text()
    assert "s3cret" not in text and "s3cret" not in repr(settings)
    assert manifest["znodes"] == len(rows)
