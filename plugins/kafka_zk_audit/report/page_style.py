"""The look of the project's own pages (alerts, readiness, histories): the Data Docs' Bootstrap 4 and bootstrap-table
(tables that sort and filter), loaded from the copies the gate vendored into ``<data_docs>/static/vendor/`` with
URLs relative to each page, so they work offline wherever the page is written (inside the site or beside it in
the warehouse). Without those copies (no gate ran yet, or the assets were never fetched) a page links nothing
and reads as plain tables with its inline style.

Every value a page shows is untrusted data: callers escape it with :func:`esc`, and the pages' Content Security
Policy lets only files of their own origin run as script, never inline code.
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_zk_audit.contract.site_assets import BOOTSTRAP, BOOTSTRAP_TABLE, JQUERY, VENDOR_DIR, Asset
from kafka_zk_audit.contract.warehouse import Warehouse

PRODUCT = "kafka-zk-audit"
STYLESHEETS = (Asset("bootstrap", BOOTSTRAP, "dist/css/bootstrap.min.css"),
               Asset("bootstrap-table", BOOTSTRAP_TABLE, "dist/bootstrap-table.min.css"))
SCRIPTS = (Asset("jquery", JQUERY, "dist/jquery.min.js"),
           Asset("bootstrap-table", BOOTSTRAP_TABLE, "dist/bootstrap-table.min.js"))
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self'")
# the pages of the Data Docs site a page's navbar links to when they exist: (label, path in the site)
NAV_PAGES = (("Data Docs", "index.html"), ("Readiness", "readiness/index.html"), ("Alerts", "alerts/index.html"),
             ("Histories", "history/index.html"))
SEVERITY_CLASSES = {"critical": "critical", "blocker": "critical", "error": "error", "high": "error",
                    "warning": "warning", "warn": "warning", "info": "info"}

# always: what Bootstrap leaves as it is (long values wrap, badges by severity, tables fit their page)
_COMMON = """
table.kza{width:100%;margin-bottom:.5rem;font-size:.9rem}
table.kza td,table.kza th,.bootstrap-table .fixed-table-container .table.kza td{vertical-align:top;text-align:left}
table.kza .kza-wrap{overflow-wrap:anywhere;min-width:8em}
table.kza code{overflow-wrap:normal;word-wrap:normal;word-break:normal}
.bootstrap-table .fixed-table-container .table thead th .th-inner{white-space:normal}
.bootstrap-table{margin-bottom:1.25rem}
.kza-nav .navbar-brand{font-weight:600}
.kza-sev{display:inline-block;padding:.25em .5em;border-radius:.25rem;font-size:80%;font-weight:600;
 line-height:1.2;white-space:nowrap}
