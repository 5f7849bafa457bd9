"""Finalizing check rows into findings: severity, suppressions, new / ongoing / explained / resolved,
first_seen, and the suppressed history that keeps first_seen while a suppression lasts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kafka_zk_audit.audit.batch import Batch, BatchSnapshot
from kafka_zk_audit.audit.findings import finalize_findings
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, FINDINGS, KEY, keyed
from kafka_zk_audit.contract.settings import parse_config
from tests.audit.checks.test_checks import small_data_settings

pytestmark = pytest.mark.spark

S0, S1, S2, S3 = "20261122T040000Z", "20261122T050000Z", "20261122T060000Z", "20261122T070000Z"
OFFSET = "/consumers/g/offsets/t/0"
STATE = "/brokers/topics/t/partitions/{}/state"

CONFIG = parse_config({
    "severity_overrides": {"preferred_leader_not_leader": "warning", "controller_missing": "error"},
    "suppressions": [
        {"check_id": "under_replicated", "topic": "scratch-*", "reason": "scratch topics"},
        {"check_id": "owner_assignment_mismatch", "group_id": "legacy-?", "reason": "legacy groups rebalance slowly"},
        {"check_id": "broker_registration_not_ephemeral", "broker_id": 3, "reason": "broker 3 is a test rig"},
    ],
})


def frame(spark: SparkSession, schema: StructType, rows: list[dict[str, Any]]) -> DataFrame:
    records = [{name: row.get(name) for name in schema.names} for row in rows]
    return spark.createDataFrame(pa.Table.from_pylist(records, schema=to_arrow_schema(schema)))


def raw_row(check_id: str, topic: str | None = None, partition: int | None = None, path: str = "/x",
            detail: str = "evidence", **subject: Any) -> dict[str, Any]:
    return {"check_id": check_id, "topic": topic, "partition": partition, "path": path, "detail": detail, **subject}


CURRENT = [
    raw_row("leader_not_in_isr", "t", 0, STATE.format(0), "leader 3 not in isr [1, 2]"),   # ongoing since S0
    raw_row("controller_missing", path="/controller", detail="no /controller znode"),       # ongoing (null subject)
    raw_row("under_replicated", "t", 1, STATE.format(1)),                                   # new
    raw_row("preferred_leader_not_leader", "t", 2, STATE.format(2)),                        # new, severity warning
    raw_row("leader_not_alive", "t", 3, STATE.format(3), "second"),                         # new, two rows, one id
    raw_row("leader_not_alive", "t", 3, STATE.format(3), "first"),
    raw_row("under_replicated", "scratch-1", 0, "/brokers/topics/scratch-1/partitions/0/state"),  # suppressed
    raw_row("owner_assignment_mismatch", "t", 0, "/consumers/legacy-1/owners/t/0", group_id="legacy-1"),  # suppressed
    raw_row("owner_assignment_mismatch", "t", 0, "/consumers/legacy-10/owners/t/0", group_id="legacy-10"),  # new
    raw_row("broker_registration_not_ephemeral", path="/brokers/ids/3", broker_id=3),       # suppressed
    raw_row("broker_registration_not_ephemeral", path="/brokers/ids/4", broker_id=4),       # new
    # The offsets of a recreated topic went back: explained, keeps its first_seen.
    raw_row("offset_regressed", "t", 0, OFFSET, "offset 5 < 900; explained: ...", group_id="g", explained=True),
]


def previous_row(check_id: str, topic: str | None, partition: int | None, path: str, first_seen: str,
                 status: str | None = None, **subject: Any) -> dict[str, Any]:
    return {"snapshot_id": S1, "check_id": check_id, "severity": "error", "topic": topic, "partition": partition,
            "path": path, "detail": "old evidence", "first_seen": first_seen,
            "status": status or ("new" if first_seen == S1 else "ongoing"), **subject}


PREVIOUS = [
    previous_row("leader_not_in_isr", "t", 0, STATE.format(0), S0),
    previous_row("controller_missing", None, None, "/controller", S1),
    previous_row("offline_partition", "t", 5, STATE.format(5), S0),                          # resolved now
    previous_row("under_replicated", "scratch-1", 0, "/brokers/topics/scratch-1/partitions/0/state", S0),
    previous_row("leader_not_in_isr", "t", 0, "/elsewhere", S0),                              # other path: resolved
    previous_row("offset_regressed", "t", 0, OFFSET, S0, group_id="g"),                      # explained now
    # Suppressed in the previous run (its suppressed history) and gone now: never reported, not resolved.
    previous_row("owner_assignment_mismatch", "t", 1, "/consumers/legacy-2/owners/t/1", S0, status="suppressed",
                 group_id="legacy-2"),
]


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


def batch(*snapshots: tuple[str, Any, str | None]) -> Batch:
    """A batch of (snapshot id, settings, baseline id) of one cluster."""
    return Batch(tuple(BatchSnapshot(sid, "payments", config, 0, baseline) for sid, config, baseline in snapshots))


def raw_of(spark: SparkSession, snapshot_id: str, rows: list[dict[str, Any]]) -> DataFrame:
    return frame(spark, keyed(CHECK_OUTPUT), [{KEY: snapshot_id, **row} for row in rows])


def stored(spark: SparkSession, rows: list[dict[str, Any]], of: str) -> DataFrame:
    """Stored findings rows as the baseline of snapshot ``of`` (keyed by it)."""
    return frame(spark, FINDINGS, [{**row, KEY: of} for row in rows])


def rows_of(frame_: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame_.collect()]


@pytest.fixture(scope="module")
def finalized(small_data_spark: SparkSession) -> dict[str, Any]:
    spark = small_data_spark
    raw = raw_of(spark, S2, CURRENT)
    with_history = finalize_findings(raw, batch((S2, CONFIG, S1)), stored(spark, PREVIOUS, S2))
    first_run = finalize_findings(raw, batch((S2, CONFIG, None)), None)
    # The next run, the suppressions lifted: its history is the findings and the suppressed history of S2.
    history = rows_of(with_history.findings) + rows_of(with_history.suppressed)
    lifted = finalize_findings(raw_of(spark, S3, CURRENT), batch((S3, parse_config({}), S2)),
                               stored(spark, history, S3))
    # The same two runs in one batch: S3's baseline S2 is in the batch (a reaudit's chain).
    chained = finalize_findings(raw.unionByName(raw_of(spark, S3, CURRENT)),
                                Batch((BatchSnapshot(S2, "payments", CONFIG, 0, S1),
                                       BatchSnapshot(S3, "payments", parse_config({}), 0, S2))),
                                stored(spark, PREVIOUS, S2))
    out = {
        "columns": with_history.findings.columns,
        "rows": rows_of(with_history.findings),
        "suppressed": rows_of(with_history.suppressed),
        "stats": with_history.stats[S2],
        "first_rows": rows_of(first_run.findings),
        "first_stats": first_run.stats[S2],
        "lifted_rows": rows_of(lifted.findings),
        "lifted_stats": lifted.stats[S3],
        "chained_rows": rows_of(chained.findings),
        "chained_suppressed": rows_of(chained.suppressed),
        "chained_stats": chained.stats,
    }
    return out


def test_a_batch_finalizes_each_snapshot_as_one_after_the_other(finalized: dict[str, Any]) -> None:
    """S2 and S3 (whose baseline S2 is in the batch) finalized together equal S2, then S3 on S2's stored rows."""
    def key(row: dict[str, Any]) -> str:
        return repr(sorted(row.items()))

    assert sorted(finalized["chained_rows"], key=key) == sorted(finalized["rows"] + finalized["lifted_rows"], key=key)
    assert sorted(finalized["chained_suppressed"], key=key) == sorted(finalized["suppressed"], key=key)
    assert finalized["chained_stats"] == {S2: finalized["stats"], S3: finalized["lifted_stats"]}
    assert {row["cluster"] for row in finalized["chained_rows"]} == {"payments"}


