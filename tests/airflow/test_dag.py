"""The DAG as the scheduler sees it: the DAG folder loaded by Airflow's DagBag, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_zk_audit.cli.runner import airflow_env

PROBE = r"""
import json, os, sys
from airflow.dag_processing.dagbag import DagBag
def callbacks(task):
    cb = task.on_failure_callback or []
    return sorted(type(c).__name__ for c in (cb if isinstance(cb, list) else [cb]))
def describe(dag):
    return {
        "timetable": type(dag.timetable).__name__,
        "summary": getattr(dag.timetable, "summary", None) or getattr(dag.timetable, "_expression", None)
                   or getattr(dag.timetable, "expression", None),
        "catchup": dag.catchup,
        "max_active_runs": dag.max_active_runs,
        "tasks": {t.task_id: {"retries": t.retries, "timeout": t.execution_timeout.total_seconds()
                              if t.execution_timeout else None,
                              "backoff": t.retry_exponential_backoff, "callbacks": callbacks(t),
                              "trigger_rule": str(t.trigger_rule), "mapped": type(t).__name__ == "MappedOperator",
                              "max_active_tis": getattr(t, "partial_kwargs", {}).get("max_active_tis_per_dagrun"),
                              "map_index_template": getattr(t, "partial_kwargs", {}).get("map_index_template"),
                              "upstream": sorted(t.upstream_task_ids), "class": t.task_type}
                  for t in dag.tasks},
        "outlets": [str(o) for o in dag.get_task("summary").outlets],
        "audit_conf": dag.get_task("audit").conf,
        "history_conf": dag.get_task("history").partial_kwargs.get("conf") if dag.has_task("history") else None,
        "order": [t.task_id for t in dag.topological_sort()],
        "watched": {a.uri.rstrip("/"): [w.trigger.serialize() for w in a.watchers]
                    for a in getattr(dag.timetable, "asset_condition", None) and dag.timetable.asset_condition.objects
                    or ()},
    }
def load(settings):
    os.environ.pop("KAFKA_ZK_AUDIT_CONFIG", None)
    if settings:
        os.environ["KAFKA_ZK_AUDIT_CONFIG"] = settings
    bag = DagBag(dag_folder=sys.argv[1])  # imports the DAG file anew
    if bag.import_errors:
        return {"import_errors": {k: str(v) for k, v in bag.import_errors.items()}}
    return {"dags": {dag_id: describe(dag) for dag_id, dag in bag.dags.items()},
            "imported": sorted(m for m in ("pyspark", "great_expectations") if m in sys.modules)}
print(json.dumps([load(settings) for settings in json.loads(sys.argv[2])]))
"""
REPO = Path(__file__).resolve().parents[2]


EVENTS_SETTINGS = """
clusters:
  - {name: east, zk_conn_id: zk_east}
  - {name: dr, files: {data_dir: /zk}}
  - {name: west, zk_conn_id: zk_west}
