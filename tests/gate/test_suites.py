"""Loading the suites folder: the catalogue's suites, user expectations and suites, and files GX cannot run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafka_zk_audit.contract.catalogue import CHECKS, ENTITIES
from kafka_zk_audit.gate.suites import SuiteFileError, expectations_dir, load_suites

REPO = Path(__file__).resolve().parents[2]
ROW_COUNT = {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1},
             "meta": {"severity": "warning"}}


@pytest.fixture
def suites_dir(tmp_path: Path) -> Path:
    """A user folder: a copy of the packaged suites."""
    folder = tmp_path / "suites"
    shutil.copytree(expectations_dir(), folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return folder


def edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def write_suite(folder: Path, name: str, content: Any) -> Path:
    path = folder / f"{name}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_the_packaged_suites_hold_one_expectation_per_check_and_the_drift_suite():
    suites = load_suites()
    assert [s.name for s in suites] == [*ENTITIES, "drift", "migration"]
    catalogue = [s for s in suites if s.entity is not None]
    described = {(s.name, e["check_id"]) for s in catalogue for e in s.expectations}
    assert described == {(check.entity, check.check_id) for check in CHECKS}
    assert {s.audit_table for s in catalogue} == {f"audit_{entity}" for entity in ENTITIES}
    drift, migration = suites[-2:]
    assert migration.audit_table == "audit_migration" and all(e["check_id"] is None for e in migration.expectations)
    assert drift.audit_table == "drift" and all(e["check_id"] is None for e in drift.expectations)


def test_user_expectations_and_suites_are_loaded_beside_the_catalogue(suites_dir):
    edit(suites_dir / "brokers.json", lambda d: d["expectations"].append(ROW_COUNT))
    write_suite(suites_dir, "topic_naming", {"meta": {"audit_table": "audit_topics"}, "expectations": [ROW_COUNT]})
    write_suite(suites_dir, "partitions_extra", {"name": "partitions_extra", "expectations": [ROW_COUNT]})
    (suites_dir / "README.md").write_text("not a suite")
    suites = {s.name: s for s in load_suites(None, suites_dir)}
    assert list(suites)[: len(ENTITIES)] == list(ENTITIES)
    assert list(suites)[len(ENTITIES):] == ["drift", "migration", "partitions_extra", "topic_naming"]
    assert suites["topic_naming"].audit_table == "audit_topics" and suites["topic_naming"].entity is None
    assert suites["partitions_extra"].audit_table == "audit_partitions_extra"  # the default: audit_<suite name>
    user = suites["brokers"].expectations[-1]
    assert (user["type"], user["check_id"], user["severity"], user["column"]) == (
        "expect_table_row_count_to_be_between", None, "warning", None)
    assert suites["brokers"].suite.expectations[-1].severity.value == "warning"  # GX's own field agrees
    assert suites["brokers"].describe()["file"] == "brokers.json"


def test_severity_overrides_reach_catalogue_expectations_not_user_ones(suites_dir):
    edit(suites_dir / "partitions.json", lambda d: d["expectations"].append(
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "under_replicated"}}))
    suites = {s.name: s for s in load_suites({"under_replicated": "critical"}, suites_dir)}
    by_column = {}
    for described, loaded in zip(suites["partitions"].expectations, suites["partitions"].suite.expectations,
                                 strict=True):
        by_column.setdefault((described["type"], described["column"]), (described, loaded))
    catalogue, loaded = by_column[("expect_column_values_to_be_in_set", "under_replicated")]
    assert (catalogue["check_id"], catalogue["severity"]) == ("under_replicated", "critical")
    assert loaded.meta["severity"] == "critical" and loaded.severity.value == "critical"
    user, _ = by_column[("expect_column_values_to_not_be_null", "under_replicated")]
    assert user["check_id"] is None and user["severity"] is None


@pytest.mark.parametrize(("content", "words"), [
    ("{not json", ["cannot be read as JSON"]),
    ([1, 2], ["not a Great Expectations suite"]),
    ({"expectations": [{"type": "expect_topics_to_be_nice", "kwargs": {}}]},
     ["expectation #1 (expect_topics_to_be_nice)", "GX cannot load it"]),
    ({"expectations": [{"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": "three"}}]},
     ["expectation #1 (expect_table_row_count_to_be_between)", "min_value"]),
    ({"expectations": [{"type": "expect_table_row_count_to_be_between", "kwargs": {}, "severity": "error"}]},
     ["Invalid severity 'error'"]),
    ({"expectations": [{"type": "expect_table_row_count_to_be_between", "kwargs": {}, "meta": {"severity": "high"}}]},
     ["meta.severity is 'high'", "critical, error, warning, info"]),
    ({"expectations": [{"kwargs": {"min_value": 1}}]}, ["expectation #1 (no type)"]),
    ({"expectations": []}, ["has no expectations"]),
    ({"meta": {"audit_table": "brokers"}, "expectations": [ROW_COUNT]}, ["meta.audit_table is 'brokers'"]),
    ({"name": "../x", "expectations": [ROW_COUNT]}, ["suite name '../x'"]),
])
def test_a_user_suite_gx_cannot_run_is_an_error_naming_the_file(suites_dir, content, words):
    path = write_suite(suites_dir, "mine", content)
    with pytest.raises(SuiteFileError) as raised:
        load_suites(None, suites_dir)
    assert str(path) in str(raised.value)
    for word in words:
        assert word in str(raised.value)


def test_an_unknown_expectation_type_in_a_catalogue_suite_is_an_error(suites_dir):
    """GX alone would drop it with a log line and validate the rest: a silently weaker gate."""
    edit(suites_dir / "topics.json", lambda d: d["expectations"].append({"type": "expect_typo", "kwargs": {}}))
    with pytest.raises(SuiteFileError, match=r"topics\.json.*expect_typo"):
        load_suites(None, suites_dir)


def test_a_missing_catalogue_suite_or_a_duplicate_name_is_an_error(suites_dir):
    write_suite(suites_dir, "brokers_copy", json.loads((suites_dir / "brokers.json").read_text()))
    with pytest.raises(SuiteFileError, match="brokers_copy.json.*both name their suite 'brokers'"):
        load_suites(None, suites_dir)
    (suites_dir / "brokers_copy.json").unlink()
    (suites_dir / "controller.json").unlink()
    with pytest.raises(SuiteFileError, match=r"lacks the catalogue suite\(s\) controller\.json.*make suites"):
        load_suites(None, suites_dir)


def test_a_catalogue_suite_keeps_its_table(suites_dir):
    edit(suites_dir / "brokers.json", lambda d: d["meta"].update(audit_table="audit_topics"))
    with pytest.raises(SuiteFileError, match="runs on audit_brokers, not 'audit_topics'"):
        load_suites(None, suites_dir)


def test_a_neutered_catalogue_expectation_is_an_error(suites_dir):
    def allow_true(data: dict) -> None:
        data["expectations"][0]["kwargs"]["value_set"] = [False, True]

    edit(suites_dir / "brokers.json", allow_true)
    with pytest.raises(SuiteFileError, match="broker_registration_not_ephemeral.*value_set.*must be \\[false\\]"):
        load_suites(None, suites_dir)


def test_generate_suites_restores_the_catalogue_and_keeps_user_expectations(suites_dir):
    def drop_and_add(data: dict) -> None:
        data["expectations"] = [e for e in data["expectations"] if e["meta"]["check_id"] != "broker_endpoint_conflict"]
        data["expectations"].append(ROW_COUNT)

    edit(suites_dir / "brokers.json", drop_and_add)
    mine = write_suite(suites_dir, "topic_naming",
                       {"meta": {"audit_table": "audit_topics"}, "expectations": [ROW_COUNT]})
    before = mine.read_text()
    with pytest.raises(SuiteFileError, match="broker_endpoint_conflict"):
        load_suites(None, suites_dir)
    script = REPO / "scripts" / "generate_suites.py"
    done = subprocess.run([sys.executable, str(script), "--suites-dir", str(suites_dir)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "kept 1 expectation(s) of your own" in done.stdout
    suites = {s.name: s for s in load_suites(None, suites_dir)}
    assert [e["check_id"] for e in suites["brokers"].expectations] == [
        "broker_registration_not_ephemeral", "broker_endpoint_conflict", "metadata_version_unsupported", None]
    assert mine.read_text() == before
    for entity in ENTITIES:
        if entity != "brokers":
            assert (suites_dir / f"{entity}.json").read_text() == (expectations_dir() / f"{entity}.json").read_text()
