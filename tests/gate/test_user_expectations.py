"""Great Expectations as the user's extension point, on the real parts.

A small healthy cluster is written by the simulator into the session's ZooKeeper, snapshotted, and
audited by the Spark job into audit tables. The gate's checkpoint then runs, with GX, a user folder:
the packaged suites plus a user expectation on ``audit_brokers`` (more rows than the cluster has
brokers) and a user suite on ``audit_topics``. The user expectation alone decides the verdict, by the
severity in its ``meta``; the Data Docs show it.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.audit.job import run_audit
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.gate.context import configure_checkpoint, file_data_context
from kafka_zk_audit.gate.suites import SuiteFileError, expectations_dir, load_suites
from kafka_zk_audit.gate.verdict import build_verdict
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

pytestmark = [pytest.mark.zk, pytest.mark.spark]

SNAPSHOT_ID = "20260301T000000Z"
BROKERS = 3
GATING = ("critical", "error")
CLUSTER = ClusterSpec(brokers=BROKERS, racks=2, topics=2, partitions=2, replication_factor=2, groups=1,
                      consumers_per_group=1, threads_per_consumer=1, seed=5)
BROKER_COUNT_DESCRIPTION = f"at least {BROKERS + 1} brokers are registered (user expectation)"
TOPIC_NAMING_DESCRIPTION = "topic names use only the characters Kafka allows (user suite)"
TOPIC_SUITE = {
    "name": "topic_naming",
    "meta": {"audit_table": "audit_topics", "owner": "kafka platform team"},
    "expectations": [
        {"type": "expect_column_values_to_match_regex", "kwargs": {"column": "topic", "regex": r"^[A-Za-z0-9._-]+$"},
         "meta": {"severity": "error"}, "description": TOPIC_NAMING_DESCRIPTION},
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "topic"}},
    ],
}
SPARK_SETTINGS = ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode", "spark.sql.adaptive.enabled",
                  "spark.sql.shuffle.partitions",
                  "spark.sql.autoBroadcastJoinThreshold")


@pytest.fixture(scope="module")
def audited(zk_server, spark, tmp_path_factory) -> Iterator[tuple[Warehouse, dict[str, Any]]]:
    """The warehouse with the snapshot and audit tables of a small healthy cluster, and the audit's figures."""
    warehouse = Warehouse(str(tmp_path_factory.mktemp("user_expectations") / "warehouse"))
    chroot = "/gate_user_expectations"
    with Simulator(hosts=zk_server.hosts + chroot) as simulator:
        simulator.write(CLUSTER)
        settings = ZkSettings(hosts=zk_server.hosts, chroot=chroot)
        client = KazooClient(**settings.kazoo_kwargs())
        client.start(timeout=15)
        try:
            write_snapshot(client, settings, warehouse, SNAPSHOT_ID)
        finally:
            client.stop()
            client.close()
    previous = {key: spark.conf.get(key) for key in SPARK_SETTINGS}  # the job sizes the shared session
    try:
        figures = run_audit(spark, warehouse, SNAPSHOT_ID, None)[SNAPSHOT_ID]
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)
    yield warehouse, figures