events: {enabled: true, quiet_period: 2s, max_delay: 20s, paths: [/brokers, /admin]}
"""
SCHEDULES = {"0 */2 * * *": "0 */2 * * *", "@daily": "0 0 * * *"}  # the setting -> the timetable's summary
MANUAL_ONLY = "schedule: null\n"
BROKEN = "schedule: '@hourly'\nfleet: {task_retries: -1}\n"


def scheduled(schedule: str) -> str:
    """Settings with this schedule, five retries and a ten-minute task timeout."""
    return f"schedule: '{schedule}'\nfleet: {{task_retries: 5, task_timeout: 10m}}\n"


# Every settings text the module's tests load the DAG folder with: loaded in one new process, at the first test's
# call (a process that imports Airflow costs about as much as the loads it then makes).
SETTINGS_TEXTS: tuple[str | None, ...] = (
    None,
    EVENTS_SETTINGS,
    *(scheduled(schedule) for schedule in SCHEDULES),
    MANUAL_ONLY,
    BROKEN,
)
_LOADED: dict[str | None, dict] = {}  # settings -> what the DagBag load of the DAG folder with them gave


def load_dag(tmp_path: Path, settings: str | None, dag_id: str = "kafka_zk_audit") -> dict:
    """The DAG ``dag_id`` as a DagBag of the DAG folder loads it with these settings (one of ``SETTINGS_TEXTS``),
    in a new process: every settings text's bag is loaded and every DAG of it described at the first call."""
    assert settings in SETTINGS_TEXTS, "add the settings text to SETTINGS_TEXTS"
    if not _LOADED:
        env = airflow_env(airflow_home=tmp_path / "airflow",
                          base={k: v for k, v in os.environ.items()
                                if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"})
        paths: list[str | None] = []
        for index, text in enumerate(SETTINGS_TEXTS):
            path = tmp_path / f"settings-{index}.yaml"
            if text is not None:
                path.write_text(text)
            paths.append(str(path) if text is not None else None)
        proc = subprocess.run([sys.executable, "-c", PROBE, str(REPO / "dags"), json.dumps(paths)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        _LOADED.update(zip(SETTINGS_TEXTS, json.loads(proc.stdout.strip().splitlines()[-1]), strict=True))
    loaded = _LOADED[settings]
    if "import_errors" in loaded:
        return loaded
    return {**loaded["dags"][dag_id], "dags": sorted(loaded["dags"]), "imported": loaded["imported"]}


def test_the_default_dag_runs_hourly_with_retries_timeouts_and_failure_alerts(tmp_path):
    dag = load_dag(tmp_path, None)
    assert "import_errors" not in dag, dag
    assert dag["summary"] in ("@hourly", "0 * * * *") and dag["catchup"] is False and dag["max_active_runs"] == 1
    assert dag["order"] == ["clusters", "snapshot", "audit", "gate", "history", "summary", "retention", "verdict"]
    for task_id in ("snapshot", "audit", "gate", "history"):
        task = dag["tasks"][task_id]
        assert task["retries"] == 2 and task["backoff"], task_id
        assert task["timeout"] == 45 * 60, task_id
        assert "TaskFailureNotifier" in task["callbacks"], task_id
    assert dag["tasks"]["gate"]["callbacks"] == ["TaskFailureNotifier"]  # the findings alert from the summary task
    assert dag["tasks"]["snapshot"]["mapped"] is True and dag["tasks"]["snapshot"]["max_active_tis"] == 4
    assert dag["tasks"]["audit"]["trigger_rule"].lower().endswith("all_done")
    assert any("kafka_zk_audit_clusters" in outlet for outlet in dag["outlets"])
    assert dag["audit_conf"]["spark.driver.extraJavaOptions"].split() == [
        "-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m"]


def test_the_event_driven_dag_watches_each_live_cluster_through_the_same_stages(tmp_path):
    hourly = load_dag(tmp_path, EVENTS_SETTINGS)
    events = load_dag(tmp_path, EVENTS_SETTINGS, "kafka_zk_audit_events")
    assert events["dags"] == ["kafka_zk_audit", "kafka_zk_audit_events"]
    assert events["order"] == [t for t in hourly["order"] if t != "history"]
    assert events["max_active_runs"] == 1 and events["catchup"] is False
    # the hourly DAG's stages, but no history: a watched cluster is read from its ensemble, it has no files
    assert "history" in hourly["tasks"] and "history" not in events["tasks"]
    # (the summary follows the gate where the hourly DAG's follows the history)
    expected = {t: (v["class"], sorted("gate" if u == "history" else u for u in v["upstream"]), v["trigger_rule"])
                for t, v in hourly["tasks"].items() if t != "history"}
    assert {t: (v["class"], v["upstream"], v["trigger_rule"]) for t, v in events["tasks"].items()} == expected
    assert hourly["watched"] == {}  # the scheduled DAG stays on its schedule
    # the clusters read from their ensemble, not the one audited from its files
    assert sorted(events["watched"]) == ["kafka-zk-audit-watch://east", "kafka-zk-audit-watch://west"]
    (classpath, kwargs), = events["watched"]["kafka-zk-audit-watch://east"]
    assert classpath == "kafka_zk_audit.airflow.triggers.metadata_changes.KafkaMetadataChangeTrigger"
    assert (kwargs["cluster"], kwargs["zk_conn_id"], kwargs["paths"], kwargs["quiet_period_s"],
            kwargs["max_delay_s"]) == ("east", "zk_east", ["/brokers", "/admin"], 2.0, 20.0)
    assert events["imported"] == []  # neither pyspark nor GX at parse time, with the watches too
    assert load_dag(tmp_path, None)["dags"] == ["kafka_zk_audit"]  # events off by default: one DAG


def test_an_event_driven_run_audits_the_clusters_whose_events_started_it(tmp_path):
    from types import SimpleNamespace

    from kafka_zk_audit.airflow.dag import build_event_dag, changed_clusters

    def event(uri: str) -> SimpleNamespace:
        return SimpleNamespace(asset=SimpleNamespace(uri=uri))

    events = {"a": [event("kafka-zk-audit-watch://east/"), event("kafka-zk-audit-watch://east")],
              "b": [event("kafka-zk-audit://west")]}
    assert changed_clusters(events) == {"east"}
    assert changed_clusters(None) == set()
    # the event DAG's clusters task plans just the watched clusters whose watch fired; a manual run plans them all
    settings = tmp_path / "settings.yaml"
    settings.write_text(EVENTS_SETTINGS)
    plan = build_event_dag(str(settings)).get_task("clusters").python_callable
    params = {"from_files": None, "at_zxid": None, "at_time": None}
    fired = plan("zookeeper_default", str(settings), params=params, triggering_asset_events=events)
    assert [(t["cluster"], t["zk_conn_id"]) for t in fired] == [("east", "zk_east")]
    manual = plan("zookeeper_default", str(settings), params=params, triggering_asset_events=None)
    assert [t["cluster"] for t in manual] == ["east", "west"]  # not dr: it is read from its files


def test_the_history_runs_per_cluster_after_the_gate_and_never_stops_the_summary(tmp_path):
    dag = load_dag(tmp_path, None)
    history = dag["tasks"]["history"]
    assert history["mapped"] is True and history["map_index_template"] == "{{ task.cluster }}"
    assert history["class"] == "ZooKeeperHistoryOperator" and history["max_active_tis"] == 1
    assert history["upstream"] == ["clusters", "gate"]  # mapped over the clusters, after the gate
    assert history["trigger_rule"].lower().endswith("all_done")  # whatever the gate's verdict
    summary = dag["tasks"]["summary"]
    assert "history" in summary["upstream"] and summary["trigger_rule"].lower().endswith("all_done")
    assert dag["history_conf"] == dag["audit_conf"]


@pytest.mark.parametrize(("schedule", "summary"), SCHEDULES.items())
def test_the_schedule_and_retries_come_from_the_settings(tmp_path, schedule, summary):
    dag = load_dag(tmp_path, scheduled(schedule))
    assert dag["summary"] == summary
    assert dag["tasks"]["audit"]["retries"] == 5 and dag["tasks"]["audit"]["timeout"] == 600


def test_manual_only_and_a_broken_settings_file_is_an_import_error(tmp_path):
    assert load_dag(tmp_path, MANUAL_ONLY)["timetable"] == "NullTimetable"
    broken = load_dag(tmp_path, BROKEN)
    assert "fleet.task_retries" in json.dumps(broken["import_errors"])


def test_from_files_at_zxid_and_at_time_apply_to_the_clusters_that_read_files():
    from kafka_zk_audit.snapshot.files.sources import FilesSourceError
    from kafka_zk_audit.snapshot.targets import plan_files

    default = [{"cluster": "default", "zk_conn_id": None, "files": None, "kraft": None}]
    planned = plan_files(default, {"from_files": "/var/lib/zookeeper", "at_zxid": "0x1f", "at_time": None})
    assert planned == [{"cluster": "default", "zk_conn_id": None, "at_zxid": "0x1f", "at_time": None,
                        "at_offset": None, "kraft": None,
                        "files": {"data_dir": "/var/lib/zookeeper", "log_dir": None, "sftp_conn_id": None}}]
    from_kraft = plan_files(default, {"from_kraft": "/var/lib/kafka/metadata", "at_offset": "42"})
    assert from_kraft == [{"cluster": "default", "zk_conn_id": None, "files": None, "at_zxid": None,
                           "at_offset": "42", "at_time": None,
                           "kraft": {"metadata_dir": "/var/lib/kafka/metadata", "sftp_conn_id": None}}]
    fleet = [{"cluster": "eu", "zk_conn_id": "zk_eu", "files": None},
             {"cluster": "dr", "zk_conn_id": None, "files": {"data_dir": "s3://b/zk", "log_dir": None,
                                                             "sftp_conn_id": None}}]
    at_time = plan_files(fleet, {"from_files": "", "at_zxid": None, "at_time": "2026-11-01T00:00:00Z"})
    assert [(t["cluster"], t["at_time"]) for t in at_time] == [("eu", None), ("dr", "2026-11-01T00:00:00Z")]
    two_from_files = [fleet[1], {**fleet[1], "cluster": "dr2"}]
    for targets, params, message in [
        (fleet, {"from_files": "/zk"}, "the settings list 2 clusters"),
        (fleet, {"at_time": "later"}, "ISO 8601"),
        (two_from_files, {"at_zxid": 5}, "for several clusters"),
    ]:
        with pytest.raises(FilesSourceError, match=message):
            plan_files(targets, params)
    with pytest.raises(FilesSourceError, match="give from_files or from_kraft, or clusters with a files: or kraft:"):
        plan_files(default, {"at_zxid": 7})
    for params, message in [({"at_offset": "5"}, "at_offset is an offset of one KRaft metadata log"),
                            ({"from_kraft": "/k", "at_zxid": "5"}, "at_zxid is a zxid of one ensemble's files"),
                            ({"from_kraft": "/k", "from_files": "/z"}, "give one of them"),
                            ({"from_kraft": "/k", "at_offset": "-1"}, "at_offset")]:
        with pytest.raises(FilesSourceError, match=message):
            plan_files(default, params)


PARSE = r"""
import json, sys, time
started = time.perf_counter()
from airflow.dag_processing.dagbag import DagBag
imported = time.perf_counter()
bag = DagBag(dag_folder=sys.argv[1])
loaded = time.perf_counter()
print(json.dumps({"import_errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": sorted(bag.dags),
                  "airflow_import_s": imported - started, "dagbag_load_s": loaded - imported,
                  "imported": sorted(m for m in ("pyspark", "great_expectations") if m in sys.modules)}))
"""


def test_parsing_the_dag_file_imports_neither_pyspark_nor_great_expectations(tmp_path):
    """What the scheduler's DAG processor pays for the DAG file: a DagBag of dags/ in a fresh process (its load time
    is printed; ``-s`` shows it). Spark and GX are imported by the tasks that use them, when they run."""
    env = airflow_env(airflow_home=tmp_path / "airflow",
                      base={k: v for k, v in os.environ.items()
                            if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"})
    proc = subprocess.run([sys.executable, "-c", PARSE, str(REPO / "dags")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    parsed = json.loads(proc.stdout.strip().splitlines()[-1])
    timing = (f"DagBag load of dags/: {parsed['dagbag_load_s']:.2f} s (after {parsed['airflow_import_s']:.2f} s "
              "importing Airflow)")
    print(timing)
    assert parsed["import_errors"] == {} and parsed["dags"] == ["kafka_zk_audit"], parsed
    assert parsed["imported"] == [], f"the DAG file imported {parsed['imported']}; {timing}"


PRUNE = r"""
import json, sys
from airflow.dag_processing.dagbag import DagBag
task = DagBag(dag_folder=sys.argv[1]).dags["kafka_zk_audit"].get_task("retention")
print(json.dumps(task.python_callable(sys.argv[2], "", None)))
"""


def test_the_retention_task_takes_a_pruned_history_off_the_data_docs_list(tmp_path):
    """The task as the DAG file defines it, on a warehouse with an old history and a new one of the same cluster:
    the old one goes (older than retention.keep_findings_for), and so do its page and its line in the list."""
    warehouse = tmp_path / "wh"
    pages = warehouse / "data_docs" / "history"
    pages.mkdir(parents=True)
    old, new = "20250101T000000Z-0001", "20261122T000000Z-0002"
    for history_id in (old, new):
        (warehouse / "history" / history_id).mkdir(parents=True)
        (warehouse / "history" / history_id / "history.json").write_text(
            json.dumps({"history_id": history_id, "cluster": "eu", "txns": 1, "checks": {}}))
        (pages / f"{history_id}.html").write_text("<html></html>")
    (pages / "index.html").write_text(f'<a href="{old}.html">{old}</a><a href="{new}.html">{new}</a>')
    env = airflow_env(airflow_home=tmp_path / "airflow",
                      base={k: v for k, v in os.environ.items()
                            if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"})
    proc = subprocess.run([sys.executable, "-c", PRUNE, str(REPO / "dags"), str(warehouse)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["dropped_histories"] == [old]
    assert not (warehouse / "history" / old).exists() and not (pages / f"{old}.html").exists()
    listed = (pages / "index.html").read_text()
    assert f'href="{old}.html"' not in listed and f'href="{new}.html"' in listed