.kza-sev-critical{background:#c62828;color:#fff}.kza-sev-error{background:#d84315;color:#fff}
.kza-sev-warning{background:#ef8f00;color:#212121}.kza-sev-info{background:#1565c0;color:#fff}
.kza-sev-other{background:#616161;color:#fff}
.kza-meta{color:#555}
h2.kza-section{font-size:1.35rem;margin-top:1.75rem;padding-bottom:.25rem;border-bottom:1px solid #dee2e6}
h3{font-size:1.1rem;margin-top:1.25rem}
"""
# without Bootstrap: a plain, readable page
_PLAIN = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#212529;line-height:1.45}
main{padding:16px 24px}
.kza-nav{display:flex;gap:16px;align-items:baseline;padding:10px 24px;background:#f8f9fa;
 border-bottom:1px solid #dee2e6}
.kza-nav ul{display:flex;gap:12px;list-style:none;margin:0;padding:0}
.kza-nav .navbar-brand{font-size:1.2em;color:#212529}
table.kza{border-collapse:collapse;font-size:.9em}
table.kza td,table.kza th{border:1px solid #dee2e6;padding:4px 8px}
table.kza thead th{background:#e9ecef}
table.kza tbody tr:nth-child(odd){background:#f8f9fa}
a{color:#0056b3}
"""


def esc(value: Any) -> str:
    """``value`` as HTML text (None as empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def severity_badge(severity: Any) -> str:
    """A badge coloured by severity (or readiness level)."""
    name = str(severity or "")
    return f'<span class="kza-sev kza-sev-{SEVERITY_CLASSES.get(name, "other")}">{esc(name)}</span>'


@dataclass(frozen=True)
class PageLinks:
    """Where a page finds the vendored assets (a relative URL ending in ``/``, or None: plain page) and the Data
    Docs pages its navbar links to (label, relative URL)."""

    vendor: str | None = None
    nav: tuple[tuple[str, str], ...] = ()


def _path_of(url: str) -> str:
    """The path part of a warehouse URL (``s3://b/wh/x`` → ``/b/wh/x``; a local path as it is)."""
    _, sep, rest = url.partition("://")
    return "/" + rest.lstrip("/") if sep else url


def relative_url(page: str, target: str) -> str:
    """``target``'s URL relative to the folder of ``page`` (both warehouse URLs or paths of one file system)."""
    return posixpath.relpath(_path_of(target), posixpath.dirname(_path_of(page)))


def links_for(warehouse: Warehouse, page: str) -> PageLinks:
    """The links of a page written at ``page``: the site's vendored assets when all of them are there, and the
    Data Docs pages that exist."""
    vendor_dir = f"{warehouse.data_docs_dir}/{VENDOR_DIR}"
    vendored = all(warehouse.exists(f"{vendor_dir}/{asset.rel}") for asset in (*STYLESHEETS, *SCRIPTS))
    nav = tuple((label, relative_url(page, f"{warehouse.data_docs_dir}/{path}")) for label, path in NAV_PAGES
                if warehouse.exists(f"{warehouse.data_docs_dir}/{path}"))
    return PageLinks(vendor=relative_url(page, vendor_dir) + "/" if vendored else None, nav=nav)


def cell(value: Any, *, wrap: bool = False, html_value: str | None = None) -> str:
    """A ``<td>`` of ``value`` escaped (or of ``html_value``, markup the caller built); ``wrap``: free text (a
    path, detail, key) that may break anywhere, so its table fits the page."""
    attrs = ' class="kza-wrap"' if wrap else ""
    return f"<td{attrs}>{esc(value) if html_value is None else html_value}</td>"


def table(columns: Sequence[str], rows: Iterable[str], *, css_class: str = "", search: bool = True) -> str:
    """A table that sorts by every column and (``search``) filters its rows, as the Data Docs' tables do;
    ``rows`` are ``<tr>…</tr>`` (see :func:`cell`)."""
    head = "".join(f'<th data-sortable="true">{esc(name)}</th>' for name in columns)
    toggle = ' data-toggle="table"' + (' data-search="true" data-search-align="left" data-icon-size="sm"'
                                       if search else "")
    return (f'<table class="table table-sm table-striped table-bordered table-hover kza {css_class}"{toggle}>'
            f'<thead class="thead-light"><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _nav(links: PageLinks) -> str:
    items = "".join(f'<li class="nav-item"><a class="nav-link" href="{esc(href)}">{esc(label)}</a></li>'
                    for label, href in links.nav)
    return (f'<nav class="navbar navbar-expand navbar-light bg-light border-bottom kza-nav">'
            f'<span class="navbar-brand">{PRODUCT}</span><ul class="navbar-nav mr-auto">{items}</ul></nav>')


def page(title: str, body: str, links: PageLinks | None = None, *, style: str = "") -> str:
    """A whole page: the navbar, ``title`` and ``body`` (HTML the caller escaped), with Bootstrap and
    bootstrap-table when ``links`` has the vendored assets, plain otherwise. ``style``: the page's own CSS."""
    links = links or PageLinks()
    head = ""
    scripts = ""
    if links.vendor is not None:
        head = "".join(f'<link rel="stylesheet" href="{esc(links.vendor)}{asset.rel}">' for asset in STYLESHEETS)
        scripts = "".join(f'<script src="{esc(links.vendor)}{asset.rel}"></script>' for asset in SCRIPTS)
    css = _COMMON + ("" if links.vendor is not None else _PLAIN) + style
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{esc(title)}</title>{head}<style>{css}</style></head>"
            f'<body>{_nav(links)}<main class="container-fluid px-4 py-3"><h1 class="h3">{esc(title)}</h1>'
            f"{body}</main>{scripts}</body></html>\n")
