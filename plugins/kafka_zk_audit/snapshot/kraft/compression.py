"""The record-batch compression codecs (attributes bits 0–2), through cramjam.

1 gzip, 2 snappy in snappy-java's xerial framing (``\\x82SNAPPY\\x00``, int32 version, int32 compatible version, then
blocks of int32 length + raw snappy; a raw snappy stream is accepted too), 3 the LZ4 frame format, 4 zstd frames
(``CompressionType`` and its ``*Factory`` classes in Kafka). The metadata log itself is written uncompressed.
"""

from __future__ import annotations

import struct

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = struct.Struct(">8sii")
XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_LENGTH = struct.Struct(">i")


class CompressionError(ValueError):
    """A compressed record stream that cannot be decompressed."""


def decompress(codec: int, data: bytes) -> bytes:
    """The records of a compressed batch, uncompressed."""
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except CompressionError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError; any failure means the same here
        raise CompressionError(f"{CODEC_NAMES[codec]}: {exc}") from exc
    raise CompressionError(f"compression codec {codec} is unknown (Kafka knows 0–4)")


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed as Kafka's producer would frame it for ``codec``."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        out = bytearray(XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
        for start in range(0, len(data), XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[start:start + XERIAL_BLOCK]))
            out += _LENGTH.pack(len(block)) + block
        return bytes(out)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"compression codec {codec} is unknown (Kafka knows 0–4)")


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos = XERIAL_HEADER.size
    out = bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("snappy: the xerial stream ends inside a block length")
        (length,) = _LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CompressionError(f"snappy: a xerial block of {length} bytes runs past the stream")
        out += bytes(cramjam.snappy.decompress_raw(data[pos:pos + length]))
        pos += length
    return bytes(out)
