"""The alert for a run that could not audit: which cluster, which task, why, and where the log is.

A snapshot that cannot reach its ensemble, a Spark app that dies or a gate that crashes leave no findings to
report, so they get their own alert, as loud as a failed gate. A failed history (the ``history`` task) says the
audit stands and what is missing instead. Pure message building; delivery is the notifier's.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from kafka_zk_audit.report.alert import SUBJECT_PREFIX, Alert
from kafka_zk_audit.report.lifecycle import KEY_PREFIX

ERROR_CHARS = 1500


@dataclass(frozen=True)
class TaskFailure:
    """What failed: the DAG run's task (and cluster, for a per-cluster task) and the error it ended with."""

    dag_id: str
    run_id: str
    task_id: str
    error: str
    cluster: str | None = None
    map_index: int = -1
    try_number: int | None = None
    log_url: str | None = None


HISTORY_TASK = "history"
FLEET = "fleet"  # the key's cluster of a task that is not per cluster


def failure_key(failure: TaskFailure) -> str:
    """The failure's dedup key for PagerDuty and Opsgenie: ``kafka-zk-audit:<cluster>:task_failed:<task_id>``, the
    same for every run and DAG in which that task fails for that cluster, so repeated failures are one incident."""
    return f"{KEY_PREFIX}:{(failure.cluster or FLEET)[:120]}:task_failed:{failure.task_id[:100]}"


def failure_severity(failure: TaskFailure) -> str:
    """``critical`` for a run that could not audit (nothing watches the cluster until it is fixed), ``warning`` for
    a history that could not be built (the audit stands)."""
    return "warning" if failure.task_id == HISTORY_TASK else "critical"


def _what(failure: TaskFailure) -> str:
    where = f"cluster {failure.cluster}" if failure.cluster else "the fleet"
    return f"task {failure.task_id} failed for {where}"


def build_failure_alert(failure: TaskFailure) -> Alert:
    """Subject, text, HTML and a Slack-compatible payload for one failed task."""
    error = failure.error.strip() or "no error message"
    if len(error) > ERROR_CHARS:
        error = error[: ERROR_CHARS - 1] + "…"
    of = f" of {failure.cluster}" if failure.cluster else ""
    if failure.task_id == HISTORY_TASK:  # the audit itself is not affected
        subject = f"{SUBJECT_PREFIX} history could NOT be built: {_what(failure)}"
        consequence = (f"The audit of this run is not affected; the history{of} since its previous one is missing: "
                       "fix the cause above; the next history starts where the last one that was built ended, so "
                       "it covers this run's window too while ZooKeeper still keeps those logs.")
    else:
        subject = f"{SUBJECT_PREFIX} audit could NOT complete: {_what(failure)}"
        consequence = (f"No audit result exists for this run{of}: fix the cause above and re-run the DAG (or wait "
                       "for the next scheduled run).")
    facts: dict[str, Any] = {
        "kind": "task_failure",
        "key": failure_key(failure),
        "severity": failure_severity(failure),
        "dag_id": failure.dag_id,
        "run_id": failure.run_id,
        "task_id": failure.task_id,
        "cluster": failure.cluster,
        "map_index": failure.map_index,
        "try_number": failure.try_number,
        "error": error,
        "log_url": failure.log_url,
    }
    lines = [
        subject,
        "",
        f"DAG {failure.dag_id}, run {failure.run_id}",
        f"task: {failure.task_id}" + (f" (try {failure.try_number})" if failure.try_number else ""),
        f"cluster: {failure.cluster or 'all clusters of the run'}",
        f"why: {error}",
        f"log: {failure.log_url or 'see the task log in Airflow'}",
        "",
        consequence,
    ]
    text = "\n".join(lines)
    body = "".join(f"<p>{html.escape(line)}</p>" for line in lines[2:] if line)
    if failure.log_url:
        body += f'<p><a href="{html.escape(failure.log_url, quote=True)}">task log</a></p>'
    page = f"<html><body><h2>{html.escape(subject)}</h2>{body}</body></html>"
    payload = {
        "text": subject,
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": subject[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "```" + "\n".join(lines[2:8])[:2900] + "```"}},
        ],
        "kafka_zk_audit": facts,
    }
    return Alert(snapshot_id="", subject=subject, text=text, html=page, payload=payload, facts=facts)
