"""The snapshot on a real ZooKeeper: every znode's data and stat round-trip, in both read modes; znodes the
auditor may not read, secrets, the caps on reads in flight and bad input."""

from __future__ import annotations

import json
import time
from collections import namedtuple
from pathlib import Path
from stat import S_IMODE as stat_mode

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadArgumentsError, NoAuthError
from kazoo.protocol.serialization import int_struct, read_string, write_string
from kazoo.security import make_acl, make_digest_acl

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse, new_snapshot_id, read_manifest
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.ids import SnapshotIdTaken
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit.snapshot.walker import TreeWalker
from kafka_zk_audit_testing.zk_server import four_letter_word, free_port

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

    def broken_flush(walker):
        raise OSError("disk full")

    monkeypatch.setattr(TreeWalker, "_flush", broken_flush)
    with pytest.raises(OSError, match="disk full"):
        write_snapshot(reader, settings, warehouse, "20260101T000000Z", SnapshotOptions(row_group_rows=2))
    reader.stop()
    assert warehouse.complete_snapshots() == []
    assert not (tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z").exists()


def test_a_snapshot_id_is_claimed_by_one_writer_only(zk_server, zk_chroot, zk_client, tmp_path):
    """Two runs of one cluster starting in the same second: the second writer is refused before it reads,
    and the first one's files are untouched (they used to be removed as 'leftovers')."""
    _write_tree(zk_client)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    assert warehouse.claim_snapshot_dir("20260101T000000Z-x")  # the first writer, still writing
    partial = tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z-x" / "part-00000.parquet"
    partial.write_bytes(b"being written")
    with pytest.raises(SnapshotIdTaken, match="exists or is being written"):
        write_snapshot(reader, settings, warehouse, "20260101T000000Z-x")
    assert partial.read_bytes() == b"being written"
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000001Z-x")
    reader.stop()
    with pytest.raises(SnapshotIdTaken):  # a complete snapshot is never overwritten either
        write_snapshot(reader, settings, warehouse, "20260101T000001Z-x")
    assert warehouse.complete_snapshots() == ["20260101T000001Z-x"] and manifest["znodes"] > 0


def snapshot_as(auth: tuple[str, str], zk_server, chroot: str, tmp_path: Path) -> dict:
    """Snapshot ``chroot`` into ``tmp_path/wh`` (id 20260101T000000Z) authenticated as ``auth``; the manifest."""
    settings = ZkSettings(hosts=zk_server.hosts, chroot=chroot, auth=(auth,))
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    try:
        return write_snapshot(reader, settings, Warehouse(str(tmp_path / "wh")), "20260101T000000Z")
    finally:
        reader.stop()


def test_snapshot_with_digest_auth_reads_protected_znodes(zk_server, zk_chroot, tmp_path):
    owner = KazooClient(hosts=zk_server.hosts + zk_chroot, auth_data=[("digest", "kafka:s3cret")])
    owner.start()
    acl = [make_digest_acl("kafka", "s3cret", all=True)]
    owner.create("/config/users/alice", b'{"version":1,"config":{}}', acl=acl, makepath=True)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot, auth=(("digest", "kafka:s3cret"),))
    manifest = snapshot_as(("digest", "kafka:s3cret"), zk_server, zk_chroot, tmp_path)
    warehouse = Warehouse(str(tmp_path / "wh"))
    owner.stop()
    rows = {r["path"]: r for r in pq.read_table(warehouse.snapshot_dir("20260101T000000Z")).to_pylist()}
    assert rows["/config/users/alice"]["data"] == b'{"version":1,"config":{}}'
    text = (tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z" / "_MANIFEST.json").read_text()
    assert "s3cret" not in text and "s3cret" not in repr(settings)
    assert manifest["znodes"] == len(rows)


# -- least privilege ------------------------------------------------------------------------------
KAFKA = ("digest", "kafka:kafka-secret")
WORLD_READ = make_acl("world", "anyone", read=True)
KAFKA_ALL = make_digest_acl("kafka", "kafka-secret", all=True)
# Kafka's secure mode (zookeeper.set.acl=true): creator ALL + world READ, except these subtrees.
CREATOR_ONLY_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")


def kafka_acl(path: str) -> list:
    """The ACL Kafka gives ``path`` in secure mode (ZkData defaultAcls / SensitiveRootPaths)."""
    sensitive = any(path == root or path.startswith(root + "/") for root in CREATOR_ONLY_ROOTS)
    return [KAFKA_ALL] if sensitive else [KAFKA_ALL, WORLD_READ]


SECURE_TREE = {
    "/brokers": None, "/brokers/ids": None, "/brokers/ids/1": b'{"version":5,"host":"h1","port":9092}',
    "/brokers/topics": None, "/brokers/topics/t": b'{"version":1,"partitions":{"0":[1]}}',
    "/config": None, "/config/topics": None, "/config/topics/t": b'{"version":1,"config":{}}',
    "/config/users": None,
    "/config/users/alice": b'{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,stored_key=a2V5,server_key=c2s=,'
                           b'iterations=4096"}}',
    "/config/brokers": None, "/config/brokers/1": b'{"version":1,"config":{"log.cleaner.threads":"2"}}',
    "/delegation_token": None, "/delegation_token/tokens": None,
    "/delegation_token/tokens/tok1": b'{"version":3,"owner":"User:alice","tokenId":"tok1"}',
    "/consumers": None,
}


def write_secure_tree(zk_server, chroot: str) -> KazooClient:
    """A small Kafka tree with Kafka's secure-mode ACLs, written as Kafka's identity; returns its client."""
    owner = KazooClient(hosts=zk_server.hosts + chroot, auth_data=[KAFKA])
    owner.start()
    for path, data in SECURE_TREE.items():
        owner.create(path, data, acl=kafka_acl(path))
    return owner


@pytest.mark.parametrize("read_mode", ["multi", "single"])
def test_znodes_the_auditor_may_not_read_are_recorded_with_their_stat(zk_server, zk_chroot, tmp_path, read_mode):
    owner = write_secure_tree(zk_server, zk_chroot)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot, auth=(("digest", "auditor:auditor-pw"),))
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000000Z", SnapshotOptions(read_mode=read_mode))
    reader.stop()
    rows = {r["path"]: r for r in pq.read_table(warehouse.snapshot_dir("20260101T000000Z")).to_pylist()}
    unreadable = {path for path, row in rows.items() if row["unreadable"]}
    assert unreadable == set(CREATOR_ONLY_ROOTS)
    for path in CREATOR_ONLY_ROOTS:
        stat = owner.exists(path)
        assert rows[path]["unreadable"] == "no_read_permission" and rows[path]["data"] is None
        assert (rows[path]["mzxid"], rows[path]["num_children"], rows[path]["czxid"]) == (
            stat.mzxid, stat.numChildren, stat.czxid)
    # Children of an unreadable znode are unknown; everything world-readable is there, data and all.
    readable = {p for p in SECURE_TREE if not any(p.startswith(root + "/") for root in CREATOR_ONLY_ROOTS)}
    assert set(rows) == readable | {"/"}
    for path in readable - set(CREATOR_ONLY_ROOTS):
        assert rows[path]["data"] == owner.get(path)[0] and rows[path]["unreadable"] is None, path
    assert manifest["unreadable"] == 3 and manifest["znodes"] == len(rows)
    owner.stop()