def user_suites(folder: Path, broker_count_severity: str) -> Path:
    """The packaged suites, the user's expectation in brokers.json and the user's topic suite."""
    shutil.copytree(expectations_dir(), folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    brokers = json.loads((folder / "brokers.json").read_text())
    brokers["expectations"].append({
        "type": "expect_table_row_count_to_be_between",
        "kwargs": {"min_value": BROKERS + 1},
        "meta": {"severity": broker_count_severity},
        "description": BROKER_COUNT_DESCRIPTION,
    })
    (folder / "brokers.json").write_text(json.dumps(brokers, indent=2))
    (folder / "topic_naming.json").write_text(json.dumps(TOPIC_SUITE, indent=2))
    return folder


def run_gate(warehouse: Warehouse, suites_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the gate's checkpoint as the operator does; the result goes through JSON as through XCom."""
    suites = load_suites({}, suites_dir)
    contexts = file_data_context(warehouse)
    context = next(contexts)
    result = configure_checkpoint(context, warehouse, SNAPSHOT_ID, suites=suites).run()
    assert result.run_id.run_name == SNAPSHOT_ID  # the Data Docs name the run (not __none__)
    with contextlib.suppress(StopIteration):
        next(contexts)  # builds the offline Data Docs
    described = json.loads(json.dumps(result.describe_dict()))
    verdict = build_verdict(described, [s.describe() for s in suites], {}, GATING, warehouse.data_docs_index)
    return described, verdict


def test_the_cluster_is_healthy(audited):
    _, figures = audited
    assert figures["findings"] == 0, {k: v for k, v in figures["checks"].items() if v}
    assert figures["table_rows"]["brokers"] == BROKERS


@dataclass(frozen=True)
class GateRun:
    """One gate run on the audited warehouse: its suites folder, its result and verdict, and the Data Docs pages it
    wrote, read right after it (the newest validation page of each suite; the other pages by path under the site;
    "" for a page it did not write). ``stored_results`` are the validation results the run added to GX's store
    (their paths in the store, each ending in ``.json``), ``site_files`` every file of the site after the run and
    ``index_builds`` how many times GX rendered the site's index during the run."""

    suites_dir: Path
    result: dict[str, Any]
    verdict: dict[str, Any]
    validation_pages: dict[str, str]
    pages: dict[str, str]
    stored_results: list[str]
    site_files: set[str]
    index_builds: int


@pytest.fixture(scope="module")
def error_gate(audited, tmp_path_factory) -> GateRun:
    """The gate run with the user expectation at severity error, validated with pandas (the tables are small)."""
    from great_expectations.render.renderer.site_builder import DefaultSiteIndexBuilder

    warehouse, _ = audited
    folder = user_suites(tmp_path_factory.mktemp("error_gate") / "suites", "error")
    stored_before = stored_results(warehouse)
    index_builds = [0]
    build_index = DefaultSiteIndexBuilder.build

    def counted(*args: Any, **kwargs: Any) -> Any:
        index_builds[0] += 1
        return build_index(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DefaultSiteIndexBuilder, "build", counted)
        result, verdict = run_gate(warehouse, folder)
    docs = Path(warehouse.data_docs_dir)
    validation_pages = {suite: newest_page(docs / "validations" / suite) for suite in ("brokers", "topic_naming")}
    pages = {name: (docs / name).read_text() if (docs / name).is_file() else ""
             for name in ("expectations/brokers.html", "index.html")}
    site_files = {path.relative_to(docs).as_posix() for path in docs.rglob("*") if path.is_file()}
    return GateRun(folder, result, verdict, validation_pages, pages,
                   sorted(stored_results(warehouse) - stored_before), site_files, index_builds[0])


def stored_results(warehouse: Warehouse) -> set[str]:
    """The validation results in GX's store of the warehouse's context, by path under the store's folder."""
    store = Path(warehouse.root) / "gx" / "gx" / "uncommitted" / "validations"
    return {path.relative_to(store).as_posix() for path in store.rglob("*.json")} if store.is_dir() else set()


def newest_page(folder: Path) -> str:
    """The text of the newest validation page under ``folder`` (its run's), or "" when there is none."""
    found = sorted(folder.rglob("*.html"))
    return found[-1].read_text() if found else ""


def test_a_user_expectation_gates_by_its_meta_severity(audited, error_gate, tmp_path):
    warehouse, _ = audited
    result, verdict = error_gate.result, error_gate.verdict

    assert verdict["success"] is False
    assert [(f["suite"], f["audit_table"], f["expectation_type"], f["severity"], f["gating"], f["observed_value"])
            for f in verdict["failed"]] == [
        ("brokers", "audit_brokers", "expect_table_row_count_to_be_between", "error", True, BROKERS)
    ]
    assert verdict["failed"][0]["check_id"] is None and verdict["failed"][0]["column"] is None
    # every suite ran, the user's suite on audit_topics too, and its expectations passed
    # 8 catalogue suites, drift, the readiness suite (migration), the user's suite
    assert len(result["validation_results"]) == 11
    topic_naming = result["validation_results"][-1]
    assert topic_naming["success"] is True and topic_naming["statistics"]["evaluated_expectations"] == 2
    assert {e["kwargs"]["batch_id"] for e in topic_naming["expectations"]} == {"kafka_zk_audit_run-audit_topics"}

    assert BROKER_COUNT_DESCRIPTION in error_gate.validation_pages["brokers"]
    assert BROKER_COUNT_DESCRIPTION in error_gate.pages["expectations/brokers.html"]
    assert TOPIC_NAMING_DESCRIPTION in error_gate.validation_pages["topic_naming"]
    assert "topic_naming" in error_gate.pages["index.html"]

    result, verdict = run_gate(warehouse, user_suites(tmp_path / "warning", "warning"))
    assert verdict["success"] is True
    assert (verdict["failed_expectations"], verdict["non_gating_failed_expectations"]) == (0, 1)
    assert [(f["expectation_type"], f["severity"]) for f in verdict["failed"]] == [
        ("expect_table_row_count_to_be_between", "warning")
    ]


def test_a_gate_run_renders_the_data_docs_index_once_and_a_page_for_each_validation(error_gate):
    """GX's index page reads every stored validation result: a gate run renders it once, not once per validation,
    and the site still has a page for each result the run stored, linked from the index, and a page per suite."""
    assert error_gate.index_builds == 1
    stored = error_gate.stored_results
    assert len(stored) == len(error_gate.result["validation_results"]) == 11
    linked = {unquote(link) for link in re.findall(r"'_table_row_link_path': '(validations/[^']+)'",
                                                   error_gate.pages["index.html"])}
    for result in stored:
        page = f"validations/{result.removesuffix('.json')}.html"
        assert page in error_gate.site_files, page
        assert page in linked, page
    suites = {result.split("/", 1)[0] for result in stored}
    assert {f"expectations/{suite}.html" for suite in suites} <= error_gate.site_files
    assert len(suites) == 11


def test_a_dropped_catalogue_expectation_is_reported_by_name(tmp_path):
    folder = user_suites(tmp_path / "suites", "error")
    brokers = json.loads((folder / "brokers.json").read_text())
    brokers["expectations"] = [e for e in brokers["expectations"]
                               if (e.get("meta") or {}).get("check_id") != "broker_endpoint_conflict"]
    (folder / "brokers.json").write_text(json.dumps(brokers))
    with pytest.raises(SuiteFileError) as raised:
        load_suites({}, folder)
    message = str(raised.value)
    assert str(folder / "brokers.json") in message
    assert "check broker_endpoint_conflict (error) has no expectation" in message and "make suites" in message

    brokers["expectations"][0]["kwargs"]["column"] = "registration_not_ephemeral"  # a renamed column
    (folder / "brokers.json").write_text(json.dumps(brokers))
    with pytest.raises(SuiteFileError, match="broker_registration_not_ephemeral .*column 'registration_not_ephemeral'"):
        load_suites({}, folder)


def test_a_user_suite_on_a_table_the_snapshot_lacks_is_an_error_before_validating(audited, tmp_path):
    warehouse, _ = audited
    folder = user_suites(tmp_path / "suites", "error")
    (folder / "partition_sizes.json").write_text(json.dumps({"expectations": [
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1}}]}))
    contexts = file_data_context(warehouse)
    context = next(contexts)
    with pytest.raises(SuiteFileError) as raised:
        configure_checkpoint(context, warehouse, SNAPSHOT_ID, suites=load_suites({}, folder))
    assert "partition_sizes.json runs on audit_partition_sizes" in str(raised.value)
    assert "audit_brokers" in str(raised.value)  # the tables there are


def test_pandas_and_spark_validations_agree(audited, error_gate, monkeypatch):
    """Small audit tables are validated with pandas (no Spark session in the gate), larger ones with Spark:
    both give the same results, row by row."""
    from kafka_zk_audit.gate import context as gate_context

    warehouse, _ = audited
    folder, with_pandas, pandas_verdict = error_gate.suites_dir, error_gate.result, error_gate.verdict
    config = with_pandas["validation_results"][0]["expectations"][0]["kwargs"]
    monkeypatch.setattr(gate_context, "PANDAS_MAX_BYTES", 0)  # every table is "large"
    with_spark, spark_verdict = run_gate(warehouse, folder)
    assert config["batch_id"] == with_spark["validation_results"][0]["expectations"][0]["kwargs"]["batch_id"]
    assert pandas_verdict == spark_verdict

    def outcomes(result: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(e["expectation_type"], e["kwargs"].get("column"), e["success"],
                 e["result"].get("observed_value"), e["result"].get("unexpected_count") or 0,
                 json.dumps(e["result"].get("unexpected_index_list"), sort_keys=True))
                for v in result["validation_results"] for e in v["expectations"]]

    assert outcomes(with_pandas) == outcomes(with_spark)
