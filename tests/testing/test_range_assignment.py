"""The simulator's range assignment (kafka-zk-layout.md §6.3) against owners worked out by hand."""

from __future__ import annotations

import random

import pytest

from kafka_zk_audit_testing.range_assignment import range_assign, sort_thread_ids, thread_ids
from tests.range_examples import WORKED_EXAMPLES, RangeExample, assert_range_shape


@pytest.mark.parametrize("example", WORKED_EXAMPLES, ids=lambda example: example.group)
def test_worked_examples(example: RangeExample) -> None:
    assert range_assign(list(example.partitions), example.thread_ids()) == example.owners
    # The order the znodes are listed in does not matter.
    assert range_assign(list(reversed(example.partitions)), example.thread_ids()[::-1]) == example.owners


def test_threads_sort_as_java_strings() -> None:
    assert sort_thread_ids(thread_ids("c", 11)) == [
        "c-0", "c-1", "c-10", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7", "c-8", "c-9"]
    assert sort_thread_ids(["c-2-0", "c-10-0"]) == ["c-10-0", "c-2-0"]
    # Java compares UTF-16 code units: U+1F600 is the surrogate pair D83D DE00, below U+FF61.
    assert sort_thread_ids(["c-\uff61-0", "c-\U0001f600-0"]) == ["c-\U0001f600-0", "c-\uff61-0"]


def test_thread_ids_of_a_consumer() -> None:
    assert thread_ids("g_host-1525747915241-6b48ff32", 3) == [
        "g_host-1525747915241-6b48ff32-0", "g_host-1525747915241-6b48ff32-1", "g_host-1525747915241-6b48ff32-2"]
    assert thread_ids("g_host-1-abcdef12", 0) == []


def test_no_threads_no_partitions_and_duplicate_threads() -> None:
    assert range_assign([0, 1, 2], []) == {}
    assert range_assign([], ["t-0"]) == {}
    assert range_assign([0, 1], ["t-0", "t-0", "t-1"]) == {0: "t-0", 1: "t-1"}


def test_random_shapes_keep_the_range_contract() -> None:
    rng = random.Random(11)
    for _ in range(300):
        partitions = rng.sample(range(60), rng.randint(0, 30))
        threads = [f"g_host{rng.randint(1, 30)}-{k}-{n}" for k in range(rng.randint(0, 4))
                   for n in range(rng.randint(0, 13))]
        assert_range_shape(range_assign(partitions, threads), partitions, threads)