def test_the_manifest_records_the_acls_of_kafkas_top_level_znodes(zk_server, zk_chroot, tmp_path):
    """Kafka's secure-mode ACLs as ZooKeeper's CLI prints them (``getAcl``), digest ids without their hash;
    a creator-only znode's ACL cannot be read by the auditor either; absent znodes are left out."""
    owner = write_secure_tree(zk_server, zk_chroot)
    owner.create("/controller_epoch", b"1")  # world-open, as written by an unsecured broker
    manifest = snapshot_as(("digest", "auditor:auditor-pw"), zk_server, zk_chroot, tmp_path)
    owner.stop()
    acls = manifest["znode_acls"]
    assert acls["/brokers"] == ["digest:kafka:cdrwa", "world:anyone:r"]
    assert acls["/brokers/topics"] == ["digest:kafka:cdrwa", "world:anyone:r"]
    assert acls["/controller_epoch"] == ["world:anyone:cdrwa"]
    assert acls["/config/users"] == ["unreadable"]
    assert "/migration" not in acls and "/controller" not in acls
    text = (tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z" / "_MANIFEST.json").read_text()
    assert "kafka-secret" not in text and "auditor-pw" not in text


def test_an_auditor_granted_read_on_the_creator_only_paths_reads_everything(zk_server, zk_chroot, tmp_path):
    owner = write_secure_tree(zk_server, zk_chroot)
    auditor_read = make_digest_acl("auditor", "auditor-pw", read=True)  # README: setAcl -R …,digest:auditor:…:r
    for path in SECURE_TREE:
        if any(path == root or path.startswith(root + "/") for root in CREATOR_ONLY_ROOTS):
            owner.set_acls(path, [KAFKA_ALL, auditor_read])
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot, auth=(("digest", "auditor:auditor-pw"),))
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000000Z")
    reader.stop()
    rows = {r["path"]: r for r in pq.read_table(warehouse.snapshot_dir("20260101T000000Z")).to_pylist()}
    assert set(rows) == set(SECURE_TREE) | {"/"} and manifest["unreadable"] == 0
    assert manifest["identity"] == "digest:auditor" and "auditor-pw" not in json.dumps(manifest)
    assert rows["/config/users/alice"]["fingerprinted"] == "values"
    assert rows["/delegation_token/tokens/tok1"]["fingerprinted"] == "data"
    with pytest.raises(NoAuthError):  # READ only: the auditor cannot change what it audits
        reader_as_auditor = KazooClient(hosts=zk_server.hosts + zk_chroot, auth_data=[("digest", "auditor:auditor-pw")])
        reader_as_auditor.start()
        try:
            reader_as_auditor.set("/config/users/alice", b"{}")
        finally:
            reader_as_auditor.stop()
    owner.stop()


