"""The alerts inside the Data Docs site: ``<data_docs>/alerts/index.html`` lists, for each cluster of the latest run,
its firing, pending and resolved findings with their dedup keys and durations, and a banner on the site's index links
to it. Standalone HTML, no script."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.alert_state import read_alerts
from kafka_zk_audit.report.data_docs import link_at_top
from kafka_zk_audit.report.lifecycle import describe_subject, format_duration_s

DATA_DOCS_LINK_ID = "kafka-zk-audit-alerts"
PAGE = "alerts/index.html"
COLUMNS = ("severity", "check", "subject", "path", "detail", "key")


def _table(entries: list[dict[str, Any]], duration: str, value: Any) -> str:
    if not entries:
        return "<p>none</p>"
    esc = html.escape
    head = "".join(f"<th>{esc(name)}</th>" for name in (*COLUMNS, duration))
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(str(cell if cell is not None else ''))}</td>" for cell in (
            entry.get("severity"), entry.get("check_id"), describe_subject(entry), entry.get("path"),
            entry.get("detail"), entry.get("key"), value(entry))) + "</tr>"
        for entry in entries)
    return f"<table><tr>{head}</tr>{rows}</table>"


def write_alerts_page(warehouse: Warehouse, snapshot_ids: Sequence[str]) -> str | None:
    """(Re)write the page for the run's audited snapshots whose alerts were sent; returns its URL (None: none)."""
    records = [record for record in (read_alerts(warehouse, sid) for sid in snapshot_ids) if record]
    if not records:
        return None
    esc = html.escape
    sections = []
    for record in sorted(records, key=lambda r: r["cluster"]):
        lifecycle = record["lifecycle"]
        counts = lifecycle["counts"]
        failed = sum(not d.get("ok") for d in record.get("deliveries") or [])
        sections.append(
            f"<h2 id=\"{esc(record['cluster'])}\">{esc(record['cluster'])}</h2>"
            f"<p>snapshot {esc(record['snapshot_id'])}: {counts['firing']} firing ({counts['triggered']} started "
            f"now), {counts['pending']} pending, {counts['resolved']} resolved, {counts['healed_while_pending']} "
            f"healed while pending; {len(record.get('deliveries') or [])} deliveries, {failed} failed</p>"
            "<h3>Firing</h3>" + _table(lifecycle["firing"], "firing for",
                                       lambda e: format_duration_s(e.get("age_s")))
            + "<h3>Pending (not alerted until their <code>for</code> has passed)</h3>"
            + _table(lifecycle["pending"], "pending for / fires in",
                     lambda e: f"{format_duration_s(e.get('age_s'))} / {format_duration_s(e.get('fires_in_s'))}")
            + "<h3>Resolved at this snapshot</h3>"
            + _table(lifecycle["resolved"], "lasted (firing)",
                     lambda e: f"{format_duration_s(e.get('lasted_s'))} ({format_duration_s(e.get('fired_s'))})"))
    url = f"{warehouse.data_docs_dir}/{PAGE}"
    warehouse.write_text(url, (
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>kafka-zk-audit: alerts</title><style>"
        "body{font-family:sans-serif;margin:24px}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
        "<h1>Alerts: firing, pending and resolved findings</h1>" + "".join(sections) + "</body></html>"))
    return url


def link_alerts_in_data_docs(warehouse: Warehouse) -> bool:
    """The link to the alerts page at the top of the Data Docs index, when both exist."""
    if not warehouse.exists(f"{warehouse.data_docs_dir}/{PAGE}"):
        return False
    return link_at_top(warehouse, DATA_DOCS_LINK_ID, PAGE, "Alerts: firing, pending and resolved findings")
