"""The old consumer's range assignment, written out by hand: the oracle for both implementations.

``kafka_zk_audit_testing.range_assignment`` (the simulator writes owner znodes with it) and the Spark
check ``kafka_zk_audit.audit.checks.consumers.range_assignment`` must both give these owners. Nothing
here calls either: every table below was worked out on paper from Kafka's formula
(kafka-zk-layout.md §6.3, ``RangeAssignor``): partitions sorted by id, thread ids ``<consumer id>-<n>``
sorted as strings, ``n = nParts / nThreads``, ``r = nParts % nThreads``, and the thread at index ``i``
owns ``n + (i < r ? 1 : 0)`` partitions from ``n*i + min(i, r)``.

The seed articles' worked examples (the old consumer's rebalance, "report-log" with 4 partitions and
three consumer nodes; "topic1" with P0..P3 and consumers C0, C1) and the real consumer id they show
(``console-consumer-2304_hadoop2-1525747915241-6b48ff32``) are among them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class RangeExample:
    """One group consuming one topic: its partitions, each consumer's streams, and who owns what."""

    group: str
    topic: str
    partitions: tuple[int, ...]
    streams: dict[str, int]  # consumer id -> streams (threads) for the topic, in registration order
    owners: dict[int, str]  # partition -> owning thread id, worked out by hand

    def thread_ids(self) -> list[str]:
        """The threads ``<consumer id>-<n>``, unsorted (in the order the consumers are listed)."""
        return [f"{consumer}-{n}" for consumer, count in self.streams.items() for n in range(count)]


# The seed article's three consumer nodes, in Kafka's id format <group>_<host>-<start ms>-<uuid bits>.
NODE1 = "report-log-consumer_node1-1525747915241-6b48ff32"
NODE2 = "report-log-consumer_node2-1525747916380-0c1d2e3f"
NODE3 = "report-log-consumer_node3-1525747917502-9a8b7c6d"
# The registration the seed article reads with zkCli: `get /consumers/console-consumer-2304/ids/...`.
CONSOLE_CONSUMER = "console-consumer-2304_hadoop2-1525747915241-6b48ff32"

