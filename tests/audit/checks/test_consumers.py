"""The old consumer's range assignment recomputed in Spark, subscriptions (static and wildcard), pykafka.

The expected owners are the hand-worked tables of :mod:`tests.range_examples`, not another implementation.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from functools import reduce

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import consumers
from kafka_zk_audit.contract.schemas import KEY
from tests.audit.checks.test_checks import (
    EXPECTED_BROKEN,
    PREVIOUS_SNAPSHOT,
    broken_previous_rows,
    broken_rows,
    collect_by_label,
    consumer,
    make_frame,
    make_tables,
    merge,
    offset,
    owner,
    small_data_settings,
    topic,
    with_snapshot_id,
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
    frames = {
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
    }
    # One action per frame: a union of the seven plans costs more to plan than the seven frames.
    return {label: collect_by_label({label: frame})[label] for label, frame in frames.items()}


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


# ---------------------------------------------------------------------------------------------------
# Several snapshots in one plan: each gets exactly what it gets alone

CONSUMER_TABLES = ("topics", "assignments", "consumer_registrations", "consumer_owners", "consumer_offsets")
BROKEN, HEALTHY, BARE = "20261122T060000Z", "20261123T060000Z", "20261124T060000Z"
SNAPSHOTS = (BROKEN, HEALTHY, BARE)
CONSUMER_CHECK_IDS = {
    "owner_not_registered", "partition_unowned", "partition_multiply_owned", "owner_assignment_mismatch",
    "offset_invalid", "offset_for_unknown_partition", "offset_regressed",
}


def _consumer_rows(rows: dict[str, list], snapshot_id: str) -> dict[str, list]:
    """The tables the consumer checks read, every row keyed by snapshot_id."""
    return {name: [{**row, KEY: snapshot_id} for row in rows.get(name, [])] for name in CONSUMER_TABLES}


def _healthy_alpha_rows() -> dict[str, list]:
    """A clean group g1 on a topic alpha, as the broken cluster names them, with other partitions, threads and
    offsets below the broken cluster's previous ones; the wildcard group w subscribes to this snapshot's topics
    ending in "a" only (the broken cluster's beta, gamma and delta too end in "a")."""
    rows = merge(topic("alpha", {p: [1] for p in range(6)}, czxid=0x10), topic("omega", {0: [1]}, czxid=0x11))
    # threads g1_c1-0, g1_c1-1, g1_c2-0 over 6 partitions: two each.
    threads = {0: "g1_c1-0", 1: "g1_c1-0", 2: "g1_c1-1", 3: "g1_c1-1", 4: "g1_c2-0", 5: "g1_c2-0"}
    return merge(rows, {
        "consumer_registrations": [consumer("g1", "g1_c1", {"alpha": 2}), consumer("g1", "g1_c2", {"alpha": 1}),
                                   consumer("w", "w1", {".*a": 1}, pattern="white_list")],
        "consumer_owners": [owner("g1", "alpha", p, thread) for p, thread in threads.items()]
        + [owner("w", "alpha", p, "w1-0") for p in range(6)] + [owner("w", "omega", 0, "w1-0")],
        "consumer_offsets": [offset("g1", "alpha", p, 10 + p) for p in range(6)],
    })


def _consumer_checks(tables: dict[str, DataFrame], previous: dict[str, DataFrame] | None) -> dict[str, DataFrame]:
    """Every consumer check, and the range assignment itself, over these tables."""
    t = tables
    before = (lambda name: None) if previous is None else previous.get
    args = (t["consumer_registrations"], t["consumer_owners"], t["assignments"], t["topics"])
    return {
        "subscriptions": consumers.subscriptions(t["consumer_registrations"], t["topics"]),
        "range_assignment": consumers.range_assignment(t["consumer_registrations"], t["assignments"], t["topics"]),
        "owner_not_registered": consumers.owner_not_registered(t["consumer_owners"], t["consumer_registrations"]),
        "partition_unowned": consumers.partition_unowned(*args),
        "partition_multiply_owned": consumers.partition_multiply_owned(t["consumer_owners"]),
        "owner_assignment_mismatch": consumers.owner_assignment_mismatch(*args),
        "offset_invalid": consumers.offset_invalid(t["consumer_offsets"]),
        "offset_for_unknown_partition": consumers.offset_for_unknown_partition(
            t["consumer_offsets"], t["assignments"], t["topics"]),
        "offset_regressed": consumers.offset_regressed(
            t["consumer_offsets"], t["topics"], before("consumer_offsets"), before("topics")),
    }


def _collect_keyed(labelled: dict[str, DataFrame]) -> dict[str, list[tuple[str, str]]]:
    """One run's frames in ONE Spark action: label -> sorted (snapshot_id, the row's other columns as JSON)."""
    frames = [
        frame.select(F.lit(label).alias("label"), F.col(KEY),
                     F.to_json(F.struct(*[c for c in frame.columns if c != KEY])).alias("row"))
        for label, frame in labelled.items()
    ]
    out: dict[str, list[tuple[str, str]]] = {label: [] for label in labelled}
    for row in reduce(DataFrame.unionByName, frames).collect():
        out[row["label"]].append((row[KEY], row["row"]))
    return {label: sorted(rows) for label, rows in out.items()}


@pytest.fixture(scope="module")
def batched(small_data_spark: SparkSession) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """The consumer checks over three snapshots at once and over each alone.

    BROKEN is the broken cluster (with its baseline); HEALTHY has the same group and topic names, clean, and
    no baseline; BARE has one topic, no consumers at all (empty tables) and a baseline with offsets.
    """
    spark = small_data_spark

    def tables(rows: dict[str, list], snapshot_id: str) -> dict[str, DataFrame]:
        keyed_rows = _consumer_rows(rows, snapshot_id)
        return {name: make_frame(spark, name, keyed_rows[name]) for name in CONSUMER_TABLES}

    bare = topic("alpha", {0: [1], 1: [1]}, czxid=0x40)
    current = {BROKEN: tables(broken_rows(), BROKEN), HEALTHY: tables(_healthy_alpha_rows(), HEALTHY),
               BARE: tables(bare, BARE)}
    bare_before = merge(bare, {"consumer_offsets": [offset("g1", "alpha", 0, 5)]})
    previous = {BROKEN: with_snapshot_id(tables(broken_previous_rows(), BROKEN), PREVIOUS_SNAPSHOT),
                BARE: with_snapshot_id(tables(bare_before, BARE), "20261124T050000Z")}

    def union(frames: list[dict[str, DataFrame]]) -> dict[str, DataFrame]:
        return {name: reduce(DataFrame.unionByName, [f[name] for f in frames]) for name in frames[0]}

    runs = {"together": _consumer_checks(union(list(current.values())), union(list(previous.values())))}
    for snapshot_id, snapshot_tables in current.items():
        runs[snapshot_id] = _consumer_checks(snapshot_tables, previous.get(snapshot_id))
    # One action per run: a union of the four runs' plans costs more to plan than the four runs.
    return {run: _collect_keyed(labelled) for run, labelled in runs.items()}


def test_snapshots_together_equal_each_alone(batched: dict[str, dict[str, list[tuple[str, str]]]]) -> None:
    for label, rows in batched["together"].items():
        assert rows == sorted(row for snapshot_id in SNAPSHOTS for row in batched[snapshot_id][label]), label


def test_each_snapshot_alone_has_its_own_findings(batched: dict[str, dict[str, list[tuple[str, str]]]]) -> None:
    def subjects(snapshot_id: str) -> set[tuple]:
        fields = ("check_id", "topic", "partition", "group_id", "broker_id", "path")
        return {tuple(json.loads(row).get(field) for field in fields)
                for label, rows in batched[snapshot_id].items() if label in CONSUMER_CHECK_IDS for _, row in rows}

    assert subjects(BROKEN) == {row for row in EXPECTED_BROKEN if row[0] in CONSUMER_CHECK_IDS}
    assert subjects(HEALTHY) == set()
    assert subjects(BARE) == set()
    # Each snapshot's own topics and threads: HEALTHY's alpha has 6 partitions over g1's 3 threads (w: 1).
    assert {json.loads(row)["topic"] for _, row in batched[HEALTHY]["subscriptions"]} == {"alpha", "omega"}
    assert len(batched[HEALTHY]["range_assignment"]) == 6 + 6 + 1
    assert batched[BARE]["range_assignment"] == []
