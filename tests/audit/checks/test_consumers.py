"""The old consumer's range assignment recomputed in Spark, subscriptions (static and wildcard), pykafka."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import consumers
from kafka_zk_audit_testing.range_assignment import range_assign, thread_ids
from tests.audit.checks.test_checks import (
    collect_by_label,
    consumer,
    make_tables,
    merge,
    owner,
    small_data_settings,
    topic,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


LEXICOGRAPHIC_THREADS = [f"lex_c-{n}" for n in range(12)]


def _range_rows() -> dict[str, list]:
    rows = merge(
        topic("pa-topic", {p: [1] for p in range(5)}, czxid=1),
        topic("report-log", {p: [1] for p in range(4)}, czxid=2),
        topic("lex-topic", {p: [1] for p in range(12)}, czxid=3),
    )
    rows["consumer_registrations"] = [
        # PartitionAssignor's doc example: threads C1-0, C1-1, C2-0, C2-1 over 5 partitions.
        consumer("pa", "C1", {"pa-topic": 2}), consumer("pa", "C2", {"pa-topic": 2}),
        # The seed article: report-log with 4 partitions, 3 consumers x 1 thread, then x 2 threads.
        consumer("seed1", "node1", {"report-log": 1}), consumer("seed1", "node2", {"report-log": 1}),
        consumer("seed1", "node3", {"report-log": 1}),
        consumer("seed2", "node1", {"report-log": 2}), consumer("seed2", "node2", {"report-log": 2}),
        consumer("seed2", "node3", {"report-log": 2}),
        # 12 streams: thread ids sort as strings, so lex_c-10 and lex_c-11 come before lex_c-2.
        consumer("lex", "lex_c", {"lex-topic": 12}),
    ]
    return rows


def _random_rows(seed: int = 7) -> tuple[dict[str, list], dict[str, dict[int, str]]]:
    """Random groups and topics, with the expected owners from the pure-Python range assignment."""
    rng = random.Random(seed)
    rows: dict[str, list] = {}
    expected: dict[str, dict[int, str]] = {}
    for g in range(8):
        group, name = f"rand{g}", f"rand-topic-{g}"
        partition_ids = sorted(rng.sample(range(40), rng.randint(1, 14)))  # not necessarily dense
        rows = merge(rows, topic(name, {p: [1] for p in partition_ids}, czxid=100 + g))
        members = {f"{group}_host{rng.randint(1, 99)}-{k}": rng.randint(1, 12) for k in range(rng.randint(1, 4))}
        rows = merge(rows, {"consumer_registrations": [consumer(group, c, {name: s}) for c, s in members.items()]})
        threads = [t for c, s in members.items() for t in thread_ids(c, s)]
        expected[group] = range_assign(partition_ids, threads)
    return rows, expected


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


def test_partition_assignor_doc_example(results: dict[str, list[tuple]]) -> None:
    assert _owners(results["range"], "pa") == {0: "C1-0", 1: "C1-0", 2: "C1-1", 3: "C2-0", 4: "C2-1"}


def test_seed_article_example(results: dict[str, list[tuple]]) -> None:
    # One thread each: node1 gets 0 and 1, node2 gets 2, node3 gets 3.
    assert _owners(results["range"], "seed1") == {0: "node1-0", 1: "node1-0", 2: "node2-0", 3: "node3-0"}
    # Two threads each: node1 gets 0 and 1, node2 gets 2 and 3, node3 is idle.
    seed2 = _owners(results["range"], "seed2")
    assert seed2 == {0: "node1-0", 1: "node1-1", 2: "node2-0", 3: "node2-1"}
    assert not any(thread.startswith("node3") for thread in seed2.values())


def test_thread_ids_sort_as_strings(results: dict[str, list[tuple]]) -> None:
    assert _owners(results["range"], "lex") == dict(enumerate(sorted(LEXICOGRAPHIC_THREADS)))
    assert _owners(results["range"], "lex")[2] == "lex_c-10"
    assert _owners(results["range"], "lex")[4] == "lex_c-2"


def test_random_groups_match_the_python_range_assignment(results: dict[str, list[tuple]]) -> None:
    _, expected = _random_rows()
    for group, owners in expected.items():
        assert _owners(results["range"], group) == owners, group


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