class _AclChangingWalker(TreeWalker):
    """Makes a znode creator-only after its data was read, before its children are listed."""

    def __init__(self, client, options, owner: KazooClient, victim: str) -> None:
        super().__init__(client, options)
        self.owner, self.victim = owner, victim

    def _send(self, ops, mode):
        for kind, path, *_ in ops:
            if kind == "children" and path == self.victim:
                self.owner.set_acls(path, [KAFKA_ALL])
        return super()._send(ops, mode)


@pytest.mark.parametrize("read_mode", ["multi", "single"])
def test_children_that_may_not_be_listed_mark_their_parent(zk_server, zk_chroot, read_mode):
    owner = write_secure_tree(zk_server, zk_chroot)
    reader = KazooClient(hosts=zk_server.hosts + zk_chroot)
    reader.start()
    walker = _AclChangingWalker(reader, SnapshotOptions(read_mode=read_mode), owner, "/brokers/topics")
    rows = {row["path"]: row for batch in walker.batches() for row in batch.to_pylist()}
    reader.stop()
    owner.stop()
    assert rows["/brokers/topics"]["unreadable"] == "children_no_read_permission"
    assert rows["/brokers/topics"]["num_children"] == 1 and "/brokers/topics/t" not in rows
    assert walker.stats.unreadable == 4  # the three creator-only roots and /brokers/topics


# -- no secret copied -----------------------------------------------------------------------------
SCRAM = "salt=bXlzYWx0eQ==,stored_key=U1RPUkVEa2V5c2VjcmV0,server_key=U0VSVkVSa2V5c2VjcmV0,iterations=4096"
ENCRYPTED = ("encryptedPassword:ZW5jcnlwdGVkc2VjcmV0,keyLength:128,cipherAlgorithm:AES/CBC/PKCS5Padding,"
             "passwordLength:8,iterations:4096")
JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="jaas-pw-42";'
TOKEN = b'{"version":3,"owner":"User:alice","tokenRequester":"User:requester-77","renewers":[],"tokenId":"tok1"}'
SECRETS = {
    "/config/users/alice": ({"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1024"}, ["bXlzYWx0eQ", "U1RPUkVE"]),
    "/config/brokers/1": (
        {"ssl.keystore.password": ENCRYPTED, "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": JAAS,
         "listener.name.ssl.ssl.key.password": "plain-key-pw-7", "log.cleaner.threads": "2"},
        ["ZW5jcnlwdGVk", "jaas-pw-42", "plain-key-pw-7"],
    ),
}
RAW_SECRETS = [b"bXlzYWx0eQ", b"U1RPUkVE", b"ZW5jcnlwdGVk", b"jaas-pw-42", b"plain-key-pw-7", b"requester-77",
               b"garbage-secret-99"]


