"""The primitives of Kafka's wire format: varints (plain and zigzag), uuids, and the decode error.

Unsigned varints carry message-body lengths and tags; zigzag varints carry the record layout inside a batch
(``ByteUtils`` in Kafka). Readers take ``(buffer, position)`` and return ``(value, next position)``; writers append
to a ``bytearray``.
"""

from __future__ import annotations

from kafka_zk_audit.snapshot.kraft.schema import uuid_from_str, uuid_to_str

__all__ = ["DecodeError", "read_uvarint", "read_uvarint_tail", "read_varint", "read_varlong", "uuid_from_str",
           "uuid_to_str", "write_uvarint", "write_varint"]


class DecodeError(ValueError):
    """A message body that does not follow its schema (the reason is the message)."""


def read_uvarint_tail(buf: bytes, pos: int, first: int, max_bytes: int = 5) -> tuple[int, int]:
    """The rest of an unsigned varint whose first byte ``first`` (≥ 0x80) was read just before ``pos``."""
    value = first & 0x7F
    shift = 7
    for _ in range(max_bytes - 1):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(f"a varint longer than {max_bytes} bytes")


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 0x80:
        return first, pos + 1
    return read_uvarint_tail(buf, pos + 1, first)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded 32-bit varint (``ByteUtils.readVarint``)."""
    first = buf[pos]
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), pos + 1
    raw, pos = read_uvarint_tail(buf, pos + 1, first)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded 64-bit varint (``ByteUtils.readVarlong``)."""
    first = buf[pos]
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), pos + 1
    raw, pos = read_uvarint_tail(buf, pos + 1, first, 10)
    return (raw >> 1) ^ -(raw & 1), pos


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    """A zigzag varint or varlong (the same bytes for both when the value fits)."""
    write_uvarint(out, (value << 1) ^ (value >> 63))
