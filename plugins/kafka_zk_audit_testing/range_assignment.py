"""The old ZooKeeper consumer's range assignment (kafka-zk-layout.md §6.3), as pure Python.

For one topic: the partitions are sorted numerically, the threads of every consumer subscribed to
the topic are sorted as strings (Java ``String.compareTo``, so ``…-10`` sorts before ``…-2``), and
with ``n = P // T`` and ``r = P % T`` the thread at index ``i`` owns ``count = n + (1 if i < r else 0)``
partitions starting at ``n * i + min(i, r)``. Threads left with nothing own no partition.
"""

from __future__ import annotations

from collections.abc import Iterable


def sort_thread_ids(thread_ids: Iterable[str]) -> list[str]:
    """Distinct thread ids in Java ``String.compareTo`` order (UTF-16 code units)."""
    return sorted(set(thread_ids), key=lambda thread_id: thread_id.encode("utf-16-be"))


def range_assign(partitions: list[int], thread_ids: list[str]) -> dict[int, str]:
    """Map each partition to the thread id that owns it under the range strategy."""
    ordered_partitions = sorted(set(partitions))
    threads = sort_thread_ids(thread_ids)
    if not threads:
        return {}
    per_thread, remainder = divmod(len(ordered_partitions), len(threads))
    owners: dict[int, str] = {}
    for index, thread_id in enumerate(threads):
        start = per_thread * index + min(index, remainder)
        count = per_thread + (1 if index < remainder else 0)
        for partition in ordered_partitions[start : start + count]:
            owners[partition] = thread_id
    return owners


def thread_ids(consumer_id: str, streams: int) -> list[str]:
    """The thread ids ``<consumer_id>-<n>`` of a consumer with ``streams`` streams for a topic."""
    return [f"{consumer_id}-{index}" for index in range(streams)]
