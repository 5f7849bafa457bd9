"""The old consumer's range assignment (kafka-zk-layout.md §6.3) against its documented examples."""

from __future__ import annotations

from kafka_zk_audit_testing.range_assignment import range_assign, sort_thread_ids, thread_ids


def owned_by(owners: dict[int, str]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {}
    for partition, thread in sorted(owners.items()):
        result.setdefault(thread, []).append(partition)
    return result


def by_node(owners: dict[int, str]) -> dict[str, list[int]]:
    """Partitions per consumer host, from thread ids ``<group>_<host>-<ms>-<hex>-<n>``."""
    result: dict[str, list[int]] = {}
    for partition, thread in sorted(owners.items()):
        result.setdefault(thread.split("_")[1].split("-")[0], []).append(partition)
    return result


def test_partition_assignor_doc_example():
    owners = range_assign([0, 1, 2, 3, 4], ["C1-0", "C1-1", "C2-0", "C2-1"])
    assert owners == {0: "C1-0", 1: "C1-0", 2: "C1-1", 3: "C2-0", 4: "C2-1"}


def test_seed_article_report_log_three_consumers_one_thread_each():
    """report-log, 4 partitions: node1 consumes 0,1; node2 consumes 2; node3 consumes 3."""
    consumers = [f"report-log-consumer_node{n}-1525741823119-3f2a9c1b" for n in (1, 2, 3)]
    threads = [thread for consumer in consumers for thread in thread_ids(consumer, 1)]
    assert by_node(range_assign([0, 1, 2, 3], threads)) == {"node1": [0, 1], "node2": [2], "node3": [3]}


def test_seed_article_report_log_three_consumers_two_threads_each():
    """Same topic, 2 threads each: node1 consumes 0,1; node2 consumes 2,3; node3 is idle."""
    consumers = [f"report-log-consumer_node{n}-1525741823119-3f2a9c1b" for n in (1, 2, 3)]
    threads = [thread for consumer in consumers for thread in thread_ids(consumer, 2)]
    assert by_node(range_assign([0, 1, 2, 3], threads)) == {"node1": [0, 1], "node2": [2, 3]}


def test_threads_sort_as_strings_so_10_comes_before_2():
    threads = thread_ids("g_host-1-abcdef12", 11)
    ordered = sort_thread_ids(threads)
    assert ordered.index("g_host-1-abcdef12-10") == 2
    assert ordered.index("g_host-1-abcdef12-2") == 3
    owners = range_assign(list(range(11)), threads)
    assert owners[2] == "g_host-1-abcdef12-10"
    assert owners[3] == "g_host-1-abcdef12-2"
    assert owners[10] == "g_host-1-abcdef12-9"


def test_partitions_sort_numerically_and_remainder_goes_to_the_first_threads():
    owners = range_assign([10, 2, 1, 0, 3, 11, 4], ["b-0", "a-0", "c-0"])
    # 7 partitions, 3 threads: n=2, r=1 -> a-0 gets 3, b-0 and c-0 get 2 each.
    assert owned_by(owners) == {"a-0": [0, 1, 2], "b-0": [3, 4], "c-0": [10, 11]}


def test_more_threads_than_partitions_and_no_threads():
    owners = range_assign([0, 1], ["t-0", "t-1", "t-2"])
    assert owners == {0: "t-0", 1: "t-1"}
    assert range_assign([0, 1, 2], []) == {}
    assert range_assign([], ["t-0"]) == {}


def test_duplicate_thread_ids_count_once():
    assert range_assign([0, 1], ["t-0", "t-0", "t-1"]) == {0: "t-0", 1: "t-1"}
