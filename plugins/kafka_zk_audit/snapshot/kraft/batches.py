"""Record batches (magic v2) of the metadata log and snapshots: walked, checked, decoded, and written back.

Layout (``DefaultRecordBatch``): a 61-byte header {baseOffset, batchLength, partitionLeaderEpoch, magic 2, CRC-32C of
bytes [21, end), attributes, lastOffsetDelta, base/maxTimestamp, producerId/Epoch, baseSequence, recordsCount}, then
the records (``DefaultRecord``: zigzag varints for length, timestamp/offset deltas, key and value lengths, headers),
compressed as one stream when the codec bits are set. A data record's value is a framed metadata record, a control
record's key is {int16 version, int16 type} and its value a bare v0 body (``messages``).

Broken framing (a truncated tail, bad magic, a CRC mismatch, a record that does not end where its length says) is a
``KraftLogError`` naming the file, byte and offset; a record whose value cannot be decoded (unknown apiKey or
version, a pre-release layout) is an ``Undecodable`` among the records, never an exception.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from crc32c import crc32c

from kafka_zk_audit.snapshot.kraft.compression import CompressionError, compress, decompress
from kafka_zk_audit.snapshot.kraft.messages import (
    DECODE_FAILURES,
    FAST_DECODERS,
    decode_control_value,
    decode_metadata_value,
    encode_control_value,
    encode_metadata_value,
    record_name,
)
from kafka_zk_audit.snapshot.kraft.wire import read_varint, read_varlong, write_varint

HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes before what batchLength counts
CRC_START = 21
MAGIC = 2
CONTROL_FLAG = 0x20
CODEC_MASK = 0x07
CONTROL_KEY = struct.Struct(">hh")
NO_PRODUCER = (-1, -1, -1)


class KraftError(ValueError):
    """KRaft metadata files that cannot be used as asked; the message says what to do."""


class KraftLogError(KraftError):
    """A log segment or checkpoint whose framing is broken: which file, where, what, and what to do about it."""

    def __init__(self, file: str, position: int, offset: int | None, what: str, what_to_do: str) -> None:
        self.file, self.position, self.offset, self.what, self.what_to_do = file, position, offset, what, what_to_do
        where = f"byte {position}" + (f" (offset {offset})" if offset is not None else "")
        super().__init__(f"{file}: {where}: {what}; {what_to_do}")


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded record: a framed metadata record, or a control record (``control``, ``api_key`` = its type)."""

    offset: int  # absolute log offset (in a .checkpoint, counted from 0 within the snapshot)
    timestamp: int  # ms: batch baseTimestamp + the record's delta
    epoch: int  # the batch's partitionLeaderEpoch
    control: bool
    api_key: int
    version: int
    name: str
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A record whose value could not be decoded; ``value`` keeps its bytes so the batch can be written back."""

    offset: int
    timestamp: int
    epoch: int
    api_key: int | None
    version: int | None
    reason: str
    file: str
    control: bool = False
    value: bytes = field(default=b"", repr=False, compare=False)


Record = MetadataRecord | Undecodable
_SETTERS = tuple(getattr(MetadataRecord, item.name).__set__ for item in dataclass_fields(MetadataRecord))


def _fast_record_constructor():  # type: ignore[no-untyped-def]
    """``MetadataRecord(...)`` at half the cost: the frozen ``__init__`` goes through ``object.__setattr__`` for each
    field (~1 µs a record); setting the slots through their descriptors does the same in ~0.5 µs."""
    new = object.__new__
    set_offset, set_timestamp, set_epoch, set_control, set_api_key, set_version, set_name, set_fields = _SETTERS

    def new_record(offset: int, timestamp: int, epoch: int, control: bool, api_key: int, version: int, name: str,
                   fields: dict[str, Any]) -> MetadataRecord:
        record = new(MetadataRecord)
        set_offset(record, offset)
        set_timestamp(record, timestamp)
        set_epoch(record, epoch)
        set_control(record, control)
        set_api_key(record, api_key)
        set_version(record, version)
        set_name(record, name)
        set_fields(record, fields)
        return record

    return new_record


new_record = _fast_record_constructor()


@dataclass(frozen=True, slots=True)
class Envelope:
    """The parts of a record Kafka's KRaft writer always sets the same way, kept when a record differs."""

    attributes: int = 0
    key: bytes | None = None
    headers: tuple[tuple[bytes, bytes | None], ...] = ()
    null_value: bool = False


@dataclass(slots=True)
class Batch:
    """One record batch as found at ``position`` in ``file``, with its decoded records (read-only by convention:
    not frozen, because a frozen dataclass costs a microsecond a batch to build)."""

    file: str
    position: int  # byte position of the batch in the file
    base_offset: int
    length: int  # the batchLength field: the batch occupies 12 + length bytes
    epoch: int  # partitionLeaderEpoch
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    records: tuple[Record, ...]
    envelopes: dict[int, Envelope] = field(default_factory=dict, repr=False, compare=False)  # by record index

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.length

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK


def peek_base_offset(data: bytes, position: int) -> int | None:
    """The baseOffset of the batch at ``position``, or None when fewer than 8 bytes are left."""
    return struct.unpack_from(">q", data, position)[0] if position + 8 <= len(data) else None


def iter_batches(data: bytes, file: str, *, start: int = 0, stop_offset: int | None = None,
                 decode: bool = True) -> Iterator[Batch]:
    """The batches of a segment or checkpoint held in ``data``, in file order, each checked (magic, CRC, framing).

    Stops after the batch holding ``stop_offset`` (so a broken tail past it is never read).
    With ``decode=False`` the records are left out (``records`` is empty), which is enough to count and to find
    offsets and timestamps; the CRC and framing are still checked.
    """
    position = start
    size = len(data)
    while position < size:
        if stop_offset is not None:
            base = peek_base_offset(data, position)
            if base is not None and base > stop_offset:
                return
        batch = read_batch(data, position, file, decode=decode)
        yield batch
        if stop_offset is not None and batch.base_offset + batch.last_offset_delta >= stop_offset:
            return
        position += LOG_OVERHEAD + batch.length


_SKIP = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")


def seek_offset(data: bytes, offset: int, start: int = 0) -> int:
    """The position of the first batch holding ``offset`` or a later one (``len(data)`` if none), found by reading
    only the batch lengths and offset deltas: the batches skipped are not checked (their CRCs are not read)."""
    position, size = start, len(data)
    while position + HEADER.size <= size:
        base_offset, length = _SKIP.unpack_from(data, position)
        if length < HEADER.size - LOG_OVERHEAD:
            return position  # corrupt: read_batch reports it
        if base_offset + _LAST_DELTA.unpack_from(data, position + 23)[0] >= offset:
            return position
        position += LOG_OVERHEAD + length
    return position  # the end, or a tail too short for a header: read_batch reports it


def read_batch(data: bytes, position: int, file: str, *, decode: bool = True) -> Batch:
    """The batch at ``position``; raises KraftLogError when it is truncated or corrupt."""
    left = len(data) - position
    if left < HEADER.size:
        base = peek_base_offset(data, position)
        raise _truncated(file, position, base, f"the file ends {left} byte(s) into a batch header")
    (base_offset, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch,
     base_sequence, count) = HEADER.unpack_from(data, position)
    if length < HEADER.size - LOG_OVERHEAD:
        raise KraftLogError(file, position, base_offset, f"batch length {length} is shorter than a batch header",
                            "the file is corrupt from here: copy it again from the broker, or audit an offset before "
                            "this one (--at-offset)")
    end = position + LOG_OVERHEAD + length
    if end > len(data):
        raise _truncated(file, position, base_offset,
                         f"the batch needs {LOG_OVERHEAD + length} bytes, the file has {left} left")
    if magic != MAGIC:
        raise KraftLogError(file, position, base_offset, f"magic {magic}, not 2 (record batch v2)",
                            "this is not a KRaft metadata log segment, or it is corrupt here")
    actual = crc32c(data[position + CRC_START:end])
    if actual != crc:
        raise KraftLogError(file, position, base_offset, f"CRC-32C mismatch (stored {crc:#010x}, computed "
                            f"{actual:#010x})", "the batch is corrupt: copy the file again from the broker, or audit "
                            f"an offset before {base_offset} (--at-offset)")
    records: tuple[Record, ...] = ()
    envelopes: dict[int, Envelope] = {}
    if decode:
        body_start = position + HEADER.size
        body, body_end = data, end
        if attributes & CODEC_MASK:
            try:
                body = decompress(attributes & CODEC_MASK, data[body_start:end])
            except CompressionError as exc:
                raise KraftLogError(file, position, base_offset, f"the compressed records cannot be read ({exc})",
                                    "the batch is corrupt: copy the file again from the broker") from None
            body_start, body_end = 0, len(body)
        records = _decode_records(body, body_start, body_end, count, base_offset, base_ts, epoch,
                                  bool(attributes & CONTROL_FLAG), file, position, envelopes)
    return Batch(file, position, base_offset, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
                 producer_id, producer_epoch, base_sequence, count, records, envelopes)


