"""A transaction log's change rows decoded column-wise with numpy: the change table's hot path.

``txnlog.scan_records`` finds the records (lengths, end markers, checksums); ``change_rows`` then reads the
TxnHeader of every record at once, and the operations a Kafka cluster writes all the time (setData, create,
create2, delete, alone or in a multi with check ops, as the controller writes them) as numpy gathers, with no
Python object per txn. Every other record (createSession, closeSession, setACL, reconfig, a create with several
ACLs…) and any body that does not parse cleanly the fast way goes through ``txndecode.decode_record`` one by one, so
both paths give the same rows and the same errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_zk_audit.snapshot.files.arrow_views import VIEW_BUFFER_SPAN, slices
from kafka_zk_audit.snapshot.files.txndecode import DECODE_ERRORS, TXN_HEADER, Txn, decode_record
from kafka_zk_audit.snapshot.files.txnlog import TxnLogError, scan_records, undecodable

SET_DATA, CREATE, DELETE, CREATE2, CHECK, MULTI, ERROR = 5, 1, 2, 15, 13, 14, -1
FAST_OPS = {SET_DATA: "setData", CREATE: "create", DELETE: "delete", CREATE2: "create2"}  # the ops with a row
_FAST_CODES = np.array(sorted(FAST_OPS), dtype=np.int64)
_READ_CODES = np.array([*sorted(FAST_OPS), CHECK, ERROR], dtype=np.int64)  # check and error: read, no row
_OP_NAMES = pa.array([FAST_OPS[code] for code in sorted(FAST_OPS)], pa.string())
_HEADER = np.arange(TXN_HEADER.size)
_INT = np.arange(4)
ROW_FIELDS = ("zxid", "op_index", "time_ms", "session", "op", "path", "data", "version", "ephemeral")
EarlyEnd = tuple[int | None, TxnLogError]  # the zxid of the last txn before the error, and the error
SlowRows = Callable[[Txn, int, dict[str, list[Any]]], None]


def _int32s(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The big-endian int at each offset (offsets past the buffer read its last int: the caller's checks fail)."""
    at = np.clip(at, 0, len(data) - 4)
    return data[at[:, None] + _INT].view(">i4").ravel().astype(np.int64)


def _header_field(header: np.ndarray, start: int, size: int) -> np.ndarray:
    field = np.ascontiguousarray(header[:, start:start + size]).view(">i8" if size == 8 else ">i4").ravel()
    return field.astype(np.int64 if size == 8 else np.int32)


def change_rows(buf: Any, name: str, root: str, after_zxid: int | None, last_zxid: int | None,
                slow_rows: SlowRows, fileno: int | None = None) -> tuple[pa.Table, EarlyEnd | None]:
    """The change rows of the log in ``buf`` (a whole file, or its header and a run of whole records): txns with
    zxid in (after_zxid, last_zxid], paths relative to ``root`` ("" for none), rows outside it dropped, data as
    logged; a table of ``ROW_FIELDS``: the rows read the fast way in log order, then the others in log order
    (the table is ordered by zxid where it is read). Also the error that ended the log early, if one did, with
    the zxid of the last txn before it (None when there is none); a record after ``last_zxid`` is never decoded.
    ``slow_rows(txn, record, columns)`` appends the rows of a txn left to the one-by-one decoder, and ``record``
    to ``columns["record"]`` for each."""
    view = memoryview(buf)
    scan = scan_records(view, name, fileno)
    data = np.frombuffer(view, dtype=np.uint8)
    starts = np.asarray(scan.starts, dtype=np.int64)
    ends = np.asarray(scan.ends, dtype=np.int64)
    error = scan.error
    header = data[starts[:, None] + _HEADER] if len(starts) else np.zeros((0, TXN_HEADER.size), np.uint8)
    session, zxid = _header_field(header, 0, 8), _header_field(header, 12, 8)
    time_ms, code = _header_field(header, 20, 8), _header_field(header, 28, 4)
    wanted = zxid > (after_zxid if after_zxid is not None else -(1 << 63))
    if last_zxid is not None:
        past = np.flatnonzero(wanted & (zxid > last_zxid))
        if len(past):  # the decoder stops at the first txn after the window: what follows is never looked at
            wanted[past[0]:] = False
            error = None
    records = np.flatnonzero(wanted)
    ops = _operations(data, records, starts[records] + TXN_HEADER.size, ends[records], code[records])
    fast = _fast_bodies(data, ops)
    not_fast = np.bincount(ops["position"], weights=~fast["ok"], minlength=len(records))
    fast_record = ops["whole"] & (not_fast == 0)  # every operation of the record read the fast way
    slow: dict[str, list[Any]] = {field: [] for field in (*ROW_FIELDS, "record")}
    decoded = len(records)
    for position in np.flatnonzero(~fast_record).tolist():
        record = int(records[position])
        start = int(starts[record])
        try:
            txn = decode_record(view, start, int(ends[record]))
        except DECODE_ERRORS as exc:  # this record and every later one are left out
            error = undecodable(name, start, exc)
            decoded = position
            break
        slow_rows(txn, record, slow)
    # a multi with an error sub-op changed nothing
    failed = np.bincount(ops["position"], weights=ops["code"] == ERROR, minlength=len(records)) > 0
    with_row = (ops["position"] < decoded) & np.isin(ops["code"], _FAST_CODES)
    with_row &= fast_record[ops["position"]] & ~failed[ops["position"]]
    row_ops = np.flatnonzero(with_row)
    row_ops = row_ops[np.lexsort((ops["index"][row_ops], ops["position"][row_ops]))]  # log order
    table = _merge(data, root, ops["record"][row_ops], ops["index"][row_ops],
                   {field: column[row_ops] for field, column in fast.items()}, zxid, time_ms, session, slow)
    if error is None:
        return table, None
    return table, (int(zxid[records[decoded - 1]]) if decoded else None, error)


