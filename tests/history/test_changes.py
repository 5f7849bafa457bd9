"""The change table from a real ZooKeeper's transaction log; the oracle is the zxids kazoo reports for the writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from kafka_zk_audit.history.changes import CHANGES, build_changes, with_session_deletes
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


def test_a_log_cut_in_ranges_gives_the_rows_of_the_whole_file(spark, logged, monkeypatch) -> None:
    from kafka_zk_audit.history import changes
    from kafka_zk_audit.snapshot.files.txnlog import iter_txns, log_files

    data_dir, _ = logged
    whole = sorted(tuple(r) for r in build_changes(spark, str(data_dir), chroot=CHROOT).collect())
    log = log_files(data_dir)[0]
    monkeypatch.setattr(changes, "MIN_RANGE_BYTES", 64)
    pieces = changes.log_ranges(log, 4)
    assert len(pieces) == 4 and pieces[0].start == 16 and pieces[-1].end == log.stat().st_size
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:], strict=False))
    zxids = [txn.zxid for txn in iter_txns(log)]  # each later range starts at a record: its zxid is one of them
    assert all(piece.first_zxid in zxids[1:] for piece in pieces[1:])
    cut = sorted(tuple(r) for r in build_changes(spark, str(data_dir), chroot=CHROOT).collect())
    assert cut == whole and len(whole) > 10
    first, last = pieces[2].first_zxid, zxids[zxids.index(pieces[3].first_zxid) + 1]  # across a cut
    window = sorted(tuple(r) for r in build_changes(spark, str(data_dir), chroot=CHROOT, first_zxid=first,
                                                    last_zxid=last).collect())
    assert window == [r for r in whole if first <= r[0] <= last] and window


def test_a_corrupt_record_is_reported_and_what_came_before_stands(spark, logged, tmp_path) -> None:
    from kafka_zk_audit.history.changes import LOG_ERROR
    from kafka_zk_audit.snapshot.files.txnlog import RECORD_HEAD, iter_txns, log_files

    data_dir, _ = logged
    log = log_files(data_dir)[0]
    content = bytearray(log.read_bytes())
    zxids = [txn.zxid for txn in iter_txns(log)]
    position, head = 16, RECORD_HEAD.unpack_from(content, 16)
    for _ in range(len(zxids) // 2):  # hop to the middle record, then flip the last byte of its payload
        position += RECORD_HEAD.size + head[1] + 1
        head = RECORD_HEAD.unpack_from(content, position)
    content[position + RECORD_HEAD.size + head[1] - 1] ^= 0xFF
    (tmp_path / "version-2").mkdir()
    (tmp_path / "version-2" / log.name).write_bytes(bytes(content))
    rows = build_changes(spark, str(tmp_path), chroot=CHROOT).collect()
    errors = [r for r in rows if r["op"] == LOG_ERROR]
    assert len(errors) == 1 and errors[0]["path"].endswith(log.name) and b"checksum" in errors[0]["data"]
    assert errors[0]["zxid"] == zxids[len(zxids) // 2 - 1]
    bad = zxids[len(zxids) // 2]
    before = sorted(tuple(r) for r in build_changes(spark, str(data_dir), chroot=CHROOT).collect() if r[0] < bad)
    assert sorted(tuple(r) for r in rows if r["op"] != LOG_ERROR and r["zxid"] < bad) == before and before