def _decode_records(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int, epoch: int,
                    control: bool, file: str, position: int, envelopes: dict[int, Envelope]) -> tuple[Record, ...]:
    """The ``count`` records in ``buf[pos:end]``; the last one must end exactly at ``end``.

    The hot loop of the codec: a varint that fits one byte (nearly all of them) is read inline, and a metadata
    record whose frame fits three bytes goes straight to its compiled decoder.
    """
    records: list[Record] = []
    append = records.append
    fast = FAST_DECODERS
    offset = base_offset
    try:
        for index in range(count):
            byte = buf[pos]
            if byte < 0x80:
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            else:
                length, pos = read_varint(buf, pos)
            record_end = pos + length
            if record_end > end:
                raise IndexError
            attributes = buf[pos]
            byte = buf[pos + 1]
            if byte < 0x80:
                ts_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                ts_delta, pos = read_varlong(buf, pos + 1)
            byte = buf[pos]
            if byte < 0x80:
                offset_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            else:
                offset_delta, pos = read_varint(buf, pos)
            key = None
            if buf[pos] == 1:  # -1: no key, as every metadata record
                pos += 1
            else:
                key_length, pos = read_varint(buf, pos)
                if key_length >= 0:
                    key, pos = buf[pos:pos + key_length], pos + key_length
            byte = buf[pos]
            if byte < 0x80:
                value_length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            else:
                value_length, pos = read_varint(buf, pos)
            if value_length > 0:
                value, pos = buf[pos:pos + value_length], pos + value_length
            else:
                value = b""
            headers: list[tuple[bytes, bytes | None]] | None = None
            if buf[pos] == 0:
                pos += 1
            else:
                headers = []
                pos = _read_headers(buf, pos, headers)
            offset = base_offset + offset_delta
            if pos != record_end:
                raise KraftLogError(file, position, offset, f"record {index} of the batch ends at byte {pos} of the "
                                    f"records, its length says {record_end}", "the batch is corrupt")
            timestamp = base_ts + ts_delta
            standard_key = None
            record: Record | None = None
            if control:
                record, standard_key = _control_record(key, value, offset, timestamp, epoch, file)
            elif len(value) > 3 and value[0] == 1 and value[1] < 0x80 and value[2] < 0x80:
                entry = fast.get(value[1] << 7 | value[2])
                if entry is not None:
                    try:
                        fields, value_end = entry[0](value, 3)
                    except DECODE_FAILURES:
                        value_end = -1
                    if value_end == len(value):
                        record = new_record(offset, timestamp, epoch, False, value[1], value[2], entry[1], fields)
            if record is None:
                record = _data_record(value, offset, timestamp, epoch, file)
            if attributes or headers or key != standard_key or value_length < 0:
                envelopes[index] = Envelope(attributes, key, tuple(headers or ()), value_length < 0)
            append(record)
    except (IndexError, ValueError) as exc:
        if isinstance(exc, KraftLogError):
            raise
        raise KraftLogError(file, position, offset, f"record {len(records)} of {count} runs past the end of the batch",
                            "the batch is corrupt: copy the file again from the broker") from None
    if pos != end:
        raise KraftLogError(file, position, offset, f"{end - pos} byte(s) after the batch's last record",
                            "the batch is corrupt: copy the file again from the broker")
    return tuple(records)


def _read_headers(buf: bytes, pos: int, headers: list[tuple[bytes, bytes | None]]) -> int:
    """Record headers (KRaft writes none); appended to ``headers``, the position after them returned."""
    header_count, pos = read_varint(buf, pos)
    for _ in range(header_count):
        key_length, pos = read_varint(buf, pos)
        key, pos = buf[pos:pos + key_length], pos + key_length
        value_length, pos = read_varint(buf, pos)
        value = None
        if value_length >= 0:
            value, pos = buf[pos:pos + value_length], pos + value_length
        headers.append((key, value))
    return pos


def _data_record(value: bytes, offset: int, timestamp: int, epoch: int, file: str) -> Record:
    api_key, version, fields = decode_metadata_value(value)
    if isinstance(fields, str):
        return Undecodable(offset, timestamp, epoch, api_key, version, fields, file, False, value)
    return MetadataRecord(offset, timestamp, epoch, False, api_key, version, record_name(api_key), fields)  # type: ignore[arg-type]


def _control_record(key: bytes | None, value: bytes, offset: int, timestamp: int, epoch: int,
                    file: str) -> tuple[Record, bytes | None]:
    if key is None or len(key) < 4:
        reason = "a control record without its 4-byte key (version, type)"
        return Undecodable(offset, timestamp, epoch, None, None, reason, file, True, value), None
    _key_version, control_type = CONTROL_KEY.unpack_from(key)
    standard_key = CONTROL_KEY.pack(0, control_type)
    fields = decode_control_value(control_type, value)
    if isinstance(fields, str):
        return Undecodable(offset, timestamp, epoch, control_type, 0, fields, file, True, value), standard_key
    return MetadataRecord(offset, timestamp, epoch, True, control_type, 0, record_name(control_type, True),
                          fields), standard_key


# -- writing -------------------------------------------------------------------------------------------------


