"""The column-wise decoder of the change table (``history.txncolumns`` behind ``changes.decode_log``).

The oracle is ``txnlog.iter_txns`` (checked against ZooKeeper's own TxnLogToolkit in test_txnlog.py), turned into
rows here by the rules the change table's doc states, one txn at a time with no numpy: the column-wise decoder must
give the same rows, in the same order, and the same error, on a real server's logs and on records made byte by byte
for the cases a running cluster seldom writes (null data, several ACLs, the oldest create body, paths at and
outside the chroot, non-ASCII paths, a body that runs past its record).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafka_zk_audit.history.changes import LOG_ERROR, SECRET_PATHS, decode_log, relative_path
from kafka_zk_audit.snapshot.files.txnlog import TxnLogError, iter_txns, log_files


def scrub(path: str, data: bytes) -> bytes:
    return b"scrubbed:" + str(len(data)).encode()


def expected_rows(content: bytes, chroot: str, first_zxid: int | None = None, last_zxid: int | None = None
                  ) -> list[tuple[Any, ...]]:
    """The change rows by the documented rules, from iter_txns one txn at a time."""
    root = chroot.rstrip("/")
    after = first_zxid - 1 if first_zxid is not None else None
    rows: list[tuple[Any, ...]] = []
    zxid = after or 0
    try:
        for txn in iter_txns(content, after_zxid=after):
            zxid = txn.zxid
            if last_zxid is not None and txn.zxid > last_zxid:
                break
            if len(txn.ops) > 1 and any(op.op == "error" for op in txn.ops):
                continue
            for index, op in enumerate(txn.ops):
                if op.op in ("check", "error"):
                    continue
                if op.op in ("createSession", "closeSession"):
                    rows.append((txn.zxid, index, txn.time_ms, txn.session, op.op, None, None, None, False))
                    number = 0
                    for gone in op.paths or ():
                        path = relative_path(gone, root)
                        number += 1
                        if path is not None:
                            rows.append((txn.zxid, number, txn.time_ms, txn.session, "delete", path, None, None,
                                         False))
                    continue
                path = relative_path(op.path, root)
                if path is None and op.path is not None:
                    continue
                data = op.data
                if data and path.startswith(SECRET_PATHS):
                    data = scrub(path, data)
                rows.append((txn.zxid, index, txn.time_ms, txn.session, op.op, path, data, op.version,
                             op.ephemeral))
    except TxnLogError as exc:
        message = str(exc).replace("<log bytes>", "the log")  # the column-wise decoder names the file
        rows.append((zxid, 0, 0, 0, LOG_ERROR, "the log", message.encode(), None, False))
    return sorted(rows, key=log_order)


def decoded_rows(content: bytes, chroot: str, first_zxid: int | None = None, last_zxid: int | None = None
                 ) -> list[tuple[Any, ...]]:
    batches = list(decode_log(content, "the log", chroot, first_zxid, last_zxid, scrub))
    table = pa.Table.from_batches(batches) if batches else None
    rows = [] if table is None else [tuple(row.values()) for row in table.to_pylist()]
    return sorted(rows, key=log_order)


def log_order(row: tuple[Any, ...]) -> tuple[bool, int, int]:
    """Rows by zxid and operation, an error row last (the decoder gives the rows it read the fast way first)."""
    return row[4] == LOG_ERROR, row[0], row[1]


def test_a_real_servers_logs_decode_to_the_same_rows_as_one_txn_at_a_time(zk_files) -> None:
    logs = log_files(zk_files.log_dir)
    assert len(logs) > 1
    kinds: set[str] = set()
    for log in logs:
        content = log.read_bytes()
        kinds |= {txn.type for txn in iter_txns(content)}
        for chroot in ("", "/kafka"):
            expected = expected_rows(content, chroot)
            assert decoded_rows(content, chroot) == expected, (log.name, chroot)
        zxids = [txn.zxid for txn in iter_txns(content)]
        if len(zxids) > 4:
            first, last = zxids[len(zxids) // 4], zxids[3 * len(zxids) // 4]
            assert decoded_rows(content, "/kafka", first, last) == expected_rows(content, "/kafka", first, last)
    assert {"setData", "create", "delete", "multi", "createSession", "closeSession", "setACL"} <= kinds


# ---------------------------------------------------------------- records made byte by byte

def _string(value: str | bytes | None) -> bytes:
    if value is None:
        return struct.pack(">i", -1)
    raw = value.encode() if isinstance(value, str) else value
    return struct.pack(">i", len(raw)) + raw


def _acls(*acls: tuple[int, str, str]) -> bytes:
    return struct.pack(">i", len(acls)) + b"".join(struct.pack(">i", p) + _string(s) + _string(i) for p, s, i in acls)


WORLD = (31, "world", "anyone")


def _multi(*subs: tuple[int, bytes]) -> bytes:
    return struct.pack(">i", len(subs)) + b"".join(struct.pack(">ii", code, len(body)) + body for code, body in subs)


def _record(zxid: int, type_code: int, body: bytes, session: int = 0x1234, digest: bool = True) -> bytes:
    payload = struct.pack(">qiqqi", session, 1, zxid, 1_700_000_000_000 + zxid, type_code) + body
    if digest:
        payload += struct.pack(">iq", 2, zxid * 7919)
    return struct.pack(">qi", zlib.adler32(payload), len(payload)) + payload + b"B"


def _log(*records: bytes) -> bytes:
    return struct.pack(">iiq", 0x5A4B4C47, 2, 0) + b"".join(records) + bytes(64)


def crafted() -> list[bytes]:
    """One record of each shape, zxids 1.."""
    set_data = lambda path, data, version: _string(path) + _string(data) + struct.pack(">i", version)  # noqa: E731
    create = lambda path, data, acl, eph: _string(path) + _string(data) + acl + bytes([eph]) + struct.pack(">i", 3)  # noqa: E731
    bodies = [
        (5, set_data("/kafka/brokers/topics/t", b'{"version":1}', 4)),
        (5, set_data("/kafka/brokers/topics/t", None, 5)),  # null data
        (5, set_data("/kafka", b"chroot itself", 1)),  # the chroot: "/"
        (5, set_data("/kafkaesque/x", b"outside, though it shares a prefix", 1)),
        (5, set_data("/elsewhere", b"outside", 1)),
        (5, set_data("/kafka/config/topics/töpic-ü", b"{}", 2)),  # non-ASCII UTF-8
        (1, create("/kafka/brokers/ids/1", b'{"host":"b1"}', _acls(WORLD), 1)),  # ephemeral
        (1, create("/kafka/a/two-acls", b"x", _acls(WORLD, (1, "sasl", "kafka")), 0)),  # goes one by one
        (1, _string("/kafka/old") + _string(b"v0") + _acls(WORLD) + b"\0"),  # CreateTxnV0: no parentCVersion
        (15, create("/kafka/c2", b"", _acls(WORLD), 0)),  # create2, empty data
        (1, create("/kafka/null-data", None, _acls(WORLD), 0)),
        (2, _string("/kafka/brokers/ids/1")),
        (2, _string("/elsewhere")),
        (1, create("/kafka/config/users/alice", b'{"config":{"SCRAM-SHA-256":"salt=c2FsdA=="}}', _acls(WORLD), 0)),
        (5, set_data("/kafka/config/users/alice", b"", 1)),  # empty secret data stays empty
        (-10, struct.pack(">i", 30000)),  # createSession
        (7, _string("/kafka/a") + _acls(WORLD) + struct.pack(">i", 1)),  # setACL
        (-1, struct.pack(">i", -101)),  # a failed single-op txn
        (14, _multi((13, _string("/kafka/controller_epoch") + struct.pack(">i", 7)),  # the controller's writes
                    (5, set_data("/kafka/brokers/topics/t/partitions/0/state", b'{"leader":2}', 9)))),
        (14, _multi((15, create("/kafka/admin/x", b"1", _acls(WORLD), 0)), (2, _string("/kafka/admin/y")),
                    (1, create("/kafka/admin/z", b"2", _acls(WORLD), 1)))),
        (14, _multi((-1, struct.pack(">i", -101)), (-1, struct.pack(">i", -2)))),  # a failed multi: no row
        (14, _multi((5, set_data("/kafka/a", b"1", 1)), (7, _string("/kafka/a") + _acls(WORLD)
                                                          + struct.pack(">i", 2)))),  # setACL: one by one
        (14, _multi()),  # an empty multi
    ]
    return [_record(zxid, code, body) for zxid, (code, body) in enumerate(bodies, start=1)]


@pytest.mark.parametrize("chroot", ["", "/kafka", "/kafka/"])
def test_records_of_every_shape_decode_to_the_same_rows(chroot) -> None:
    content = _log(*crafted())
    rows = decoded_rows(content, chroot)
    assert rows == expected_rows(content, chroot)
    ops = {row[4] for row in rows}
    assert {"setData", "create", "create2", "delete", "createSession", "setACL"} <= ops
    assert [row[1] for row in rows if row[0] == 20] == [0, 1, 2]  # a multi: one row per sub-op, in order
    if chroot:
        assert ("/", b"chroot itself") in {(row[5], row[6]) for row in rows}
        assert not [row for row in rows if row[5] and ("elsewhere" in row[5] or "esque" in row[5])]
        assert ("/config/topics/töpic-ü", b"{}") in {(row[5], row[6]) for row in rows}
    secret = [row for row in rows if row[5] and row[5].endswith("/config/users/alice")]
    logged = b'{"config":{"SCRAM-SHA-256":"salt=c2FsdA=="}}'
    assert [row[6] for row in secret] == ([scrub("", logged), b""] if chroot else [logged, b""])


def test_a_body_that_runs_past_its_record_ends_the_log_with_the_same_error() -> None:
    records = crafted()
    overrun = _record(len(records) + 1, 5, _string("/kafka/x") + struct.pack(">i", 500) + b"short",
                      digest=False)
    after = _record(len(records) + 2, 5, _string("/kafka/y") + _string(b"never seen") + struct.pack(">i", 1))
    content = _log(*records, overrun, after)
    rows = decoded_rows(content, "/kafka")
    assert rows == expected_rows(content, "/kafka")
    assert rows[-1][4] == LOG_ERROR and b"cannot decode the record" in rows[-1][6]
    assert rows[-1][0] == len(records)  # the zxid of the last txn before it
    assert not [row for row in rows if row[5] == "/y"]
    # a window that ends before the bad record never decodes it: its rows are whole, with no error
    assert decoded_rows(content, "/kafka", None, len(records)) == rows[:-1]


def test_a_sub_txn_that_runs_past_its_multi_ends_the_log() -> None:
    records = crafted()
    sub = _string("/kafka/x") + _string(b"data") + struct.pack(">i", 1)
    bad = struct.pack(">i", 1) + struct.pack(">ii", 5, len(sub) + 40) + sub
    content = _log(*records, _record(len(records) + 1, 14, bad, digest=False))
    rows = decoded_rows(content, "/kafka")
    assert rows == expected_rows(content, "/kafka") and rows[-1][4] == LOG_ERROR and rows[-1][0] == len(records)


def test_a_checksum_failure_keeps_the_rows_before_it() -> None:
    records = crafted()
    bad = bytearray(records[5])
    bad[-3] ^= 0xFF
    content = _log(*records[:5], bytes(bad), *records[6:])
    rows = decoded_rows(content, "")
    assert rows == expected_rows(content, "")
    assert rows[-1][4] == LOG_ERROR and b"checksum mismatch" in rows[-1][6] and rows[-1][0] == 5


def test_not_a_log_is_one_error_row() -> None:
    rows = decoded_rows(b"ZKSN" + bytes(40), "", first_zxid=10)
    assert len(rows) == 1 and rows[0][4] == LOG_ERROR and rows[0][0] == 9 and b"not a ZooKeeper" in rows[0][6]


def test_write_changes_gives_the_rows_of_build_changes(spark, zk_files, tmp_path: Path) -> None:
    """The pyarrow parts a local master writes hold what Spark's own writer would, types and all."""
    from kafka_zk_audit.history.changes import CHANGES, build_changes, write_changes

    target = tmp_path / "changes"
    (target / "stale").mkdir(parents=True)  # replaced, not added to
    written = write_changes(spark, str(zk_files.log_dir), str(target), chroot="/kafka")
    assert written.schema == CHANGES
    assert not (target / "stale").exists() and (target / "_SUCCESS").exists()
    assert not [p for p in target.iterdir() if p.name.startswith(".")]
    spark_rows = sorted(tuple(r) for r in build_changes(spark, str(zk_files.log_dir), chroot="/kafka").collect())
    assert sorted(tuple(r) for r in written.collect()) == spark_rows and len(spark_rows) > 100
    again = write_changes(spark, str(zk_files.log_dir), f"file://{target}", chroot="/kafka")
    assert again.count() == len(spark_rows)


def test_only_the_rare_shapes_go_one_by_one() -> None:
    from kafka_zk_audit.history.txncolumns import change_rows

    slow: list[str] = []
    change_rows(_log(*crafted()), "the log", "/kafka", None, None,
                lambda txn, record, columns: slow.append(f"{txn.type}:{txn.ops[0].path}"))
    assert sorted(slow) == ["create:/kafka/a/two-acls", "createSession:None", "multi:/kafka/a", "setACL:/kafka/a"]


def test_logs_without_digests_read_to_their_last_byte() -> None:
    """ZooKeeper 3.5 and older log no digest: a short path can sit in a range's last bytes."""
    records = [_record(1, 5, _string("/kafka/t") + _string(b"v") + struct.pack(">i", 1), digest=False),
               _record(2, 2, _string("/kafka/t"), digest=False), _record(3, 2, _string("/k"), digest=False)]
    content = _log(*records)[:-64]  # a range ends right after its last record
    rows = decoded_rows(content, "")
    assert rows == expected_rows(content, "") and [row[5] for row in rows] == ["/kafka/t", "/kafka/t", "/k"]