def write_secrets(client: KazooClient) -> None:
    for path, (config, _) in SECRETS.items():
        client.create(path, json.dumps({"version": 1, "config": config}).encode(), makepath=True)
    client.create("/config/users/bob", b"garbage-secret-99 not json", makepath=True)
    client.create("/delegation_token/tokens/tok1", TOKEN, makepath=True)
    client.create("/config/brokers/<default>", b'{"version":1,"config":{"log.retention.ms":"1000"}}')


def snapshot_bytes(warehouse: Warehouse, snapshot_id: str) -> bytes:
    """Every value of every column of the snapshot, decoded, plus the raw files and the manifest."""
    folder = Path(warehouse.snapshot_dir(snapshot_id))
    table = pq.read_table(folder)
    decoded = [repr(value).encode() for column in table.columns for value in column.to_pylist()]
    decoded += [value for value in table.column("data").to_pylist() if value]
    return b"\n".join(decoded) + b"".join(path.read_bytes() for path in folder.iterdir())


def test_secrets_are_fingerprinted_before_anything_is_written(zk_server, zk_chroot, zk_client, tmp_path):
    write_secrets(zk_client)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    first = write_snapshot(reader, settings, warehouse, "20260101T000000Z")
    write_snapshot(reader, settings, warehouse, "20260101T000001Z")
    zk_client.set("/config/brokers/1", json.dumps({"version": 1, "config": {
        **SECRETS["/config/brokers/1"][0], "listener.name.ssl.ssl.key.password": "rotated-pw"}}).encode())
    write_snapshot(reader, settings, warehouse, "20260101T000002Z")
    copied = write_snapshot(reader, settings, warehouse, "20260101T000003Z", SnapshotOptions(copy_secrets=True))
    reader.stop()

    for snapshot_id in ("20260101T000000Z", "20260101T000001Z", "20260101T000002Z"):
        written = snapshot_bytes(warehouse, snapshot_id)
        assert not [secret for secret in [*RAW_SECRETS, b"rotated-pw"] if secret in written], snapshot_id
    # The oracle finds the secrets when they are copied on purpose (after the rotation).
    now_secret = {*RAW_SECRETS, b"rotated-pw"} - {b"plain-key-pw-7"}
    assert all(secret in snapshot_bytes(warehouse, "20260101T000003Z") for secret in now_secret)
    assert first["secrets"]["mode"] == "fingerprinted" and first["secrets"]["fingerprinted_znodes"] == 4
    assert copied["secrets"] == {"mode": "copied", "fingerprinted_znodes": 0, "key_id": None}

    def rows(snapshot_id: str) -> dict[str, dict]:
        return {r["path"]: r for r in pq.read_table(warehouse.snapshot_dir(snapshot_id)).to_pylist()}

    def config(row: dict) -> dict:
        return json.loads(row["data"])["config"]

    one, again, rotated = rows("20260101T000000Z"), rows("20260101T000001Z"), rows("20260101T000002Z")
    assert config(one["/config/users/alice"])["producer_byte_rate"] == "1024"  # only secrets are replaced
    assert config(one["/config/users/alice"])["SCRAM-SHA-256"].startswith("hmac-sha256:")
    assert config(one["/config/brokers/1"])["log.cleaner.threads"] == "2"
    assert one["/config/brokers/1"]["fingerprinted"] == "values" and one["/config/brokers/<default>"][
        "fingerprinted"] is None
    assert one["/config/users/bob"]["fingerprinted"] == "data"  # not a config document: replaced whole
    assert one["/delegation_token/tokens/tok1"]["fingerprinted"] == "data"
    assert one["/config/users/bob"]["data_length"] == len(b"garbage-secret-99 not json")  # the stat is the znode's
    # Same key, same secret: same fingerprint; a rotated password shows as a changed fingerprint only.
    assert config(one["/config/brokers/1"]) == config(again["/config/brokers/1"])
    changed = {k for k, v in config(rotated["/config/brokers/1"]).items() if config(one["/config/brokers/1"])[k] != v}
    assert changed == {"listener.name.ssl.ssl.key.password"}
    key = tmp_path / "wh" / ".keys" / "fingerprint.key"
    assert stat_mode(key.stat().st_mode) == 0o600 and first["secrets"]["key_id"] not in key.read_text()


