"""The transaction log decoder on a real ZooKeeper's logs: it agrees with ZooKeeper's TxnLogToolkit, decodes
every txn type Kafka's writes produce, and refuses corruption without using half a log."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from kafka_zk_audit.history.task import logged_since
from kafka_zk_audit.snapshot.files.sources import StagedFiles
from kafka_zk_audit.snapshot.files.txnlog import RECORD_HEAD, TxnLogError, iter_txns, log_files

from .java_tools import txn_log_toolkit

pytestmark = pytest.mark.zk


def test_every_txn_agrees_with_zookeepers_txn_log_toolkit(zk_files):
    logs = log_files(zk_files.log_dir)
    assert len(logs) >= 2
    for path in logs:
        ours = [(txn.session, txn.cxid, txn.zxid, txn.type) for txn in iter_txns(path)]
        assert ours == txn_log_toolkit(path) and ours, path.name


def test_the_logs_hold_every_kind_of_write_continuously(zk_files):
    txns = [txn for path in log_files(zk_files.log_dir) for txn in iter_txns(path)]
    assert [txn.zxid for txn in txns] == list(range(1, zk_files.final_zxid + 1))
    kinds = Counter(txn.type for txn in txns)
    assert {"create", "setData", "delete", "setACL", "multi", "createSession", "closeSession"} <= set(kinds)
    multis = [txn for txn in txns if txn.type == "multi"]
    assert any(txn.failed for txn in multis) and any(not txn.failed for txn in multis)
    checked = next(txn for txn in multis if txn.ops[0].op == "check")
    assert [op.op for op in checked.ops] == ["check", "setData", "create"]
    closing = [txn for txn in txns if txn.type == "closeSession" and txn.ops[0].paths]
    assert any("/kafka/brokers/ids/99" in txn.ops[0].paths for txn in closing)
    assert all(txn.digest is not None for txn in txns if txn.type != "error")  # 3.8 logs a TxnDigest
    after = zk_files.final_zxid - 2  # the last two txns may sit in two logs when the server rolled between them
    assert [txn.zxid for path in log_files(zk_files.log_dir) for txn in iter_txns(path, after_zxid=after)] == [
        zk_files.final_zxid - 1, zk_files.final_zxid]


def _record_offsets(data: bytes) -> list[int]:
    offsets, pos = [], 16
    while True:
        _, length = RECORD_HEAD.unpack_from(data, pos)
        if length == 0:
            return offsets
        offsets.append(pos)
        pos += RECORD_HEAD.size + length + 1


def _first_log(zk_files, tmp_path) -> tuple[bytes, list[int]]:
    path = log_files(zk_files.log_dir)[0]
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    data = copy.read_bytes()
    return data, _record_offsets(data)


def test_a_corrupted_record_is_refused_with_where_and_what_to_do(zk_files, tmp_path):
    data, offsets = _first_log(zk_files, tmp_path)
    middle = offsets[len(offsets) // 2]
    corrupt = bytearray(data)
    corrupt[middle + RECORD_HEAD.size + 30] ^= 0x01
    seen = []
    with pytest.raises(TxnLogError, match=rf"checksum mismatch in the record at offset {middle}.*restore"):
        seen.extend(iter_txns(bytes(corrupt)))
    bad = tmp_path / "log.1"
    bad.write_bytes(bytes(corrupt))
    with pytest.raises(TxnLogError, match="log.1: checksum mismatch"):
        list(iter_txns(bad))


def test_a_partial_last_record_ends_the_log_cleanly(zk_files, tmp_path):
    data, offsets = _first_log(zk_files, tmp_path)
    whole = list(iter_txns(data))
    last = offsets[-1]
    cut_in_the_middle = data[:last + 20]
    assert [txn.zxid for txn in iter_txns(cut_in_the_middle)] == [txn.zxid for txn in whole[:-1]]
    zeroed_tail = data[:last + 20] + bytes(len(data) - last - 20)  # a crash while writing, preallocated zeros after
    assert [txn.zxid for txn in iter_txns(zeroed_tail)] == [txn.zxid for txn in whole[:-1]]


def test_data_after_the_end_or_a_bad_header_is_refused(zk_files, tmp_path):
    data, offsets = _first_log(zk_files, tmp_path)
    end = _record_offsets(data)[-1]
    end += RECORD_HEAD.size + RECORD_HEAD.unpack_from(data, end)[1] + 1
    for planted in (end + 5000, len(data) - 1):  # in the first MiB scanned, and the log's last byte
        garbage = bytearray(data)
        garbage[planted] = 0x7F  # a record zeroed out in the middle: later data follows the "end"
        with pytest.raises(TxnLogError, match=f"non-zero bytes at offset {planted} after the end-of-log marker"):
            list(iter_txns(bytes(garbage)))
    with pytest.raises(TxnLogError, match="not a ZooKeeper transaction log"):
        list(iter_txns(b"ZKSN" + data[4:]))
    with pytest.raises(TxnLogError, match="shorter than a log header"):
        list(iter_txns(data[:10]))


def test_a_history_window_without_transactions_is_known_without_spark(zk_files, tmp_path):
    """The history task skips its Spark application when the logs hold nothing from the window's first zxid on: the
    server's own last zxid is the oracle; an unreadable newest log lets the app run (and report it)."""
    staged = StagedFiles(str(zk_files.data_dir), str(zk_files.log_dir), "local")
    assert logged_since(staged, None)  # a first history reads every log
    assert logged_since(staged, 1) and logged_since(staged, zk_files.final_zxid)
    assert not logged_since(staged, zk_files.final_zxid + 1)
    assert not logged_since(StagedFiles(str(tmp_path), None, "local"), 5)  # no log at all
    copied = tmp_path / "logs"
    shutil.copytree(zk_files.log_dir, copied)
    newest = log_files(copied)[-1]
    raw = bytearray(newest.read_bytes())
    raw[RECORD_HEAD.size + 16] ^= 0xFF  # the first record's checksum no longer matches
    newest.write_bytes(bytes(raw))
    assert logged_since(StagedFiles(str(zk_files.data_dir), str(copied), "local"), zk_files.final_zxid + 1)
