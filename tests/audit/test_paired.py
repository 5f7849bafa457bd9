"""The migration diff's rows in the audit: merged into the raw check rows of their snapshot only, then finalized like
any finding (severity from the catalogue or the settings, status); and the readiness report's chapter."""

from __future__ import annotations

import pytest

from kafka_zk_audit.audit.paired import paired_rows, verification_chapter, with_paired_findings
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, KEY, keyed

TOPIC = {"check_id": "migration_diverged_topic", "topic": "orders", "partition": None, "group_id": None,
         "broker_id": None, "path": "/brokers/topics/orders", "detail": "topic missing in KRaft · zk: … · kraft: …",
         "explained": False}
LAG = {"check_id": "migration_dual_write_lagging", "topic": None, "partition": None, "group_id": None,
       "broker_id": None, "path": "/migration", "detail": "ZooKeeper trails by 9 record(s)", "explained": False}
VERDICT = {"verified": False, "findings": [LAG, TOPIC], "equal": {"topic": 3, "partition": 12, "acl": 2},
           "release": "3.9", "offset": 40, "error": None}


def test_the_rows_join_their_snapshot_only(spark):
    raw = spark.createDataFrame([("s1", "leader_not_in_isr", "t", 0, None, None, "/p", "d", False)],
                                keyed(CHECK_OUTPUT))
    merged = with_paired_findings(spark, raw, {"s2": VERDICT, "s3": {"verified": True, "findings": []}})
    rows = sorted((r[KEY], r["check_id"], r["path"]) for r in merged.collect())
    assert rows == [("s1", "leader_not_in_isr", "/p"), ("s2", "migration_diverged_topic", "/brokers/topics/orders"),
                    ("s2", "migration_dual_write_lagging", "/migration")]
    assert with_paired_findings(spark, raw, {}) is raw


def test_a_row_of_an_unknown_check_is_refused():
    with pytest.raises(ValueError, match="leader_not_in_isr"):
        paired_rows({"s": {"findings": [{**TOPIC, "check_id": "leader_not_in_isr"}]}})


def test_the_chapter_lists_the_divergences_first_most_severe_first():
    chapter = verification_chapter(VERDICT)
    assert chapter["status"] == "diverged" and not chapter["verified"]
    assert [d["check_id"] for d in chapter["divergences"]] == ["migration_diverged_topic",
                                                                "migration_dual_write_lagging"]
    assert [d["severity"] for d in chapter["divergences"]] == ["critical", "error"]
    assert chapter["equal"] == {"topics": 3, "partitions": 12, "configs": 0, "ACLs": 2, "quotas": 0, "users": 0}
    assert verification_chapter(None) is None
    assert verification_chapter({"verified": False, "findings": [], "error": "no dir"})["status"] == "unverified"
    assert verification_chapter({"verified": True, "findings": []})["status"] == "verified"


def test_the_diffs_findings_take_severity_overrides_and_suppressions_like_any(spark):
    from kafka_zk_audit.audit.batch import Batch, BatchSnapshot
    from kafka_zk_audit.audit.findings import finalize_findings
    from kafka_zk_audit.contract.settings import parse_config

    config = parse_config({
        "severity_overrides": {"migration_dual_write_lagging": "warning"},
        "suppressions": [{"check_id": "migration_diverged_config", "reason": "accepted until the rollback test"}]})
    config_row = {**TOPIC, "check_id": "migration_diverged_config", "path": "/config/topics/orders"}
    raw = spark.createDataFrame([], keyed(CHECK_OUTPUT))
    merged = with_paired_findings(spark, raw, {"s1": {"findings": [TOPIC, LAG, config_row]}})
    done = finalize_findings(merged, Batch((BatchSnapshot("s1", "m", config, 0, None),)), None)
    rows = {r["check_id"]: r for r in done.findings_rows.to_pylist()}
    assert set(rows) == {"migration_diverged_topic", "migration_dual_write_lagging"}
    assert rows["migration_diverged_topic"]["severity"] == "critical"  # the catalogue's default
    assert rows["migration_dual_write_lagging"]["severity"] == "warning"  # the settings' override
    assert rows["migration_diverged_topic"]["status"] == "new" and done.stats["s1"]["suppressed"] == 1


def test_a_prepared_verdict_whose_entries_are_gone_is_unverified_with_a_finding(tmp_path):
    from kafka_zk_audit.audit.paired import paired_verdicts
    from kafka_zk_audit.contract.warehouse import Warehouse

    warehouse = Warehouse(str(tmp_path / "wh"))
    prepared = {"snapshot_id": "20260101T000000Z-m", "cluster": "m", "status": "prepared", "release": "3.9",
                "offset": 40, "verified": False, "findings": [LAG], "equal": {}, "notes": [], "error": None}
    warehouse.write_json(warehouse.migration_diff_path("20260101T000000Z-m"), prepared)
    assert verification_chapter(prepared)["status"] == "unverified"  # laid out, never compared
    verdicts = paired_verdicts(None, warehouse, ["20260101T000000Z-m"])  # nothing to compare: no Spark job
    verdict = warehouse.read_migration_diff("20260101T000000Z-m")
    assert verdict == verdicts["20260101T000000Z-m"] and verdict["status"] == "unverified"
    assert [f["check_id"] for f in verdict["findings"]] == ["migration_dual_write_lagging", "migration_unverifiable"]
    assert "entries" in verdict["error"] and paired_rows(verdicts)[1]["check_id"] == "migration_unverifiable"
