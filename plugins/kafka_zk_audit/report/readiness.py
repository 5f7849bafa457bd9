"""The KRaft migration readiness report: ``runs/<id>/readiness.json`` rendered as text and as HTML pages.

The audit job writes one ``readiness.json`` per snapshot (verdict, phase, rows ordered blocker → info, the
node ids the controllers must not reuse, and the checklist of what ZooKeeper cannot show). This module only
renders it: ``render_text`` for a shell, ``render_html`` for ``<warehouse>/readiness/index.html`` (the fleet)
and ``<warehouse>/readiness/<cluster>.html`` (one cluster), with the Data Docs' look
(:mod:`kafka_zk_audit.report.page_style`). Every value of a report is untrusted data
(cluster names, znode paths, details): HTML escapes all of it, text replaces control characters.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_zk_audit.contract import readiness as contract
from kafka_zk_audit.contract.readiness import LEVEL_RANK, LEVELS, NOT_VISIBLE, SUBJECT_COLUMNS
from kafka_zk_audit.contract.warehouse import Warehouse, validate_snapshot_id
from kafka_zk_audit.report import alert, verification
from kafka_zk_audit.report.data_docs import link_at_top
from kafka_zk_audit.report.page_style import PageLinks, cell, esc, links_for, page, table

log = logging.getLogger(__name__)

LEVEL_HEADINGS = {
    "blocker": "Blockers: fix these before migrating",
    "high": "High: fix before migrating, or know the risk",
    "warn": "Warnings",
    "info": "Information",
}
VERDICT_LABELS = {"blocked": "BLOCKED", "ready_with_warnings": "READY WITH WARNINGS", "ready": "READY"}
VERDICT_COLOURS = {"blocked": "#c62828", "ready_with_warnings": "#ef8f00", "ready": "#2e7d32"}
UNKNOWN_COLOUR = "#616161"
NOT_VISIBLE_HEADING = "ZooKeeper cannot show these: check them yourself"
NODE_IDS_HEADING = "Node ids the KRaft controllers must not reuse (R14)"
READINESS_DIR = "readiness"
FLEET_PAGE = "index"
DEFAULT_CLUSTER = "default"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


# -- report fields, read defensively (a report is data, not code) --------------------------------
def cluster_name(report: Mapping[str, Any]) -> str:
    """The report's cluster, ``default`` when the manifest named none."""
    return str(report.get("cluster") or DEFAULT_CLUSTER)


def sorted_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's rows, worst level first (stable: the job's order within a level is kept)."""
    rows = [row for row in report.get("rows") or [] if isinstance(row, Mapping)]
    return sorted(rows, key=lambda row: LEVEL_RANK.get(str(row.get("level")), len(LEVELS)))


def level_counts(report: Mapping[str, Any]) -> dict[str, int]:
    """Rows per level, counted from the rows themselves."""
    rows = sorted_rows(report)
    return {level: sum(row.get("level") == level for row in rows) for level in LEVELS}


def verdict_of(report: Mapping[str, Any]) -> str:
    """The report's verdict; derived from its rows when it carries none."""
    given = report.get("verdict")
    return str(given) if given else contract.verdict(row.get("level") for row in sorted_rows(report))


def _phase(report: Mapping[str, Any]) -> tuple[str, str]:
    phase = report.get("phase") or {}
    if not isinstance(phase, Mapping):
        return str(phase), ""
    return str(phase.get("phase") or contract.UNKNOWN_PHASE), str(phase.get("detail") or "")


def migration_running(report: Mapping[str, Any]) -> bool:
    """True when ZooKeeper shows a migration under way (or a trace of one): any phase but ``not_started``."""
    return _phase(report)[0] != contract.NOT_STARTED


def _node_ids(report: Mapping[str, Any]) -> list[str]:
    return [str(node_id) for node_id in report.get("node_ids") or []]


