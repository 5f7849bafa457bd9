"""ZooKeeper's tree digest (DigestCalculator v2): each znode's CRC32, one at a time or vectorized over a snapshot's
columns, and the tree's sum of them (AdHash)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from functools import cache

import numpy as np

from kafka_zk_audit.snapshot.files.datatree import Node, NodeMap

DIGEST_FIELDS = struct.Struct(">qqqqqiiiq")  # czxid mzxid pzxid ctime mtime version cversion aversion owner
ZOOKEEPER_SUBTREE = "/zookeeper/"  # DigestCalculator leaves the nodes below it out of the tree digest
MASK32 = 0xFFFFFFFF


def node_digest(path: str, node: Node) -> int:
    """ZooKeeper's per-node digest (DigestCalculator v2): CRC32 of path, data and nine stat fields; 0 below
    /zookeeper/; the root hashes as ""."""
    if path.startswith(ZOOKEEPER_SUBTREE):
        return 0
    crc = zlib.crc32(b"" if path == "/" else path.encode("utf-8", "surrogateescape"))
    if node.data:
        crc = zlib.crc32(node.data, crc)
    return zlib.crc32(
        DIGEST_FIELDS.pack(node.czxid, node.mzxid, node.pzxid, node.ctime, node.mtime, node.version,
                           node.cversion, node.aversion, node.ephemeral_owner),
        crc,
    )


def tree_digest(nodes: Mapping[str, Node]) -> int:
    """The tree digest: the sum of every node's digest, mod 2^64 (AdHash)."""
    if isinstance(nodes, NodeMap) and nodes.pristine():
        return nodes.table.digest
    return sum(node_digest(path, node) for path, node in nodes.items()) & 0xFFFFFFFFFFFFFFFF


def crc32_of_stats(crcs: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Each node's digest: its CRC32 so far (path, data) continued over its nine stat fields in digest order
    (czxid mzxid pzxid ctime mtime version cversion aversion owner) — zlib.crc32(fields, crc), vectorized.

    ``words`` is each node's tail (aclRef, StatPersisted) as little-endian 16-bit words. CRC32 is linear over
    GF(2): for a message m of fixed length, crc32(m, c) = shift(~c) ^ H(m) ^ 0xFFFFFFFF, H the XOR of one table
    entry per 16-bit word of m and shift the XOR of one per 16-bit half of ~c.
    """
    shift_low, shift_high, word_tables = _crc_tables(len(DIGEST_WORDS) * 2)
    inverted = ~crcs
    result = shift_low[inverted & 0xFFFF] ^ shift_high[inverted >> 16]
    for table, column in zip(word_tables, DIGEST_WORDS, strict=True):
        result ^= table[words[:, column]]
    return ~result


# The 16-bit words of a node's tail in digest order: czxid mzxid (tail bytes 8-24), pzxid (60-68), ctime mtime
# version cversion aversion owner (24-60).
DIGEST_WORDS = (*range(4, 12), *range(30, 34), *range(12, 30))


@cache
def _crc_tables(length: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """For messages of ``length`` bytes: the tables of shift (by low and high 16 bits of ~c) and of H by
    2-byte position, each indexed by the little-endian 16-bit value."""
    def h_table(position: int) -> np.ndarray:
        message = bytearray(length)
        table = np.empty(256, dtype=np.uint32)
        for value in range(256):
            message[position] = value
            table[value] = ~zlib.crc32(message, MASK32) & MASK32
        return table

    def shift_table(byte: int) -> np.ndarray:
        zeros = bytes(length)
        return np.array([~zlib.crc32(zeros, ~(value << (8 * byte)) & MASK32) & MASK32 for value in range(256)],
                        dtype=np.uint32)

    def pair(low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return (high[:, None] ^ low[None, :]).ravel()  # index: high byte * 256 + low byte

    shift_low = pair(shift_table(0), shift_table(1))
    shift_high = pair(shift_table(2), shift_table(3))
    positions = [pair(h_table(2 * word), h_table(2 * word + 1)) for word in range(length // 2)]
    return shift_low, shift_high, positions