def encode_record(api_key: int, version: int, fields: dict[str, Any], *, control: bool = False) -> bytes:
    """A record's value: frame + body for a metadata record, the bare v0 body for a control record."""
    return encode_control_value(api_key, fields) if control else encode_metadata_value(api_key, version, fields)


def record_value(record: Record | tuple[int, int, dict[str, Any]] | bytes, control: bool) -> bytes:
    """The value bytes of a decoded record (an Undecodable keeps its own), an (apiKey, version, fields), or bytes."""
    if isinstance(record, bytes):
        return record
    if isinstance(record, Undecodable):
        return record.value
    if isinstance(record, MetadataRecord):
        return encode_record(record.api_key, record.version, record.fields, control=control)
    api_key, version, fields = record
    return encode_record(api_key, version, fields, control=control)


def _write_record(out: bytearray, offset_delta: int, ts_delta: int, value: bytes, envelope: Envelope) -> None:
    body = bytearray([envelope.attributes & 0xFF])
    write_varint(body, ts_delta)
    write_varint(body, offset_delta)
    if envelope.key is None:
        write_varint(body, -1)
    else:
        write_varint(body, len(envelope.key))
        body += envelope.key
    write_varint(body, -1 if envelope.null_value else len(value))
    body += value
    write_varint(body, len(envelope.headers))
    for header_key, header_value in envelope.headers:
        write_varint(body, len(header_key))
        body += header_key
        write_varint(body, -1 if header_value is None else len(header_value))
        body += header_value or b""
    write_varint(out, len(body))
    out += body


def _control_type(record: Record | tuple[int, int, dict[str, Any]] | bytes) -> int:
    if isinstance(record, (MetadataRecord, Undecodable)) and record.api_key is not None:
        return record.api_key
    if isinstance(record, tuple):
        return record[0]
    raise ValueError("a control record needs its type: pass (type, 0, fields) or a decoded record")


def assemble_batch(base_offset: int, epoch: int, attributes: int, base_timestamp: int, max_timestamp: int,
                   last_offset_delta: int, entries: Sequence[tuple[int, int, bytes, Envelope]],
                   producer: tuple[int, int, int] = NO_PRODUCER) -> bytes:
    """A batch from its header values and ``(offset delta, timestamp delta, value, envelope)`` per record."""
    records = bytearray()
    for offset_delta, ts_delta, value, envelope in entries:
        _write_record(records, offset_delta, ts_delta, value, envelope)
    payload = compress(attributes & CODEC_MASK, bytes(records))
    tail = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_timestamp, max_timestamp, *producer,
                       len(entries)) + payload
    length = HEADER.size - LOG_OVERHEAD + len(payload)
    head = struct.pack(">qiib", base_offset, length, epoch, MAGIC)
    return head + struct.pack(">I", crc32c(tail)) + tail


def encode_batch(batch: Batch) -> bytes:
    """The bytes of a decoded batch: for an uncompressed batch Kafka wrote, the very bytes it was read from."""
    control = batch.control
    entries = []
    for index, record in enumerate(batch.records):
        envelope = batch.envelopes.get(index)
        if envelope is None:
            key = CONTROL_KEY.pack(0, _control_type(record)) if control else None
            envelope = Envelope(0, key, ())
        entries.append((record.offset - batch.base_offset, record.timestamp - batch.base_timestamp,
                        record_value(record, control), envelope))
    return assemble_batch(batch.base_offset, batch.epoch, batch.attributes, batch.base_timestamp,
                          batch.max_timestamp, batch.last_offset_delta, entries,
                          (batch.producer_id, batch.producer_epoch, batch.base_sequence))


def build_batch(records: Iterable[Record | tuple[int, int, dict[str, Any]] | bytes], base_offset: int, epoch: int,
                timestamp: int, control: bool = False, compression: int = 0) -> bytes:
    """A new batch as KRaft writes one: records at consecutive offsets from ``base_offset``, all at ``timestamp``.

    A record is an ``(apiKey, version, fields)`` (for a control batch: ``(type, 0, fields)``), a decoded
    record, or a ready value (bytes; not for control batches).
    """
    entries = []
    for index, record in enumerate(records):
        key = CONTROL_KEY.pack(0, _control_type(record)) if control else None
        entries.append((index, 0, record_value(record, control), Envelope(0, key, ())))
    if not entries:
        raise ValueError("a batch holds at least one record")
    attributes = (CONTROL_FLAG if control else 0) | compression
    return assemble_batch(base_offset, epoch, attributes, timestamp, timestamp, len(entries) - 1, entries)


def _truncated(file: str, position: int, offset: int | None, what: str) -> KraftLogError:
    where = f"offset {offset}" if offset is not None else f"byte {position}"
    return KraftLogError(file, position, offset, f"the file is truncated: {what}",
                         f"Kafka truncates such a tail on restart; audit with --at-offset below the batch at {where}, "
                         "or copy the directory again once the broker has written it out")
