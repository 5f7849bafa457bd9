"""The readiness page's last chapter of a cluster paired with its KRaft log: the migration verdict.

``migration_verification`` of ``readiness.json`` (``audit.paired.verification_chapter``): *migration verified* with N
topics, M partitions, K configs, A ACLs, Q quotas and S users equal; or *migration DIVERGED*, the divergences listed
first (most severe first, each with both sides' evidence and its remedy); or *not verified* and why. Every value is
untrusted data: HTML escapes all of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_zk_audit.contract.remedies import REMEDIES
from kafka_zk_audit.report.page_style import cell, esc, table

HEADING = "Migration verified against the KRaft log"
STATUS_LABELS = {"verified": "MIGRATION VERIFIED", "diverged": "MIGRATION DIVERGED", "unverified": "NOT VERIFIED"}
STATUS_COLOURS = {"verified": "#2e7d32", "diverged": "#c62828", "unverified": "#616161"}


def chapter_of(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The report's verification chapter, None for a cluster that is not paired."""
    chapter = report.get("migration_verification")
    return chapter if isinstance(chapter, Mapping) else None


def status_of(report: Mapping[str, Any]) -> str | None:
    """``verified``, ``diverged`` or ``unverified``; None without a chapter."""
    chapter = chapter_of(report)
    return None if chapter is None else str(chapter.get("status") or "unverified")


def equal_line(chapter: Mapping[str, Any]) -> str:
    """``4 topics, 12 partitions, 3 configs, 0 ACLs, 0 quotas and 1 users equal``."""
    equal = chapter.get("equal") or {}
    parts = [f"{equal.get(label, 0)} {label}" for label in ("topics", "partitions", "configs", "ACLs", "quotas")]
    return f"{', '.join(parts)} and {equal.get('users', 0)} users equal"


def where_line(chapter: Mapping[str, Any]) -> str:
    """Where the comparison stood: release, offset, log end and lag."""
    at = f"offset {chapter['offset']}" if chapter.get("offset") is not None else "the log's end"
    lag = ""
    if chapter.get("lag_records") is not None:
        lag = (f"; ZooKeeper trails the log's end ({chapter.get('log_end_offset')}) by {chapter['lag_records']} "
               f"record(s), {(chapter.get('lag_ms') or 0) / 1000:.1f}s (limits {chapter.get('max_lag_records')}, "
               f"{(chapter.get('max_lag_ms') or 0) / 1000:.0f}s)")
    return f"compared at {at}, Kafka {chapter.get('release')} mapping rules{lag}"


def text_lines(report: Mapping[str, Any]) -> list[str]:
    """The chapter for a shell (no line without a chapter)."""
    chapter = chapter_of(report)
    if chapter is None:
        return []
    status = status_of(report) or "unverified"
    if status == "unverified":
        return [f"{STATUS_LABELS[status]}: {chapter.get('error')}"]
    lines = [f"{STATUS_LABELS[status]} ({len(chapter.get('divergences') or ())} divergence(s)): "
             f"{equal_line(chapter)}; {where_line(chapter)}"]
    for divergence in chapter.get("divergences") or ():
        lines.append(f"  - [{divergence.get('severity')}] {divergence.get('check_id')} at "
                     f"{divergence.get('path') or divergence.get('topic') or '?'}: {divergence.get('detail')}")
    return lines


def render_chapter(report: Mapping[str, Any]) -> str:
    """The chapter as HTML: the verdict badge, the divergences first, then what is equal and where it stood."""
    chapter = chapter_of(report)
    if chapter is None:
        return ""
    status = status_of(report) or "unverified"
    badge = (f'<span class="kza-verdict verification-{esc(status)}" style="background:{STATUS_COLOURS[status]}">'
             f"{esc(STATUS_LABELS[status])}</span>")
    parts = [f'<section class="migration-verification"><h3>{esc(HEADING)}</h3><p>{badge}</p>']
    if status == "unverified":
        parts.append(f'<p class="error">{esc(chapter.get("error"))}</p></section>')
        return "".join(parts)
    divergences = chapter.get("divergences") or []
    if divergences:
        body = ["<tr>" + cell(d.get("severity")) + cell(d.get("check_id"), html_value=f"<code>{esc(d.get('check_id'))}"
                                                         "</code>")
                + cell(d.get("topic"), wrap=True) + cell(d.get("partition")) + cell(d.get("path"), wrap=True)
                + cell(d.get("detail"), wrap=True)
                + '<td class="kza-wrap remedy">' + esc(REMEDIES.get(str(d.get("check_id")), "")) + "</td></tr>"
                for d in divergences]
        parts.append(f"<h4>Divergences ({len(divergences)})</h4>"
                     + table(("severity", "check", "topic", "partition", "path", "evidence", "remedy"), body,
                             css_class="divergences"))
    parts.append(f'<p class="equal">{esc(equal_line(chapter))}</p><p class="kza-meta">{esc(where_line(chapter))}</p>')
    parts += [f'<p class="kza-meta">{esc(note)}</p>' for note in chapter.get("notes") or ()]
    parts.append("</section>")
    return "".join(parts)