# -- gentle -----------------------------------------------------------------------------------------
class _RecordingWalker(TreeWalker):
    """Records the reads and estimated bytes in flight after every send, and each response's size."""

    def __init__(self, client, options) -> None:
        super().__init__(client, options)
        self.peak_reads = self.peak_bytes = 0
        self.response_bytes: list[int] = []

    def _fill(self, *args) -> None:
        super()._fill(*args)
        self.peak_reads = max(self.peak_reads, self._reads_in_flight)
        self.peak_bytes = max(self.peak_bytes, self._bytes_in_flight)

    def _receive(self, async_result, mode, kind="data"):
        before = self._answered_bytes
        results = super()._receive(async_result, mode, kind)
        self.response_bytes.append(self._answered_bytes - before)
        return results


def write_flat(client: KazooClient, parent: str, count: int, data: bytes = b"", batch: int = 1000) -> None:
    """``count`` children ``c000000``… under ``parent`` in transactions of ``batch`` creates."""
    client.ensure_path(parent)
    results = []
    for start in range(0, count, batch):
        transaction = client.transaction()
        for i in range(start, min(count, start + batch)):
            transaction.create(f"{parent}/c{i:06d}", data)
        results.append(transaction.commit_async())
    for result in results:
        assert all(isinstance(r, str) for r in result.get(timeout=120))


def test_reads_in_flight_are_capped_by_count_and_bytes_and_paced(zk_server, zk_chroot, zk_client):
    write_flat(zk_client, "/flat", 3000)
    write_flat(zk_client, "/big", 40, data=b"b" * 100_000, batch=10)
    reader = KazooClient(hosts=zk_server.hosts + zk_chroot)
    reader.start()
    counted = _RecordingWalker(reader, SnapshotOptions(include=("/flat",), max_reads_in_flight=250))
    assert sum(batch.num_rows for batch in counted.batches()) == 3001
    assert counted.peak_reads == 250 and counted.stats.requests >= 3000 // 250

    cap = 400_000  # four of the 100 KB znodes
    sized = _RecordingWalker(reader, SnapshotOptions(include=("/big",), max_bytes_in_flight=cap, batch_ops=8))
    assert sum(batch.num_rows for batch in sized.batches()) == 41
    assert sized.peak_bytes <= cap  # the estimate of the responses awaited
    large = [size for size in sized.response_bytes if size > 50_000]
    # The first request into siblings of unknown size carries at most batch_ops reads, and no other request
    # is sent into them until it is answered; from then on each response stays under the cap.
    assert 8 * 100_000 <= large[0] < 9 * 100_000
    assert max(large[1:]) <= cap and len(large) >= 1 + 32 // 3

    started = time.monotonic()
    paced = TreeWalker(reader, SnapshotOptions(include=("/flat",), reads_per_second=2000))
    assert sum(batch.num_rows for batch in paced.batches()) == 3001
    seconds = time.monotonic() - started
    reader.stop()
    assert 3000 / 2000 * 0.9 <= seconds < 10  # 3,000 reads at 2,000 reads/s (the first tenth of a second is free)
    assert paced.stats.reads / seconds <= 2000 * 1.1


def test_default_options_cap_what_is_in_flight():
    options = SnapshotOptions()
    assert options.max_reads_in_flight <= options.in_flight("multi") * options.batch_ops
    assert options.max_bytes_in_flight == 32 * 1024 * 1024 and options.reads_per_second == 20_000
    assert not options.copy_secrets
    with pytest.raises(ValueError, match="max_reads_in_flight"):
        SnapshotOptions(max_reads_in_flight=0)


