"""The change table from a real ZooKeeper's transaction log; the oracle is the zxids kazoo reports for the writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from kafka_zk_audit.offline.changes import CHANGES, build_changes, with_session_deletes
from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

CHROOT = "/cluster"


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """A private ZooKeeper's data dir after known writes, and the zxids ZooKeeper reported for them."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("changes-zk"), port=free_port()).start()
    oracle: dict = {}
    try:
        server.ensure_chroot(CHROOT)
        outside = KazooClient(hosts=server.hosts)
        outside.start(timeout=15)
        outside.create("/elsewhere", b"not ours")
        client = KazooClient(hosts=server.hosts + CHROOT)
        client.start(timeout=15)
        client.ensure_path("/brokers/ids")
        oracle["set"] = client.set("/brokers/ids", b"x").mzxid
        multi = client.transaction()
        multi.create("/brokers/ids/1", b"")
        multi.set_data("/brokers/ids/1", b'{"version":5}', 0)
        multi.commit()
        oracle["multi"] = client.exists("/brokers/ids/1").mzxid
        failed = client.transaction()
        failed.check("/brokers/ids/1", 99)
        failed.create("/never", b"")
        results = failed.commit()
        assert isinstance(results[0], BadVersionError)  # the whole multi failed
        checked = client.transaction()
        checked.check("/brokers/ids/1", 1)
        checked.set_data("/brokers/ids/1", b'{"version":5,"port":1}')
        checked.commit()
        oracle["checked"] = client.exists("/brokers/ids/1").mzxid
        client.create("/config/users/alice", b'{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,x=1"}}',
                      makepath=True)
        owner = KazooClient(hosts=server.hosts + CHROOT)
        owner.start(timeout=15)
        oracle["session"] = owner.client_id[0]
        owner.create("/brokers/ids/7", b"{}", ephemeral=True)
        owner.stop()
        owner.close()
        oracle["closed"] = client.exists("/brokers/ids").pzxid
        client.stop()
        client.close()
        outside.stop()
        outside.close()
    finally:
        server.stop()
    yield server.data_dir / "data", oracle


@pytest.fixture(scope="module")
def rows(spark, logged) -> list[dict]:
    data_dir, _ = logged
    table = with_session_deletes(build_changes(spark, str(data_dir), chroot=CHROOT))
    assert [(f.name, f.dataType) for f in table.schema.fields] == [(f.name, f.dataType) for f in CHANGES.fields]
    return [r.asDict() for r in table.orderBy("zxid", "op_index").collect()]


def test_a_multi_is_one_row_per_sub_operation(rows, logged) -> None:
    _, oracle = logged
    multi = [(r["op_index"], r["op"], r["path"], r["data"]) for r in rows if r["zxid"] == oracle["multi"]]
    assert multi == [(0, "create", "/brokers/ids/1", b""), (1, "setData", "/brokers/ids/1", b'{"version":5}')]
    single = next(r for r in rows if r["zxid"] == oracle["set"])
    assert (single["op"], single["path"], single["version"]) == ("setData", "/brokers/ids", 1)


def test_failed_txns_and_check_ops_leave_no_row(rows, logged) -> None:
    _, oracle = logged
    assert not [r for r in rows if r["path"] == "/never"]
    assert not [r for r in rows if r["op"] in ("check", "error")]
    checked = [(r["op_index"], r["op"]) for r in rows if r["zxid"] == oracle["checked"]]
    assert checked == [(1, "setData")]


def test_paths_are_relative_to_the_chroot_and_others_are_left_out(rows) -> None:
    paths = {r["path"] for r in rows if r["path"] is not None}
    assert "/brokers/ids/1" in paths and "/" not in {p for p in paths if p.startswith("/cluster")}
    assert not [p for p in paths if "elsewhere" in p or p.startswith(CHROOT)]


def test_a_closed_session_deletes_its_ephemerals(rows, logged) -> None:
    _, oracle = logged
    closing = [(r["op"], r["path"], r["session"]) for r in rows if r["zxid"] == oracle["closed"]]
    assert ("closeSession", None, oracle["session"]) in closing
    assert ("delete", "/brokers/ids/7", oracle["session"]) in closing
    created = next(r for r in rows if r["path"] == "/brokers/ids/7" and r["op"] != "delete")
    assert created["ephemeral"] and created["session"] == oracle["session"]
    assert [r["op"] for r in rows if r["zxid"] < oracle["closed"] and r["op"] == "createSession"]


def test_secret_data_never_reaches_the_table(rows) -> None:
    secret = [r for r in rows if r["path"] == "/config/users/alice"]
    assert secret and all(r["data"] is None or b"salt" not in r["data"] for r in secret)