def _by_subject(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    return {(r["check_id"], r["topic"], r["partition"], r["group_id"], r["broker_id"], r["path"]): r for r in rows}


def test_findings_have_exactly_the_contract_columns(finalized: dict[str, Any]) -> None:
    assert finalized["columns"] == FINDINGS.names
    assert {row["snapshot_id"] for row in finalized["rows"]} == {S2}


def test_new_ongoing_and_first_seen(finalized: dict[str, Any]) -> None:
    rows = _by_subject(finalized["rows"])
    ongoing = rows[("leader_not_in_isr", "t", 0, None, None, STATE.format(0))]
    assert (ongoing["status"], ongoing["first_seen"], ongoing["detail"]) == (
        "ongoing", S0, "leader 3 not in isr [1, 2]"
    )
    controller = rows[("controller_missing", None, None, None, None, "/controller")]
    assert (controller["status"], controller["first_seen"]) == ("ongoing", S1)
    fresh = rows[("under_replicated", "t", 1, None, None, STATE.format(1))]
    assert (fresh["status"], fresh["first_seen"]) == ("new", S2)
    assert finalized["stats"] == {"new": 5, "resolved": 2, "ongoing": 2, "explained": 1, "suppressed": 3}


def test_severity_defaults_and_overrides(finalized: dict[str, Any]) -> None:
    rows = _by_subject(finalized["rows"])
    assert rows[("preferred_leader_not_leader", "t", 2, None, None, STATE.format(2))]["severity"] == "warning"
    assert rows[("controller_missing", None, None, None, None, "/controller")]["severity"] == "error"
    assert rows[("under_replicated", "t", 1, None, None, STATE.format(1))]["severity"] == "warning"
    assert rows[("leader_not_in_isr", "t", 0, None, None, STATE.format(0))]["severity"] == "error"


def test_suppressions_drop_findings(finalized: dict[str, Any]) -> None:
    subjects = {(r["check_id"], r["topic"], r["group_id"], r["broker_id"]) for r in finalized["rows"]}
    assert ("under_replicated", "scratch-1", None, None) not in subjects
    assert ("owner_assignment_mismatch", "t", "legacy-1", None) not in subjects
    assert ("owner_assignment_mismatch", "t", "legacy-10", None) in subjects  # ? is one character
    assert ("broker_registration_not_ephemeral", None, None, 3) not in subjects
    assert ("broker_registration_not_ephemeral", None, None, 4) in subjects


def test_one_finding_per_identity(finalized: dict[str, Any]) -> None:
    rows = [r for r in finalized["rows"] if r["check_id"] == "leader_not_alive"]
    assert [r["detail"] for r in rows] == ["first; second"]
    assert len(finalized["rows"]) == len(_by_subject(finalized["rows"])) == 8


def test_explained_rows_are_info_and_keep_their_history(finalized: dict[str, Any]) -> None:
    explained = _by_subject(finalized["rows"])[("offset_regressed", "t", 0, "g", None, OFFSET)]
    assert (explained["status"], explained["severity"], explained["first_seen"]) == ("explained", "info", S0)
    first = _by_subject(finalized["first_rows"])[("offset_regressed", "t", 0, "g", None, OFFSET)]
    assert (first["status"], first["severity"], first["first_seen"]) == ("explained", "info", S2)


def test_first_run_everything_is_new(finalized: dict[str, Any]) -> None:
    assert {(r["status"], r["first_seen"]) for r in finalized["first_rows"]} == {("new", S2), ("explained", S2)}
    assert finalized["first_stats"] == {"new": 7, "resolved": 0, "ongoing": 0, "explained": 1, "suppressed": 3}


def test_suppressed_findings_keep_their_history(finalized: dict[str, Any]) -> None:
    """A suppressed finding is kept aside with its first_seen; lifting the suppression resumes it."""
    suppressed = _by_subject(finalized["suppressed"])
    assert {key: (r["status"], r["first_seen"]) for key, r in suppressed.items()} == {
        ("under_replicated", "scratch-1", 0, None, None, "/brokers/topics/scratch-1/partitions/0/state"):
            ("suppressed", S0),
        ("owner_assignment_mismatch", "t", 0, "legacy-1", None, "/consumers/legacy-1/owners/t/0"): ("suppressed", S2),
        ("broker_registration_not_ephemeral", None, None, None, 3, "/brokers/ids/3"): ("suppressed", S2),
    }
    lifted = _by_subject(finalized["lifted_rows"])
    scratch = lifted[("under_replicated", "scratch-1", 0, None, None, "/brokers/topics/scratch-1/partitions/0/state")]
    assert (scratch["snapshot_id"], scratch["status"], scratch["first_seen"]) == (S3, "ongoing", S0)
    legacy = lifted[("owner_assignment_mismatch", "t", 0, "legacy-1", None, "/consumers/legacy-1/owners/t/0")]
    assert (legacy["status"], legacy["first_seen"]) == ("ongoing", S2)
    assert finalized["lifted_stats"] == {"new": 0, "resolved": 0, "ongoing": 10, "explained": 1, "suppressed": 0}
