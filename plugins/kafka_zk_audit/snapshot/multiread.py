"""ZooKeeper ``multiRead`` (opcode 22, servers >= 3.6, ZOOKEEPER-3402) as a kazoo request.

One request carries many getData / getChildren operations; each sub-result has its own data and
stat, its children, or its own error (for example NoNode for a znode deleted meanwhile). kazoo has
no public API for it; this request class goes through the client's ordinary request queue, the
same way kazoo's own ``Transaction`` does. It only reads.
"""

from __future__ import annotations

import struct
from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import GetChildren, GetData, int_struct, multiheader_struct, stat_struct
from kazoo.protocol.states import ZnodeStat

MULTI_READ_OPCODE = 22
ERROR_TYPE = -1
GET_DATA, GET_CHILDREN = GetData.type, GetChildren.type
# One sub-request: its header (type, done, error) and the length of its path; the path and a watch flag follow.
OPERATION = struct.Struct("!iBii")
NO_WATCH, WATCH = b"\x00", b"\x01"
END = multiheader_struct.pack(-1, True, -1)


def serialize_reads(operations: Iterable[tuple[int, str, bool]]) -> bytearray:
    """The body of a multiRead of ``(opcode, path, watch)`` sub-requests."""
    buffer = bytearray()
    pack = OPERATION.pack
    for op_type, path, watch in operations:
        encoded = path.encode()
        buffer += pack(op_type, False, -1, len(encoded))
        buffer += encoded
        buffer += WATCH if watch else NO_WATCH
    buffer += END
    return buffer


@dataclass(frozen=True, slots=True)
class ReadError:
    """The error one operation of a multiRead got (the others still succeed)."""

    error: Exception


class MultiReadResult(list):
    """The sub-results of one multiRead, and ``response_bytes``: the size of the response on the wire."""

    response_bytes: int = 0


class MultiRead(namedtuple("MultiRead", "operations")):
    """A list of ``GetData`` / ``GetChildren`` operations sent as one request.

    Paths must already carry the client's chroot. The response is a list with one entry per
    operation: ``(data, ZnodeStat)`` for getData, ``list[str]`` for getChildren, or ``ReadError``
    (for example NoNode for a znode deleted meanwhile, NoAuth for one the client may not read).
    """

    type = MULTI_READ_OPCODE

    def serialize(self) -> bytearray:
        return serialize_reads((op.type, op.path, op.watcher is not None) for op in self.operations)

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> MultiReadResult:
        """The sub-results (kazoo's ``read_buffer`` / ``read_string`` inlined: this runs once per znode)."""
        results = MultiReadResult()
        results.response_bytes = len(buffer) - offset
        append = results.append
        unpack_header, unpack_int, unpack_stat = (
            multiheader_struct.unpack_from, int_struct.unpack_from, stat_struct.unpack_from)
        make_stat = ZnodeStat._make
        while True:
            op_type, done, _ = unpack_header(buffer, offset)
            offset += 9
            if done:
                return results
            if op_type == GET_DATA:
                length = unpack_int(buffer, offset)[0]
                offset += 4
                if length < 0:
                    data = None
                else:
                    data = buffer[offset:offset + length]
                    offset += length
                append((data, make_stat(unpack_stat(buffer, offset))))
                offset += 68
            elif op_type == GET_CHILDREN:
                count = unpack_int(buffer, offset)[0]
                offset += 4
                children = []
                for _ in range(max(count, 0)):
                    length = unpack_int(buffer, offset)[0]
                    offset += 4
                    children.append(buffer[offset:offset + length].decode("utf-8"))
                    offset += length
                append(children)
            elif op_type == ERROR_TYPE:
                code = unpack_int(buffer, offset)[0]
                offset += 4
                append(ReadError(EXCEPTIONS[code]()))
            else:
                raise ValueError(f"unexpected operation type {op_type} in a multiRead response")


class PathReads(namedtuple("PathReads", "operations")):
    """A multiRead of ``(GET_DATA | GET_CHILDREN, path)`` pairs, without a kazoo object per read.

    Paths must already carry the client's chroot. The response is that of ``MultiRead``.
    """

    type = MULTI_READ_OPCODE
    deserialize = MultiRead.deserialize

    def serialize(self) -> bytearray:
        return serialize_reads((op_type, path, False) for op_type, path in self.operations)