WORKED_EXAMPLES: tuple[RangeExample, ...] = (
    # PartitionAssignor's doc comment: 5 partitions, threads C1-0 C1-1 C2-0 C2-1; n = 5/4 = 1, r = 1.
    RangeExample("doc-example", "pa-topic", (0, 1, 2, 3, 4), {"C1": 2, "C2": 2},
                 {0: "C1-0", 1: "C1-0", 2: "C1-1", 3: "C2-0", 4: "C2-1"}),
    # Seed article: report-log, 4 partitions, three nodes with one thread each; n = 4/3 = 1, r = 1:
    # "node1 consumes 0 and 1, node2 consumes 2, node3 consumes 3".
    RangeExample("report-log-1-thread", "report-log", (0, 1, 2, 3), {NODE1: 1, NODE2: 1, NODE3: 1},
                 {0: f"{NODE1}-0", 1: f"{NODE1}-0", 2: f"{NODE2}-0", 3: f"{NODE3}-0"}),
    # Same topic, two threads each; n = 4/6 = 0, r = 4, the first four threads get one partition:
    # "node1 consumes 0 and 1, node2 consumes 2 and 3, node3 is idle".
    RangeExample("report-log-2-threads", "report-log", (0, 1, 2, 3), {NODE3: 2, NODE1: 2, NODE2: 2},
                 {0: f"{NODE1}-0", 1: f"{NODE1}-1", 2: f"{NODE2}-0", 3: f"{NODE2}-1"}),
    # Seed article's balance algorithm: topic1 with P0..P3, consumers C0 and C1; n = 4/2 = 2, r = 0:
    # "C0 = [P0, P1], C1 = [P2, P3]". (Its shorthand M = ceil(P/C), Ci = P[i*M .. (i+1)*M-1] agrees here,
    # but not with Kafka in general: for report-log with one thread per node it gives node2 2 and 3.)
    RangeExample("balance-example", "topic1", (0, 1, 2, 3), {"C1": 1, "C0": 1},
                 {0: "C0-0", 1: "C0-0", 2: "C1-0", 3: "C1-0"}),
    # The seed's real console consumer, subscribed to topic2 with 1 stream; topic2 has the seed's
    # example partitions {"0": [1, 2], "1": [2, 1], "2": [1, 2]}. One thread owns everything.
    RangeExample("console-consumer-2304", "topic2", (0, 1, 2), {CONSOLE_CONSUMER: 1},
                 {0: f"{CONSOLE_CONSUMER}-0", 1: f"{CONSOLE_CONSUMER}-0", 2: f"{CONSOLE_CONSUMER}-0"}),
    # Consumer ids sort as strings: "c-10-0" < "c-2-0" (numerically c-2 would come first); n = 1, r = 1.
    RangeExample("consumer-ids-as-strings", "cid-topic", (0, 1, 2), {"c-2": 1, "c-10": 1},
                 {0: "c-10-0", 1: "c-10-0", 2: "c-2-0"}),
    # Thread ids sort as strings: c-0 c-1 c-10 c-2 c-3 ... c-9; 14 partitions, 11 threads: n = 1, r = 3,
    # so c-0, c-1 and c-10 own two partitions each, the other eight one each.
    RangeExample("thread-ids-as-strings", "lex-topic", tuple(range(14)), {"c": 11},
                 {0: "c-0", 1: "c-0", 2: "c-1", 3: "c-1", 4: "c-10", 5: "c-10", 6: "c-2", 7: "c-3", 8: "c-4",
                  9: "c-5", 10: "c-6", 11: "c-7", 12: "c-8", 13: "c-9"}),
    # 12 partitions, 5 threads a-0 a-1 b-0 b-1 b-2: n = 2, r = 2 (Kafka's formula; the seed article's
    # shorthand M = ceil(12/5) = 3 would give b-0 6..8, b-1 9..11 and leave b-2 idle). Partitions sort
    # by id: sorted as strings, 10 and 11 would come right after 1.
    RangeExample("partitions-by-id", "wide-topic", tuple(range(12)), {"b": 3, "a": 2},
                 {0: "a-0", 1: "a-0", 2: "a-0", 3: "a-1", 4: "a-1", 5: "a-1", 6: "b-0", 7: "b-0", 8: "b-1",
                  9: "b-1", 10: "b-2", 11: "b-2"}),
)

# thread-ids-as-strings as an implementation sorting threads numerically would assign it (c-0 .. c-10):
# the owners of partitions 4..13 differ from Kafka's.
NUMERIC_THREAD_ORDER_OWNERS = {0: "c-0", 1: "c-0", 2: "c-1", 3: "c-1", 4: "c-2", 5: "c-2", 6: "c-3", 7: "c-4",
                               8: "c-5", 9: "c-6", 10: "c-7", 11: "c-8", 12: "c-9", 13: "c-10"}


def assert_range_shape(owners: dict[int, str], partitions: Iterable[int], thread_ids: Iterable[str]) -> None:
    """The range assignment's contract, as properties rather than a formula (ASCII thread ids only).

    Every partition has one owner among the threads; walking the threads in string order, each owns the
    next run of partitions in id order; runs differ in length by at most one, the longer ones first.
    """
    ordered_partitions = sorted(set(partitions))
    ordered_threads = sorted(set(thread_ids))  # for ASCII, Python's order is Java's String.compareTo
    if not ordered_threads:
        assert owners == {}
        return
    assert sorted(owners) == ordered_partitions
    assert set(owners.values()) <= set(ordered_threads)
    runs = [[p for p in ordered_partitions if owners[p] == thread] for thread in ordered_threads]
    assert [p for run in runs for p in run] == ordered_partitions
    lengths = [len(run) for run in runs]
    assert max(lengths) - min(lengths) <= 1
    assert lengths == sorted(lengths, reverse=True)
