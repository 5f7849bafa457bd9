"""The end of a DAG run: what it publishes (summaries, readiness pages, links to the histories) and what it prunes.

:func:`publish_run` is the DAG's ``summary`` task (after its alerts): every audited cluster's ``summary.json`` and
the fleet's, the ZK -> KRaft readiness pages, the alerts page and the link to the histories in the Data Docs, the
lines the task's log shows, and the extra of each audited cluster's Asset event. :func:`prune_run` is its
``retention`` task, :func:`run_failure` its ``verdict`` task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kafka_zk_audit.contract.retention import apply_retention
from kafka_zk_audit.contract.settings import RetentionConfig
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report import readiness
from kafka_zk_audit.report.alerts_page import link_alerts_in_data_docs, write_alerts_page
from kafka_zk_audit.report.fleet import summarize_fleet
from kafka_zk_audit.report.history_index import link_history_in_data_docs, refresh_history_index
from kafka_zk_audit.report.summary import format_alerts


@dataclass(frozen=True)
class PublishedRun:
    """What :func:`publish_run` wrote: the summary task's return value and, per audited cluster, its Asset extra."""

    result: dict[str, Any]
    asset_extras: dict[str, dict[str, Any]]


def publish_readiness(warehouse: Warehouse, snapshot_ids: Sequence[str],
                      emit: Callable[[str], None] = print) -> dict[str, Any]:
    """The ZK -> KRaft readiness pages of this run's clusters (warehouse and Data Docs); verdict per cluster."""
    reports = readiness.load_reports(warehouse, snapshot_ids)
    if not reports:
        return {}
    pages = readiness.write_pages(warehouse, reports)
    readiness.publish_in_data_docs(warehouse, reports)
    verdicts = {readiness.cluster_name(report): readiness.verdict_of(report) for report in reports}
    emit(f"migration readiness: {', '.join(f'{name} {v}' for name, v in verdicts.items())}; report: {pages[0]}")
    return {"page": pages[0], "verdicts": verdicts}


def histories_by_cluster(histories: Any) -> dict[str, dict[str, Any]]:
    """What the run's history tasks returned (one dict, a list, or None; skipped and failed ones return nothing), by
    cluster."""
    values = [histories] if isinstance(histories, dict) else list(histories or [])
    return {value["cluster"] or readiness.DEFAULT_CLUSTER: value for value in values if isinstance(value, dict)}


def publish_run(warehouse: Warehouse, clusters: Sequence[str], snapshot_ids: Sequence[str],
                verdict: dict[str, Any] | None, histories: Iterable[dict[str, Any]] | dict[str, Any] | None = None,
                *, run_id: str = "", emit: Callable[[str], None] = print) -> PublishedRun:
    """Write the run's summaries (``report.fleet``) and readiness pages, link the histories in the Data Docs (the
    gate rebuilt their index) and ``emit`` what the run found, cluster by cluster."""
    fleet, path = summarize_fleet(warehouse, list(clusters), list(snapshot_ids), verdict, run_id=run_id)
    extras = {name: cluster["asset_extra"] for name, cluster in fleet["clusters"].items() if cluster.get("summary")}
    emit(fleet["text"])
    emit(f"fleet summary: {path}")
    for name, cluster in fleet["clusters"].items():
        alerts = warehouse.read_json(cluster["summary"]).get("alerts") if cluster.get("summary") else None
        if alerts:
            emit("\n".join([f"{name}: {line}" if i == 0 else line for i, line in enumerate(format_alerts(alerts))]))
    alerts_page = write_alerts_page(warehouse, list(snapshot_ids))
    link_alerts_in_data_docs(warehouse)  # first: each link goes on top, the readiness link above the others
    link_history_in_data_docs(warehouse)
    if alerts_page:
        emit(f"alerts: {alerts_page}")
    readiness_found = publish_readiness(warehouse, snapshot_ids, emit)
    found_histories = histories_by_cluster(histories)
    for name, found in found_histories.items():
        emit(f"history of {name}: {found['listed']} interval(s) listed, {found['short']} shorter than the floor, "
             f"zxid {found['first_zxid']} to {found['last_zxid']}; page: {found['page']}")
    result = {**{k: v for k, v in fleet.items() if k != "text"}, "readiness": readiness_found,
              "histories": found_histories, "alerts_page": alerts_page}
    return PublishedRun(result, extras)


def prune_run(warehouse: Warehouse, settings: RetentionConfig, protect: Iterable[str] = (),
              now: datetime | None = None) -> dict[str, Any]:
    """Prune the warehouse by the retention settings, never a baseline or a snapshot of ``protect`` (the run's); the
    list of histories loses the pruned ones. Returns what went and which baselines stayed."""
    plan = apply_retention(warehouse, settings, now or datetime.now(UTC), protect=list(protect))
    if plan.drop_histories:
        refresh_history_index(warehouse)  # no link left to a pruned history's page
    return {"dropped_data": plan.drop_data, "dropped_findings": plan.drop_findings,
            "baselines": plan.kept_baselines, "dropped_history_changes": plan.drop_history_changes,
            "dropped_histories": plan.drop_histories}


def run_failure(fleet: dict[str, Any] | None) -> str | None:
    """Why the run is red (a cluster's gate failed, a cluster could not be audited, no summary was written), from
    the summary task's return value; None when every cluster is green."""
    if not fleet:
        return "no summary was written; see the failed tasks' logs"
    problems = []
    if fleet.get("red"):
        problems.append(f"the gate failed for {', '.join(fleet['red'])}")
    if fleet.get("not_audited"):
        problems.append(f"not audited: {', '.join(fleet['not_audited'])}")
    return "; ".join(problems) or None
