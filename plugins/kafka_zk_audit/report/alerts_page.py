"""The alerts inside the Data Docs site: ``<data_docs>/alerts/index.html`` lists, for each cluster of the latest run,
its firing, pending and resolved findings with their dedup keys and durations, and a banner on the site's index links
to it. The Data Docs' look (:mod:`kafka_zk_audit.report.page_style`): tables that sort, filter and fit the window."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert_state import read_alerts
from kafka_zk_audit.report.data_docs import link_at_top
from kafka_zk_audit.report.lifecycle import describe_subject, format_duration_s
from kafka_zk_audit.report.page_style import cell, esc, links_for, page, severity_badge, table

DATA_DOCS_LINK_ID = "kafka-zk-audit-alerts"
PAGE = "alerts/index.html"
TITLE = "Alerts: firing, pending and resolved findings"
COLUMNS = ("severity", "check", "subject", "path", "detail", "key")


def _table(entries: list[dict[str, Any]], duration: str, value: Callable[[dict[str, Any]], str]) -> str:
    if not entries:
        return '<p class="kza-meta">none</p>'
    rows = (
        "<tr>" + cell(entry.get("severity"), html_value=severity_badge(entry.get("severity")))
        + cell(entry.get("check_id")) + cell(describe_subject(entry), wrap=True) + cell(entry.get("path"), wrap=True)
        + cell(entry.get("detail"), wrap=True) + cell(entry.get("key"), wrap=True) + cell(value(entry)) + "</tr>"
        for entry in entries)
    return table((*COLUMNS, duration), rows, css_class="kza-alerts")


def _section(record: dict[str, Any]) -> str:
    lifecycle = record["lifecycle"]
    counts = lifecycle["counts"]
    failed = sum(not d.get("ok") for d in record.get("deliveries") or [])
    return (
        f"<h2 class=\"kza-section\" id=\"{esc(record['cluster'])}\">{esc(record['cluster'])}</h2>"
        f"<p class=\"kza-meta\">snapshot <code>{esc(record['snapshot_id'])}</code>: {counts['firing']} firing "
        f"({counts['triggered']} started now), {counts['pending']} pending, {counts['resolved']} resolved, "
        f"{counts['healed_while_pending']} healed while pending; {len(record.get('deliveries') or [])} deliveries, "
        f"{failed} failed</p>"
        "<h3>Firing</h3>" + _table(lifecycle["firing"], "firing for", lambda e: format_duration_s(e.get("age_s")))
        + "<h3>Pending (not alerted until their <code>for</code> has passed)</h3>"
        + _table(lifecycle["pending"], "pending for / fires in",
                 lambda e: f"{format_duration_s(e.get('age_s'))} / {format_duration_s(e.get('fires_in_s'))}")
        + "<h3>Resolved at this snapshot</h3>"
        + _table(lifecycle["resolved"], "lasted (firing)",
                 lambda e: f"{format_duration_s(e.get('lasted_s'))} ({format_duration_s(e.get('fired_s'))})"))


def write_alerts_page(warehouse: Warehouse, snapshot_ids: Sequence[str]) -> str | None:
    """(Re)write the page for the run's audited snapshots whose alerts were sent; returns its URL (None: none)."""
    records = [record for record in (read_alerts(warehouse, sid) for sid in snapshot_ids) if record]
    if not records:
        return None
    url = f"{warehouse.data_docs_dir}/{PAGE}"
    body = "".join(_section(record) for record in sorted(records, key=lambda r: r["cluster"]))
    warehouse.write_text(url, page(TITLE, body, links_for(warehouse, url)))
    return url


def link_alerts_in_data_docs(warehouse: Warehouse) -> bool:
    """The link to the alerts page at the top of the Data Docs index, when both exist."""
    if not warehouse.exists(f"{warehouse.data_docs_dir}/{PAGE}"):
        return False
    return link_at_top(warehouse, DATA_DOCS_LINK_ID, PAGE, TITLE)
