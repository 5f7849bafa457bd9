"""plans.Steps: DataFrame steps as one plan give the DataFrame methods' rows and columns, in one frame and one
analysis; without the session's internals (Spark Connect) they are the DataFrame methods."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from kafka_zk_audit.audit import plans
from kafka_zk_audit.audit.plans import Steps, united
from kafka_zk_audit_testing.spark_counts import SparkCounter

pytestmark = pytest.mark.spark


@pytest.fixture(params=["one plan", "dataframe methods"])
def mode(request, monkeypatch) -> str:
    if request.param == "dataframe methods":
        monkeypatch.setattr(plans, "_catalyst", lambda frame: None)
    return request.param


def rows(frame) -> list[tuple]:
    return sorted((tuple(row) for row in frame.collect()), key=repr)


def test_where_and_select_give_the_methods_rows(spark, mode) -> None:
    parsed = spark.createDataFrame(
        [("s1", "/a", (1, "x"), None), ("s1", "/b", None, None), ("s2", "/c", (2, "y"), "bad")],
        "snapshot_id string, path string, value struct<n:int,s:string>, reason string")
    expected = parsed.filter("value IS NOT NULL AND reason IS NULL").select("value.*", "snapshot_id", "path")
    got = Steps(parsed).where("value IS NOT NULL AND reason IS NULL").select("value.*", "snapshot_id", "path").frame()
    assert got.columns == expected.columns == ["n", "s", "snapshot_id", "path"]
    assert rows(got) == rows(expected) == [(1, "x", "s1", "/a")]


def test_a_left_join_with_defaults_gives_the_methods_rows(spark, mode) -> None:
    partitions = spark.createDataFrame([("s1", 1, 10), ("s1", 2, 20), ("s2", 1, 30)],
                                       "snapshot_id string, b int, v int")
    registered = partitions.where("b = 1").select("snapshot_id", "b", F.lit(True).alias("registered"))  # a self-join
    counts = spark.createDataFrame([("s1", 2)], "snapshot_id string, brokers int")
    expected = (partitions.join(registered, ["snapshot_id", "b"], "left").join(counts, ["snapshot_id"], "left")
                .withColumns({"registered": F.expr("coalesce(registered, false)"),
                              "brokers": F.expr("coalesce(brokers, 0)")}))
    got = (Steps(partitions).join_using(registered, ["snapshot_id", "b"]).join_using(counts, ["snapshot_id"])
           .with_columns({"registered": F.expr("coalesce(registered, false)"),
                          "brokers": F.expr("coalesce(brokers, 0)")}).frame())
    assert got.columns == expected.columns == ["snapshot_id", "b", "v", "registered", "brokers"]
    assert rows(got) == rows(expected) == [("s1", 1, 10, True, 2), ("s1", 2, 20, False, 2), ("s2", 1, 30, True, 0)]
    inner = Steps(partitions).join_using(Steps(counts), ["snapshot_id"], "inner").select("v", "brokers").frame()
    assert rows(inner) == [(10, 2), (20, 2)]
    with pytest.raises(ValueError, match="no join 'cross'"):
        Steps(partitions).join_using(counts, ["snapshot_id"], "cross")


def test_chains_united_are_one_frame_of_every_row(spark, mode) -> None:
    frames = [spark.createDataFrame([(i, f"r{i}-{j}") for j in range(i + 1)], "n int, s string") for i in range(4)]
    with SparkCounter(spark) as counted:
        chains = [Steps(frame).where("n >= 0").select(F.col("s").alias("name"), (F.col("n") * 2).alias("twice"))
                  for frame in frames]
        found = united(chains)
    if mode == "one plan":
        assert counted.counts["dataframes"] == 1 and counted.counts["analyses"] == 1, counted.counts
    assert found.columns == ["name", "twice"]
    assert rows(found) == sorted(((f"r{i}-{j}", 2 * i) for i in range(4) for j in range(i + 1)), key=repr)
    assert rows(united(chains[2:3])) == [("r2-0", 4), ("r2-1", 4), ("r2-2", 4)]
    counted = [Steps(frame).select_expr("count(*) AS rows", "max(n) AS n") for frame in frames]  # aggregates
    assert rows(united(counted)) == [(1, 0), (2, 1), (3, 2), (4, 3)]
    with pytest.raises(ValueError):
        united([])


def test_an_analysis_error_names_the_column(spark, mode) -> None:
    frame = spark.createDataFrame([(1,)], "n int")
    with pytest.raises(Exception, match="missing"):
        Steps(frame).select("missing").frame().collect()


@pytest.mark.parametrize("count", [0, 1, 10, 11, 25])
def test_a_seq_holds_every_item_in_order_in_few_jvm_calls(spark, count, monkeypatch) -> None:
    """The Scala Seq the steps pass to Catalyst: every item in order, ten items a call (java.util.List.of), and
    a null item too (one call each then)."""
    import py4j.clientserver

    catalyst = plans._catalyst(spark.range(1))
    items = [f"column {index}" for index in range(count)]
    sent: list[str] = []
    send = py4j.clientserver.ClientServerConnection.send_command

    def recording(connection, command, *args, **kwargs):
        sent.append(command)
        return send(connection, command, *args, **kwargs)

    monkeypatch.setattr(py4j.clientserver.ClientServerConnection, "send_command", recording)
    seq = catalyst.seq(items)
    monkeypatch.undo()
    calls = [command for command in sent if not command.startswith("m\n")]  # py4j's releases come at any time
    lists = 1 if count <= 10 else 2 * -(-count // 10)  # a List.of per ten items, past ten an ArrayList and addAll
    assert len(calls) == lists + 1, calls  # and the Seq
    assert [seq.apply(index) for index in range(seq.size())] == items
    with_null = catalyst.seq(["a", None, "b"])
    assert [with_null.apply(index) for index in range(with_null.size())] == ["a", None, "b"]