# -- bad input --------------------------------------------------------------------------------------
class RawCreate(namedtuple("RawCreate", "path data")):
    """A create request whose path is raw bytes (kazoo only sends UTF-8 paths); open ACL, persistent."""

    type = 1

    def serialize(self) -> bytearray:
        buffer = bytearray(int_struct.pack(len(self.path)) + self.path)
        buffer.extend(int_struct.pack(len(self.data)) + self.data)
        buffer.extend(int_struct.pack(1) + int_struct.pack(31) + write_string("world") + write_string("anyone"))
        buffer.extend(int_struct.pack(0))
        return buffer

    @classmethod
    def deserialize(cls, buffer, offset):
        return read_string(buffer, offset)[0]


def test_bad_input_never_stops_the_walk(zk_server, zk_chroot, zk_client, tmp_path):
    near_limit = 1_000_000  # ZooKeeper's default jute.maxbuffer is 1 MiB
    for i in range(3):
        zk_client.create(f"/large/z{i}", bytes([i]) * near_limit, makepath=True)
    write_flat(zk_client, "/wide", 100_000)
    names = ["caf\u00e9", "\u4e2d\u6587", "quote\"'\\", "space name", "%2Fslash", "dot.."]
    for name in names:
        zk_client.create(f"/names/{name}", b"\xff\xfe\x00\x80 not utf-8", makepath=True)
    deep = "".join(f"/d{i}" for i in range(200))
    zk_client.create("/deep" + deep, b"bottom", makepath=True)
    # Names that are not UTF-8 cannot exist: the server decodes them to U+FFFD and refuses the path, as it
    # refuses control characters and surrogates (emoji).
    for refused in ("tab\tname", "\U0001f600"):
        with pytest.raises(BadArgumentsError):
            zk_client.create(f"/names/{refused}", b"")
    raw = zk_client.handler.async_result()
    zk_client._call(RawCreate(f"{zk_chroot}/names/bad-\xff".encode("latin-1"), b"x"), raw)
    with pytest.raises(BadArgumentsError):
        raw.get(timeout=10)

    settings = ZkSettings(hosts=f"127.0.0.1:{free_port()},{zk_server.hosts}", chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs(), randomize_hosts=False)  # the dead host is tried first
    reader.start(timeout=30)
    warehouse = Warehouse(str(tmp_path / "wh"))
    manifest = write_snapshot(reader, settings, warehouse, "20260101T000000Z")
    single_mode = TreeWalker(reader, SnapshotOptions(read_mode="single", exclude=("/zookeeper", "/wide")))
    single = [row for batch in single_mode.batches() for row in batch.to_pylist()]
    reader.stop()
    table = pq.read_table(warehouse.snapshot_dir("20260101T000000Z"), columns=["path", "data", "data_length"])
    paths = table.column("path").to_pylist()
    expected = 1 + (1 + 3) + (1 + 100_000) + (1 + len(names)) + (1 + 200)  # root, large, wide, names, deep
    assert len(paths) == len(set(paths)) == manifest["znodes"] == expected
    rows = {row["path"]: row for row in table.filter(pc.invert(pc.starts_with(table.column("path"), "/wide/")))
            .to_pylist()}
    assert [len(rows[f"/large/z{i}"]["data"]) for i in range(3)] == [near_limit] * 3
    assert all(rows[f"/names/{name}"]["data"] == b"\xff\xfe\x00\x80 not utf-8" for name in names)
    assert rows["/deep" + deep]["data"] == b"bottom"
    assert manifest["unreadable"] == 0 and manifest["vanished"] == 0
    single_rows = {row["path"]: row for row in single}
    assert {p for p in single_rows} == {p for p in paths if not p.startswith("/wide")}
    assert all(single_rows[p]["data"] == rows[p]["data"] for p in single_rows)


def test_a_taken_snapshot_id_moves_the_write_to_the_next_seconds_id():
    from kafka_zk_audit.snapshot.ids import under_new_id

    tried: list[str] = []

    def write(snapshot_id: str) -> dict:
        tried.append(snapshot_id)
        if len(tried) < 3:  # another writer holds this second's id
            raise SnapshotIdTaken(snapshot_id)
        return {"snapshot_id": snapshot_id}

    assert under_new_id("c1", write) == {"snapshot_id": tried[-1]}
    assert len(set(tried)) == 3 and all(t.endswith("-c1") for t in tried) and tried == sorted(tried)
