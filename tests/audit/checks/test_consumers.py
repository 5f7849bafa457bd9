"""The old consumer's range assignment recomputed in Spark, subscriptions (static and wildcard), pykafka.

The expected owners are the hand-worked tables of :mod:`tests.range_examples`, not another implementation.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import consumers
from tests.audit.checks.test_checks import (
    collect_by_label,
    consumer,
    make_tables,
    merge,
    owner,
    small_data_settings,
    topic,
)
from tests.range_examples import NUMERIC_THREAD_ORDER_OWNERS, WORKED_EXAMPLES, RangeExample, assert_range_shape

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


# A group like thread-ids-as-strings whose owner znodes follow a numeric thread order instead.
NUMERIC_GROUP = "thread-ids-numerically"


def _range_rows() -> dict[str, list]:
    """The worked examples' topics, registrations and (correct) owner znodes, plus NUMERIC_GROUP."""
    topics = {example.topic: example.partitions for example in WORKED_EXAMPLES}
    rows = merge(*[topic(name, {p: [1] for p in partitions}, czxid=i + 1)
                   for i, (name, partitions) in enumerate(topics.items())])
    lexicographic = next(e for e in WORKED_EXAMPLES if e.group == "thread-ids-as-strings")
    groups = [(e.group, e.topic, e.streams, e.owners) for e in WORKED_EXAMPLES]
    groups.append((NUMERIC_GROUP, lexicographic.topic, lexicographic.streams, NUMERIC_THREAD_ORDER_OWNERS))
    for group, name, streams, owners in groups:
        rows = merge(rows, {
            "consumer_registrations": [consumer(group, c, {name: count}) for c, count in streams.items()],
            "consumer_owners": [owner(group, name, p, thread) for p, thread in owners.items()],
        })
    return rows


def _random_rows(seed: int = 7) -> tuple[dict[str, list], dict[str, tuple[list[int], list[str]]]]:
    """Random groups and topics, with each group's partitions and threads (no owners: nobody computed them)."""
    rng = random.Random(seed)
    rows: dict[str, list] = {}
    shapes: dict[str, tuple[list[int], list[str]]] = {}
    for g in range(8):
        group, name = f"rand{g}", f"rand-topic-{g}"
        partition_ids = sorted(rng.sample(range(40), rng.randint(1, 14)))  # not necessarily dense
        rows = merge(rows, topic(name, {p: [1] for p in partition_ids}, czxid=100 + g))
        members = {f"{group}_host{rng.randint(1, 99)}-{k}": rng.randint(1, 12) for k in range(rng.randint(1, 4))}
        rows = merge(rows, {"consumer_registrations": [consumer(group, c, {name: s}) for c, s in members.items()]})
        shapes[group] = (partition_ids, [f"{c}-{n}" for c, s in members.items() for n in range(s)])
    return rows, shapes


def _wildcard_rows() -> dict[str, list]:
    rows = merge(*[topic(name, {0: [1], 1: [1]}, czxid=10)
                   for name in ("report-log", "report-log-eu", "xreport-log", "__consumer_offsets", "audit")])
    rows["consumer_registrations"] = [
        consumer("white", "w1", {"report-log.*": 1}, pattern="white_list"),
        consumer("black", "b1", {"report-.*|audit": 1}, pattern="black_list"),
        consumer("broken-regex", "r1", {"(report": 1}, pattern="white_list"),
        consumer("py", "host1:0b6f", {"audit": 1}, fmt="pykafka"),
    ]
    rows["consumer_owners"] = [
        owner("white", "report-log", 0, "w1-0"), owner("white", "report-log", 1, "w1-0"),
        owner("white", "report-log-eu", 0, "w1-0"), owner("white", "report-log-eu", 1, "w1-0"),
        owner("black", "xreport-log", 0, "b1-0"),
        # pykafka owners: "<leader broker>-<partition>" nodes holding the pykafka consumer id.
        {**owner("py", "audit", 0, "host1:0b6f-0", node="1-0"), "owner": "host1:0b6f",
         "owner_consumer_id": "host1:0b6f", "owner_thread_index": None},
    ]
    return rows