def _checklist(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """What ZooKeeper cannot show: the report's list, else the contract's (a report written without one)."""
    items = report.get("not_visible")
    if items is None:
        items = [dataclasses.asdict(item) for item in NOT_VISIBLE]
    return [{key: str(item.get(key) or "") for key in ("item", "why", "how")}
            for item in items if isinstance(item, Mapping)]


def describe_subject(row: Mapping[str, Any]) -> str:
    """``topic t partition 0 broker 3 at /brokers/topics/t``: the subject columns that are set, and the znode."""
    return " ".join(part for part in (alert.describe_subject(dict(row)),
                                      f"at {row['path']}" if row.get("path") else "") if part)


# -- text -----------------------------------------------------------------------------------------
def _plain(value: Any) -> str:
    """A value safe to print on a terminal: control characters (escape sequences) shown as ``\\xNN``."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", str(value))


def verdict_line(report: Mapping[str, Any]) -> str:
    """``cluster eu (snapshot …): BLOCKED for a migration with Kafka 3.9 — 2 blocker(s), 0 high, 1 warn, 0 info``."""
    verdict = verdict_of(report)
    counts = level_counts(report)
    tally = ", ".join(f"{counts[level]} {level}" if level != "blocker" else f"{counts[level]} blocker(s)"
                      for level in LEVELS)
    return (f"cluster {cluster_name(report)} (snapshot {report.get('snapshot_id', '?')}): "
            f"{VERDICT_LABELS.get(verdict, verdict.upper())} for a ZooKeeper to KRaft migration with Kafka "
            f"{report.get('target_version', '?')}: {tally}")


def render_text(report: Mapping[str, Any]) -> str:
    """The report for a shell: verdict first, then the rows by level with their remedies, the phase of a
    running migration, the R14 node ids and what ZooKeeper cannot show."""
    lines = [verdict_line(report)]
    rows = sorted_rows(report)
    for level in LEVELS:
        of_level = [row for row in rows if row.get("level") == level]
        if not of_level:
            continue
        lines.append(f"{LEVEL_HEADINGS[level]} ({len(of_level)}):")
        for row in of_level:
            subject = describe_subject(row)
            lines.append(f"  - [{row.get('condition_id') or '?'}] {row.get('check_id')}"
                         f"{' ' + subject if subject else ''}: {row.get('detail') or ''}")
            if row.get("remedy"):
                lines.append(f"      remedy: {row['remedy']}")
    if not rows:
        lines.append("no readiness condition found in ZooKeeper")
    if migration_running(report):
        phase, detail = _phase(report)
        lines.append(f"migration phase: {phase}{': ' + detail if detail else ''}")
    node_ids = _node_ids(report)
    lines.append(f"{NODE_IDS_HEADING}: {', '.join(node_ids) if node_ids else 'none'}")
    checklist = _checklist(report)
    if checklist:
        lines.append(f"{NOT_VISIBLE_HEADING}:")
        for item in checklist:
            lines.append(f"  [ ] {item['item']}" + (f": {item['why']}" if item["why"] else ""))
            if item["how"]:
                lines.append(f"      how: {item['how']}")
    lines += verification.text_lines(report)
    return "\n".join(_plain(line) for line in lines)


# -- HTML -----------------------------------------------------------------------------------------
_e = esc

_STYLE = """
.kza-verdict{display:inline-block;min-width:12em;padding:8px 16px;border-radius:4px;color:#fff;font-weight:bold;
 text-align:center;font-size:1rem}
table.overview .kza-verdict{min-width:10em;padding:4px 12px}
.bootstrap-table .fixed-table-container .table.overview td,table.overview td{vertical-align:middle}
.level-blocker h3{color:#c62828}.level-high h3{color:#d84315}.level-warn h3{color:#b36b00}
table.kza td.remedy{background:#fffde7}
section.cluster{margin-bottom:2rem}
"""


def _badge(verdict: str) -> str:
    colour = VERDICT_COLOURS.get(verdict, UNKNOWN_COLOUR)
    return (f'<span class="kza-verdict verdict-{_e(verdict)}" style="background:{colour}">'
            f"{_e(VERDICT_LABELS.get(verdict, verdict.upper()))}</span>")


def _anchor(index: int) -> str:
    """The id of a cluster's section: its position, never its (untrusted) name."""
    return f"cluster-{index}"


def _overview(reports: list[Mapping[str, Any]]) -> str:
    rows = []
    paired = any(verification.chapter_of(report) is not None for report in reports)
    for index, report in enumerate(reports):
        phase, _ = _phase(report)
        rows.append(
            "<tr>" + cell(cluster_name(report), wrap=True,
                          html_value=f'<a href="#{_anchor(index)}">{_e(cluster_name(report))}</a>')
            + cell(report.get("target_version")) + cell(verdict_of(report), html_value=_badge(verdict_of(report)))
            + cell(level_counts(report)["blocker"]) + cell(phase)
            + (cell(verification.status_of(report) or "") if paired else "") + "</tr>")
    headings = ("cluster", "target", "verdict", "blockers", "migration phase", *(("migration diff",) if paired else ()))
    return table(headings, rows, css_class="overview", search=len(reports) > 1)


def _rows_table(level: str, rows: list[Mapping[str, Any]]) -> str:
    """The rows of one level; of the subject columns, those any row sets."""
    subjects = [column for column in SUBJECT_COLUMNS if any(row.get(column) not in (None, "") for row in rows)]
    body = []
    for row in rows:
        cells = [cell(row.get("condition_id")),
                 cell(row.get("check_id"), html_value=f"<code>{_e(row.get('check_id'))}</code>")]
        cells += [cell(row.get(column), wrap=column in ("path", "group_id", "topic")) for column in subjects]
        cells += [cell(row.get("detail"), wrap=True), '<td class="kza-wrap remedy">' + _e(row.get("remedy")) + "</td>"]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<section class="level level-{level}"><h3>{_e(LEVEL_HEADINGS[level])} ({len(rows)})</h3>'
            + table(("condition", "check", *subjects, "detail", "remedy"), body, css_class="rows") + "</section>")


def _cluster_section(index: int, report: Mapping[str, Any]) -> str:
    verdict = verdict_of(report)
    parts = [
        f'<section class="cluster" id="{_anchor(index)}"><h2 class="kza-section">{_e(cluster_name(report))}</h2>',
        f"<p>{_badge(verdict)}</p>",
        f'<p class="meta kza-meta">target Kafka {_e(report.get("target_version"))}; snapshot '
        f'<code>{_e(report.get("snapshot_id"))}</code>; generated {_e(report.get("generated_at"))}</p>',
    ]
    rows = sorted_rows(report)
    for level in LEVELS:
        of_level = [row for row in rows if row.get("level") == level]
        if of_level:
            parts.append(_rows_table(level, of_level))
    if not rows:
        parts.append("<p>No readiness condition found in ZooKeeper.</p>")
    phase, detail = _phase(report)
    parts.append(f'<h3>Migration phase</h3><p class="phase"><b>{_e(phase)}</b>{": " + _e(detail) if detail else ""}'
                 "</p>")
    node_ids = _node_ids(report)
    parts.append(f"<h3>{_e(NODE_IDS_HEADING)}</h3><p class=\"node-ids\">"
                 f"{_e(', '.join(node_ids)) if node_ids else 'none'}</p>")
    checklist = _checklist(report)
    if checklist:
        items = "".join(f"<li><b>{_e(i['item'])}</b>{': ' + _e(i['why']) if i['why'] else ''}"
                        f"{'<br>how: ' + _e(i['how']) if i['how'] else ''}</li>" for i in checklist)
        parts.append(f'<section class="not-visible"><h3>{_e(NOT_VISIBLE_HEADING)}</h3><ul>{items}</ul></section>')
    parts.append(verification.render_chapter(report))  # the last chapter: a paired cluster's migration verdict
    parts.append("</section>")
    return "".join(parts)


def render_html(reports: Iterable[Mapping[str, Any]], links: PageLinks | None = None) -> str:
    """One page: a fleet overview table, then one section per cluster with its verdict badge, its rows (blockers
    first, with remedies), phase, node ids and the checklist of what ZooKeeper cannot show. With ``links`` to the
    vendored assets it has the Data Docs' look and its tables sort and filter; without, it is self-contained
    (inline style, no script, no external asset)."""
    reports = list(reports)
    title = ("KRaft migration readiness: " + cluster_name(reports[0]) if len(reports) == 1
             else f"KRaft migration readiness: {len(reports)} cluster(s)")
    sections = "".join(_cluster_section(index, report) for index, report in enumerate(reports))
    body = _overview(reports) + sections if reports else "<p>No readiness report.</p>"
    return page(title, body, links, style=_STYLE)


# -- warehouse ------------------------------------------------------------------------------------
def readiness_json_path(warehouse: Warehouse, snapshot_id: str) -> str:
    return f"{warehouse.run_dir(snapshot_id)}/readiness.json"


def page_name(cluster: str, taken: set[str] | None = None) -> str:
    """A file name for a cluster's page: unsafe characters replaced, never the fleet page's, unique in ``taken``."""
    name = _UNSAFE_FILE_CHARS.sub("_", cluster).strip(".") or DEFAULT_CLUSTER
    if name == FLEET_PAGE:
        name = f"cluster-{name}"
    taken = taken if taken is not None else set()
    unique, counter = name, 1
    while unique in taken:
        counter += 1
        unique = f"{name}-{counter}"
    taken.add(unique)
    return unique


def write_pages(warehouse: Warehouse, reports: Iterable[Mapping[str, Any]], under: str | None = None) -> list[str]:
    """Write ``readiness/index.html`` (every report) and ``readiness/<cluster>.html`` (each one) under the
    warehouse root (or the folder URL ``under``); their URLs, the fleet page first."""
    reports = list(reports)
    base = f"{under or warehouse.root}/{READINESS_DIR}"
    written = [f"{base}/{FLEET_PAGE}.html"]
    links = links_for(warehouse, written[0])  # the same for every page of the folder
    warehouse.write_text(written[0], render_html(reports, links))
    taken: set[str] = set()
    for report in reports:
        url = f"{base}/{page_name(cluster_name(report), taken)}.html"
        warehouse.write_text(url, render_html([report], links))
        written.append(url)
    return written


def load_reports(warehouse: Warehouse, snapshot_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The ``readiness.json`` of each snapshot, in the order given; a snapshot without one (readiness off, or
    its audit failed) is logged and left out."""
    reports = []
    for snapshot_id in snapshot_ids:
        path = readiness_json_path(warehouse, validate_snapshot_id(snapshot_id))
        if not warehouse.exists(path):
            log.warning("snapshot %s has no readiness report (%s): its audit did not compute one", snapshot_id, path)
            continue
        reports.append(warehouse.read_json(path))
    return reports


DATA_DOCS_LINK_ID = "kafka-zk-audit-readiness"


def publish_in_data_docs(warehouse: Warehouse, reports: Iterable[Mapping[str, Any]]) -> list[str]:
    """The readiness pages inside the Data Docs site too (``<data_docs>/readiness/``), with a link to them at the
    top of the site's index page (added once; the gate rebuilds the index every run). Returns the pages' URLs."""
    reports = list(reports)
    pages = write_pages(warehouse, reports, under=warehouse.data_docs_dir)
    verdicts = ", ".join(f"{cluster_name(r)} {verdict_of(r)}" for r in reports)
    link_at_top(warehouse, DATA_DOCS_LINK_ID, f"{READINESS_DIR}/{FLEET_PAGE}.html",
                "ZooKeeper \u2192 KRaft migration readiness", f" (verdicts: {verdicts})")
    return pages
