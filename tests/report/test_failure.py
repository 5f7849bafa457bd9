"""The alert of a run that could not audit names the cluster, the task, the error and the log."""

from __future__ import annotations

import json

from kafka_zk_audit.report.failure import ERROR_CHARS, TaskFailure, build_failure_alert


def test_failure_alert_names_cluster_task_error_and_log():
    failure = TaskFailure(dag_id="kafka_zk_audit", run_id="scheduled__2026-11-22T10:00:00+00:00", task_id="snapshot",
                          error="ConnectionLoss: no server of 127.0.0.1:1 answered", cluster="prod-eu", map_index=2,
                          try_number=3, log_url="http://127.0.0.1:8080/log?task=snapshot")
    alert = build_failure_alert(failure)
    assert "could NOT complete" in alert.subject and "snapshot" in alert.subject and "prod-eu" in alert.subject
    for text in (alert.text, alert.html, json.dumps(alert.payload)):
        assert "ConnectionLoss: no server of 127.0.0.1:1 answered" in text
        assert "http://127.0.0.1:8080/log?task=snapshot" in text
    assert alert.payload["kafka_zk_audit"]["cluster"] == "prod-eu"
    assert alert.payload["kafka_zk_audit"]["task_id"] == "snapshot"
    assert "try 3" in alert.text


def test_failure_alert_of_a_fleet_task_and_a_long_error():
    alert = build_failure_alert(TaskFailure(dag_id="d", run_id="r", task_id="audit", error="x" * 5000))
    assert "for the fleet" in alert.subject
    assert len(alert.facts["error"]) == ERROR_CHARS
    assert "all clusters of the run" in alert.text
    assert "<script>" not in build_failure_alert(
        TaskFailure(dag_id="d", run_id="r", task_id="gate", error="<script>alert(1)</script>")).html


def test_a_failed_history_says_the_audit_stands():
    alert = build_failure_alert(TaskFailure(dag_id="d", run_id="r", task_id="history", cluster="dr",
                                            error="OfflineFilesError: no usable snapshot"))
    assert alert.subject.endswith("history could NOT be built: task history failed for cluster dr")
    assert "The audit of this run is not affected; the history of dr since its previous one is missing" in alert.text
    assert "No audit result" not in alert.text
    audit = build_failure_alert(TaskFailure(dag_id="d", run_id="r", task_id="snapshot", cluster="dr", error="x"))
    assert "No audit result exists for this run of dr" in audit.text