@pytest.fixture(scope="module")
def results(small_data_spark: SparkSession) -> dict[str, list[tuple]]:
    spark = small_data_spark
    random_rows, _ = _random_rows()
    ranged = make_tables(spark, merge(_range_rows(), random_rows))
    expected = consumers.range_assignment(ranged["consumer_registrations"], ranged["assignments"], ranged["topics"])
    wild = make_tables(spark, _wildcard_rows())
    subscribed = consumers.subscriptions(wild["consumer_registrations"], wild["topics"]).select(
        F.lit("subscribed").alias("check_id"), "topic", F.lit(None).cast("int").alias("partition"), "group_id",
        F.lit(None).cast("int").alias("broker_id"), F.lit(None).cast("string").alias("path"),
        F.col("consumer_id").alias("detail"),
    )
    as_output = expected.select(
        F.lit("range").alias("check_id"), "topic", "partition", "group_id",
        F.lit(None).cast("int").alias("broker_id"), F.lit(None).cast("string").alias("path"),
        F.col("expected_owner").alias("detail"),
    )
    return collect_by_label({
        "range": as_output,
        "range_mismatch": consumers.owner_assignment_mismatch(
            ranged["consumer_registrations"], ranged["consumer_owners"], ranged["assignments"], ranged["topics"]),
        "range_unowned": consumers.partition_unowned(
            ranged["consumer_registrations"], ranged["consumer_owners"], ranged["assignments"], ranged["topics"]),
        "subscribed": subscribed,
        "wild_unowned": consumers.partition_unowned(
            wild["consumer_registrations"], wild["consumer_owners"], wild["assignments"], wild["topics"]),
        "wild_mismatch": consumers.owner_assignment_mismatch(
            wild["consumer_registrations"], wild["consumer_owners"], wild["assignments"], wild["topics"]),
        "wild_not_registered": consumers.owner_not_registered(
            wild["consumer_owners"], wild["consumer_registrations"]),
    })


def _owners(rows: list[tuple], group: str) -> dict[int, str]:
    return {row[2]: row[6] for row in rows if row[3] == group}


@pytest.mark.parametrize("example", WORKED_EXAMPLES, ids=lambda example: example.group)
def test_worked_examples(results: dict[str, list[tuple]], example: RangeExample) -> None:
    assert _owners(results["range"], example.group) == example.owners


def test_owners_as_kafka_assigns_them_give_no_finding(results: dict[str, list[tuple]]) -> None:
    assert {row[3] for row in results["range_mismatch"]} == {NUMERIC_GROUP}
    # Only the random groups, which have no owner znodes at all, have unowned partitions.
    unowned = {(row[3], row[1], row[2]) for row in results["range_unowned"]}
    _, shapes = _random_rows()
    assert unowned == {(group, f"rand-topic-{group[4:]}", p) for group, (partitions, _) in shapes.items()
                       for p in partitions}


def test_owners_in_numeric_thread_order_are_found(results: dict[str, list[tuple]]) -> None:
    mismatches = {row[2]: row[6] for row in results["range_mismatch"] if row[3] == NUMERIC_GROUP}
    assert sorted(mismatches) == list(range(4, 14))
    assert mismatches[4] == "owned by c-2, range assignment gives c-10"
    assert mismatches[6] == "owned by c-3, range assignment gives c-2"
    assert mismatches[13] == "owned by c-10, range assignment gives c-9"


def test_random_groups_keep_the_range_contract(results: dict[str, list[tuple]]) -> None:
    _, shapes = _random_rows()
    for group, (partitions, threads) in shapes.items():
        assert_range_shape(_owners(results["range"], group), partitions, threads)


def test_wildcard_subscriptions_match_whole_topic_names(results: dict[str, list[tuple]]) -> None:
    subscribed = {(row[3], row[1]) for row in results["subscribed"]}
    assert {t for g, t in subscribed if g == "white"} == {"report-log", "report-log-eu"}
    # black_list: everything the regex does not match, internal topics left out.
    assert {t for g, t in subscribed if g == "black"} == {"xreport-log"}
    # A regex Java cannot compile subscribes to nothing (and does not fail the run).
    assert {t for g, t in subscribed if g == "broken-regex"} == set()
    assert {t for g, t in subscribed if g == "py"} == {"audit"}


def test_owned_wildcard_groups_are_clean_and_gaps_are_found(results: dict[str, list[tuple]]) -> None:
    assert {(r[3], r[1], r[2]) for r in results["wild_unowned"]} == {("black", "xreport-log", 1), ("py", "audit", 1)}
    assert results["wild_not_registered"] == []


def test_pykafka_groups_skip_the_range_check(results: dict[str, list[tuple]]) -> None:
    # white: w1-0 owns all 4 partitions of its two topics, as range gives with one thread.
    assert results["wild_mismatch"] == []
