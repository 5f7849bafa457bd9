"""The histories from ZooKeeper's files inside the Data Docs site: ``<data_docs>/history/index.html`` lists every
history of the warehouse (newest first) next to their pages, and a banner on the site's index links to it."""

from __future__ import annotations

import html
import json

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.data_docs import link_at_top

DATA_DOCS_LINK_ID = "kafka-zk-audit-history"


def write_history_index(warehouse: Warehouse) -> str:
    """(Re)write the index of the histories whose summary is in the warehouse now; returns its URL."""
    histories = []
    for path in sorted(warehouse.fs.glob(warehouse.fs_path(f"{warehouse.history_dir()}/*/history.json")),
                       reverse=True):
        with warehouse.fs.open(path, "r", encoding="utf-8") as handle:
            histories.append(json.load(handle))
    esc = html.escape
    rows = "".join(
        f"<tr><td><a href=\"{esc(h['history_id'])}.html\">{esc(h['history_id'])}</a></td>"
        f"<td>{esc(str(h.get('cluster') or ''))}</td><td>{esc(str(h.get('first_time')))} to "
        f"{esc(str(h.get('last_time')))}</td><td>{h.get('txns', 0):,}</td>"
        f"<td>{sum(c.get('listed', 0) for c in h.get('checks', {}).values())}</td>"
        f"<td>{h.get('controller_failovers', 0)}</td></tr>"
        for h in histories)
    index = warehouse.history_page()
    warehouse.write_text(index, (
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>kafka-zk-audit: histories from ZooKeeper's files"
        "</title><style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
        "<h1>What happened between runs: histories from ZooKeeper's files</h1>"
        "<table><tr><th>history</th><th>cluster</th><th>window (leader's clock)</th><th>txns</th>"
        f"<th>intervals listed</th><th>controller holders</th></tr>{rows}</table></body></html>"))
    return index


def refresh_history_index(warehouse: Warehouse) -> str | None:
    """Rewrite the index of histories when there is one (after retention pruned some); returns its URL."""
    if not warehouse.exists(warehouse.history_page()):
        return None
    return write_history_index(warehouse)


def link_history_in_data_docs(warehouse: Warehouse) -> bool:
    """The link to the histories at the top of the Data Docs index, when there are histories and a site."""
    if not warehouse.exists(warehouse.history_page()):
        return False
    return link_at_top(warehouse, DATA_DOCS_LINK_ID, "history/index.html",
                       "What happened between runs (histories from ZooKeeper's files)")
