"""The histories from ZooKeeper's files inside the Data Docs site: ``<data_docs>/history/index.html`` lists every
history of the warehouse (newest first) next to their pages, and a banner on the site's index links to it."""

from __future__ import annotations

import json
from typing import Any

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.data_docs import link_at_top
from kafka_zk_audit.report.page_style import cell, esc, links_for, page, table

DATA_DOCS_LINK_ID = "kafka-zk-audit-history"
TITLE = "What happened between runs: histories from ZooKeeper's files"


def _row(history: dict[str, Any]) -> str:
    """One history's row: its page, cluster, window, transactions, intervals listed, controller holders."""
    history_id = history["history_id"]
    link = f'<a href="{esc(history_id)}.html">{esc(history_id)}</a>'
    listed = sum(check.get("listed", 0) for check in history.get("checks", {}).values())
    return (f"<tr>{cell(history_id, html_value=link)}{cell(history.get('cluster'), wrap=True)}"
            f"{cell(str(history.get('first_time')) + ' to ' + str(history.get('last_time')))}"
            f"{cell(format(history.get('txns', 0), ','))}{cell(listed)}{cell(history.get('controller_failovers', 0))}"
            "</tr>")


def write_history_index(warehouse: Warehouse) -> str:
    """(Re)write the index of the histories whose summary is in the warehouse now; returns its URL."""
    histories = []
    for path in sorted(warehouse.fs.glob(warehouse.fs_path(f"{warehouse.history_dir()}/*/history.json")),
                       reverse=True):
        with warehouse.fs.open(path, "r", encoding="utf-8") as handle:
            histories.append(json.load(handle))
    rows = (_row(h) for h in histories)
    index = warehouse.history_page()
    body = table(("history", "cluster", "window (leader's clock)", "txns", "intervals listed", "controller holders"),
                 rows)
    warehouse.write_text(index, page(TITLE, body, links_for(warehouse, index)))
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
