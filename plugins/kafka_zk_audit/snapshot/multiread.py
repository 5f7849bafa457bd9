"""ZooKeeper ``multiRead`` (opcode 22, servers >= 3.6, ZOOKEEPER-3402) as a kazoo request.

One request carries many getData / getChildren operations; each sub-result has its own data and
stat, its children, or its own error (for example NoNode for a znode deleted meanwhile). kazoo has
no public API for it; this request class goes through the client's ordinary request queue, the
same way kazoo's own ``Transaction`` does. It only reads.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    GetChildren,
    GetData,
    int_struct,
    multiheader_struct,
    read_buffer,
    read_string,
    stat_struct,
)
from kazoo.protocol.states import ZnodeStat

MULTI_READ_OPCODE = 22
ERROR_TYPE = -1


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
        buffer = bytearray()
        for op in self.operations:
            buffer.extend(multiheader_struct.pack(op.type, False, -1))
            buffer.extend(op.serialize())
        return buffer + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> MultiReadResult:
        results = MultiReadResult()
        results.response_bytes = len(buffer) - offset
        while True:
            op_type, done, _ = multiheader_struct.unpack_from(buffer, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op_type == GetData.type:
                data, offset = read_buffer(buffer, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buffer, offset))
                offset += stat_struct.size
                results.append((data, stat))
            elif op_type == GetChildren.type:
                count = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buffer, offset)
                    children.append(child)
                results.append(children)
            elif op_type == ERROR_TYPE:
                code = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                results.append(ReadError(EXCEPTIONS[code]()))
            else:
                raise ValueError(f"unexpected operation type {op_type} in a multiRead response")