def _operations(data: np.ndarray, records: np.ndarray, body: np.ndarray, end: np.ndarray, code: np.ndarray
                ) -> dict[str, np.ndarray]:
    """The operations of the records: a single-op txn's body, or each sub-txn of a multi {int count, then per
    sub-txn int type, int length, body}. Per operation: the record, its position in ``records``, its index in
    the txn, its type, where its body starts and ends, and whether it is a sub-txn; ``whole`` per record: a
    multi's sub-txns lie within the record (else the record goes one by one)."""
    multi = code == MULTI
    count = np.where(multi, _int32s(data, body), 1)
    whole = ~multi | ((count >= 0) & (count <= (end - body - 4) // 8))
    single = np.flatnonzero(~multi)
    columns: dict[str, list[np.ndarray]] = {"position": [single], "index": [np.zeros(len(single), np.int64)],
                                            "code": [code[single].astype(np.int64)], "start": [body[single]],
                                            "end": [end[single]], "sub": [np.zeros(len(single), bool)]}
    open_multis = np.flatnonzero(multi & whole & (count > 0))
    at = body[open_multis] + 4
    index = 0
    while len(open_multis):
        sub_code, length = _int32s(data, at), _int32s(data, at + 4)
        sub_end = at + 8 + np.maximum(length, 0)
        whole[open_multis[sub_end > end[open_multis]]] = False
        for field, values in (("position", open_multis), ("index", np.full(len(open_multis), index)),
                              ("code", sub_code), ("start", at + 8), ("end", sub_end),
                              ("sub", np.ones(len(open_multis), bool))):
            columns[field].append(values)
        index += 1
        going = (count[open_multis] > index) & (sub_end <= end[open_multis])
        open_multis, at = open_multis[going], sub_end[going]
    ops = {field: np.concatenate(parts) for field, parts in columns.items()}
    ops["record"] = records[ops["position"]]
    ops["whole"] = whole
    return ops


def _fast_bodies(data: np.ndarray, ops: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The path, data, version and ephemeral flag of each operation's body, for setData, create, create2, delete,
    check and error bodies; ``ok`` where the body was read that way and lies within its bounds (the rest go one by
    one)."""
    body, end, code, sub = ops["start"], ops["end"], ops["code"], ops["sub"]
    ok = np.isin(code, _READ_CODES)
    is_error = code == ERROR
    path_length = np.where(is_error, 0, _int32s(data, body))
    after_path = np.where(is_error, body, body + 4 + np.maximum(path_length, 0))
    ok &= path_length >= -1
    creates = (code == CREATE) | (code == CREATE2)
    has_data = (code == SET_DATA) | creates
    data_length = np.where(has_data, _int32s(data, after_path), 0)
    after_data = np.where(has_data, after_path + 4 + np.maximum(data_length, 0), after_path)
    ok &= (data_length >= -1) & (path_length < VIEW_BUFFER_SPAN) & (data_length < VIEW_BUFFER_SPAN)
    # create: a one-ACL vector {int count 1, int perms, string scheme, string id}, bool ephemeral, int
    # parentCVersion (left out by the oldest top-level create bodies); a longer ACL vector goes one by one
    acl_count = np.where(creates, _int32s(data, after_data), 1)
    scheme_length = np.where(creates, _int32s(data, after_data + 8), 0)
    id_at = after_data + 12 + np.maximum(scheme_length, 0)
    id_length = np.where(creates, _int32s(data, id_at), 0)
    flag_at = id_at + 4 + np.maximum(id_length, 0)
    ok &= ~creates | ((acl_count == 1) & (scheme_length >= 0) & (id_length >= 0))
    stop = np.select([(code == SET_DATA) | (code == CHECK) | is_error, (code == CREATE) & ~sub, creates],
                     [after_data + 4, flag_at + 1, flag_at + 5], after_path)
    ok &= stop <= end
    version = _int32s(data, after_data).astype(np.int32)
    ephemeral = creates & (data[np.clip(flag_at, 0, len(data) - 1)] != 0)
    return {"path_at": body + 4, "path_length": path_length, "data_at": after_path + 4, "data_length": data_length,
            "version": version, "ephemeral": ephemeral, "code": code, "ok": ok}


def _merge(data: np.ndarray, root: str, record: np.ndarray, op_index: np.ndarray, fast: dict[str, np.ndarray],
           zxid: np.ndarray, time_ms: np.ndarray, session: np.ndarray, slow: dict[str, list[Any]]) -> pa.Table:
    """The fast rows (operation ``op_index`` of ``record``, bodies ``fast``, in log order), then the slow ones (in
    log order); rows outside ``root`` dropped and paths made relative to it."""
    path_at, path_length = fast["path_at"], fast["path_length"]
    keep = np.ones(len(record), dtype=bool)
    if root:
        path_at, path_length, keep = _under_root(data, root, path_at, path_length)
    record, op_index, code = record[keep], op_index[keep], fast["code"][keep]
    path_at, path_length = path_at[keep], path_length[keep]
    data_length, is_set = fast["data_length"][keep], code == SET_DATA
    buffer = pa.py_buffer(data)
    table = pa.table({
        "zxid": pa.array(zxid[record]),
        "op_index": pa.array(op_index.astype(np.int32)),
        "time_ms": pa.array(time_ms[record]),
        "session": pa.array(session[record]),
        "op": _OP_NAMES.take(pa.array(np.searchsorted(_FAST_CODES, code))),
        "path": slices(data, buffer, path_at, path_length, path_length >= 0, pa.string()),
        "data": slices(data, buffer, fast["data_at"][keep], data_length, (code != DELETE) & (data_length >= 0),
                       pa.binary()),
        "version": pa.array(fast["version"][keep], mask=~is_set),
        "ephemeral": pa.array(fast["ephemeral"][keep]),
    })
    table.column("path").validate(full=True)  # UTF-8 (ZooKeeper's Java client always writes it)
    if not slow["record"]:
        return table
    return pa.concat_tables([table, pa.table({field: pa.array(slow[field], type=table.schema.field(field).type)
                                              for field in ROW_FIELDS})])


def _under_root(data: np.ndarray, root: str, at: np.ndarray, length: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paths below ``root`` made relative to it ("/" for the root itself): new offsets and lengths, and which
    paths are kept (a null path is kept as it is)."""
    prefix = np.frombuffer((root + "/").encode(), dtype=np.uint8)
    cut = len(prefix) - 1
    head = data[np.clip(at, 0, len(data) - len(prefix))[:, None] + np.arange(len(prefix))]
    starts_with = (length >= len(prefix)) & (head == prefix).all(axis=1)
    is_root = (length == cut) & (head[:, :cut] == prefix[:cut]).all(axis=1)
    keep = starts_with | is_root | (length < 0)
    new_at = np.where(starts_with, at + cut, at)
    new_length = np.where(starts_with, length - cut, np.where(is_root, 1, length))  # the root's own "/"
    return new_at, new_length, keep


def secret_rows(table: pa.Table, prefixes: Sequence[str]) -> np.ndarray:
    """The rows whose path starts with one of ``prefixes`` and whose data is not empty."""
    paths = table.column("path")
    hit = np.zeros(table.num_rows, dtype=bool)
    for prefix in prefixes:
        hit |= np.asarray(pc.fill_null(pc.starts_with(paths, prefix), False).to_numpy(zero_copy_only=False))
    sizes = pc.fill_null(pc.binary_length(table.column("data")), 0).to_numpy(zero_copy_only=False)
    return np.flatnonzero(hit & (np.asarray(sizes) > 0))
