"""A reader of ZooKeeper's jute binary encoding: big-endian ints and longs, length-prefixed buffers and vectors."""

from __future__ import annotations

import struct

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")

Acl = tuple[int, str, str]


class JuteEOFError(EOFError):
    """The buffer ended inside a record."""


class JuteReader:
    """Reads jute primitives from a memoryview, keeping the position; raises JuteEOFError past the end."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = memoryview(buf)
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, size: int) -> int:
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise JuteEOFError(f"needs {size} bytes at offset {pos}, {self.end - pos} left")
        self.pos = pos + size
        return pos

    def int(self) -> int:
        return _INT.unpack_from(self.buf, self._need(4))[0]

    def long(self) -> int:
        return _LONG.unpack_from(self.buf, self._need(8))[0]

    def bool(self) -> bool:
        return self.buf[self._need(1)] != 0

    def byte(self) -> int:
        return self.buf[self._need(1)]

    def buffer(self) -> bytes | None:
        """A length-prefixed byte buffer; None for length −1."""
        length = self.int()
        if length < 0:
            return None
        start = self._need(length)
        return bytes(self.buf[start:start + length])

    def string(self) -> str | None:
        """A length-prefixed UTF-8 string; None for length −1."""
        length = self.int()
        if length < 0:
            return None
        start = self._need(length)
        return str(self.buf[start:start + length], "utf-8", "surrogateescape")

    def acl_vector(self) -> tuple[Acl, ...] | None:
        """A vector of ACL records {int perms, string scheme, string id}; None for a null vector."""
        count = self.int()
        if count < 0:
            return None
        return tuple((self.int(), self.string() or "", self.string() or "") for _ in range(count))

    def string_vector(self) -> tuple[str, ...] | None:
        count = self.int()
        if count < 0:
            return None
        return tuple(self.string() or "" for _ in range(count))
