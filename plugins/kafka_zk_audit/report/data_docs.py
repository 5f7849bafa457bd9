"""Pages of this project inside the Great Expectations Data Docs site, linked from the top of its index page."""

from __future__ import annotations

import html

from kafka_zk_audit.contract.warehouse import Warehouse


def link_at_top(warehouse: Warehouse, link_id: str, href: str, text: str, note: str = "") -> bool:
    """Put a banner link to ``href`` (relative to the site) at the top of the Data Docs index page, once per
    ``link_id``. The gate rebuilds the index every run, so callers add it again after each gate. Returns whether
    the index now has it (False: no Data Docs site yet)."""
    index = warehouse.data_docs_index
    if not warehouse.exists(index):
        return False
    with warehouse.fs.open(warehouse.fs_path(index), "r", encoding="utf-8") as handle:
        page = handle.read()
    if link_id in page:
        return True
    if "<body" not in page:
        return False
    banner = (f'<div id="{link_id}" style="padding:8px 16px;background:#fff8e1;'
              f'border-bottom:1px solid #e0c97f;font-family:sans-serif">'
              f'<a href="{html.escape(href)}">{html.escape(text)}</a>{html.escape(note)}</div>')
    head, _, rest = page.partition("<body")
    tag_end = rest.index(">") + 1
    warehouse.write_text(index, f"{head}<body{rest[:tag_end]}{banner}{rest[tag_end:]}")
    return True
