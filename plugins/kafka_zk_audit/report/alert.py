"""The alert of a cluster's run, built from the warehouse and its alert lifecycle: subject, text, HTML, webhook JSON.

Pure message building, no delivery (that is :mod:`kafka_zk_audit.airflow.notifications`). It reads the snapshot's
findings Parquet with pyarrow, ``runs/<id>/audit.json`` and the snapshot manifest.

When to alert (per route): with ``alerts.only_new`` (the default), when a finding of the route's severities started
firing (it persisted past its ``for``) or resolved at this snapshot (``report.lifecycle``): a gate that keeps failing
on the same findings alerts once, and a fixed finding sends its resolve even when the gate passes. With
``only_new: false`` the route also gets the alert at every run while one of its findings fires or the gate fails.
"""

from __future__ import annotations

import html
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from kafka_zk_audit.contract.catalogue import BY_ID, SEVERITIES
from kafka_zk_audit.contract.settings import AlertRoute, AuditConfig
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.lifecycle import Lifecycle, describe_entry, describe_subject, format_duration_s

log = logging.getLogger(__name__)

SUBJECT_PREFIX = "[kafka-zk-audit]"
SEVERITY_RANK = {severity: rank for rank, severity in enumerate(SEVERITIES)}
# Slack limits: a section's text and a header's text.
SLACK_SECTION_CHARS = 3000
SLACK_HEADER_CHARS = 150
FINDING_FIELDS = ("check_id", "severity", "status", "topic", "partition", "group_id", "broker_id", "path",
                  "detail", "first_seen")
ENTRY_FIELDS = ("key", *FINDING_FIELDS, "since", "age_s", "for_s", "firing_since", "resolved_in", "lasted_s",
                "fired_s")


@dataclass(frozen=True)
class Alert:
    """One alert, ready for every channel. ``facts`` is the structured data all renderings share."""

    snapshot_id: str
    subject: str
    text: str
    html: str
    payload: dict[str, Any]
    facts: dict[str, Any] = field(repr=False)


def read_findings(warehouse: Warehouse, snapshot_id: str) -> list[dict[str, Any]]:
    """The findings rows of one snapshot (Spark's ``_SUCCESS`` and hidden files are ignored)."""
    directory = warehouse.findings_dir(snapshot_id)
    if not warehouse.exists(directory):
        raise FileNotFoundError(f"no findings for snapshot {snapshot_id} at {directory}: the audit did not write them")
    import pyarrow.dataset as pads  # here, not at import: the DAG file imports the alerts without pyarrow

    dataset = pads.dataset(warehouse.fs_path(directory), filesystem=warehouse.fs, format="parquet")
    return dataset.to_table().to_pylist()


def _read_optional_json(warehouse: Warehouse, path: str) -> dict[str, Any]:
    return warehouse.read_json(path) if warehouse.exists(path) else {}


def _severity_rank(severity: str | None) -> int:
    return SEVERITY_RANK.get(severity or "", len(SEVERITIES))


def _finding_order(finding: dict[str, Any]) -> tuple:
    """Worst first: severity, then new before ongoing, then by check and subject."""
    return (
        _severity_rank(finding.get("severity")),
        finding.get("status") != "new",
        finding.get("check_id") or "",
        finding.get("group_id") or "",
        finding.get("topic") or "",
        finding.get("partition") if finding.get("partition") is not None else -1,
        finding.get("broker_id") if finding.get("broker_id") is not None else -1,
        finding.get("path") or "",
    )


def _offender_of(finding: dict[str, Any]) -> tuple[str, str]:
    """Who a finding is about: its consumer group, else its topic, else its broker, else its znode."""
    if finding.get("group_id"):
        return "group", str(finding["group_id"])
    if finding.get("topic"):
        return "topic", str(finding["topic"])
    if finding.get("broker_id") is not None:
        return "broker", str(finding["broker_id"])
    return "znode", str(finding.get("path") or "?")


def describe_finding(finding: dict[str, Any]) -> str:
    """One line: ``[critical, new] offline_partition topic t partition 0 at /path: detail``."""
    subject = describe_subject(finding)
    return (f"[{finding.get('severity')}, {finding.get('status')}] {finding.get('check_id')}"
            f"{' ' + subject if subject else ''} at {finding.get('path')}: {finding.get('detail')}")


def top_offenders(findings: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Groups, topics, brokers or znodes with the worst findings, each with its worst finding."""
    by_offender: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for finding in findings:
        by_offender[_offender_of(finding)].append(finding)
    offenders = []
    for (kind, name), rows in by_offender.items():
        rows = sorted(rows, key=_finding_order)
        offenders.append({
            "kind": kind,
            "name": name,
            "findings": len(rows),
            "new": sum(row.get("status") == "new" for row in rows),
            "severities": dict(Counter(row.get("severity") for row in rows)),
            "checks": sorted({row.get("check_id") for row in rows}),
            "worst": _public_finding(rows[0]),
        })
    offenders.sort(key=lambda o: (_severity_rank(o["worst"]["severity"]), -o["new"], -o["findings"],
                                  o["kind"], o["name"]))
    return offenders[:limit]


def _public_finding(finding: dict[str, Any]) -> dict[str, Any]:
    return {name: finding.get(name) for name in FINDING_FIELDS}


def _check_counts(findings: list[dict[str, Any]], audit: dict[str, Any], cfg: AuditConfig) -> list[dict[str, Any]]:
    """Non-zero checks with severity, total (from audit.json when present) and new count, worst first."""
    totals = Counter(f.get("check_id") for f in findings)
    new = Counter(f.get("check_id") for f in findings if f.get("status") == "new")
    severity = {f.get("check_id"): f.get("severity") for f in findings}
    counts = {k: int(v) for k, v in (audit.get("checks") or totals).items() if v}
    rows = []
    for check_id, count in counts.items():
        default = cfg.severity_of(check_id) if check_id in BY_ID else "error"
        rows.append({"check_id": check_id, "severity": severity.get(check_id) or default,
                     "count": count, "new": new.get(check_id, 0)})
    rows.sort(key=lambda r: (_severity_rank(r["severity"]), -r["count"], r["check_id"]))
    return rows


def _data_docs_href(location: str) -> str:
    """A link for the Data Docs: URLs as they are, absolute local paths as ``file://`` URIs."""
    if "://" in location:
        return location
    return PurePosixPath(location).as_uri() if location.startswith("/") else location


def _gate_summary(verdict: dict[str, Any] | None) -> tuple[str, list[dict[str, Any]]]:
    if not verdict:
        return "the gate failed without a verdict (it did not finish validating)", []
    failed = [f for f in verdict.get("failed") or [] if f.get("gating", True)]
    names = ", ".join(f.get("label") or f"{f.get('check_id')} ({f.get('unexpected_count')})" for f in failed)
    line = f"{verdict.get('failed_expectations', len(failed))} gating expectation(s) failed"
    line += f": {names}" if names else ""
    if verdict.get("non_gating_failed_expectations"):
        line += f"; {verdict['non_gating_failed_expectations']} warning/info expectation(s) failed (not gating)"
    return line, failed


def _routed(lifecycle: Lifecycle, severities: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """The lifecycle's entries of the route's severities, worst first."""
    def pick(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted((e for e in entries if e.get("severity") in severities), key=_finding_order)

    return {"triggered": pick(lifecycle.triggered), "resolved": pick(lifecycle.resolved),
            "firing": pick(lifecycle.firing), "pending": pick(lifecycle.pending)}


def _public_entry(entry: dict[str, Any]) -> dict[str, Any]:
    return {name: entry.get(name) for name in ENTRY_FIELDS if name in entry}


def build_alert(
    warehouse: Warehouse | str,
    snapshot_id: str,
    cfg: AuditConfig,
    verdict: dict[str, Any] | None,
    lifecycle: Lifecycle,
    *,
    route: AlertRoute | None = None,
    run_url: str | None = None,
) -> Alert | None:
    """The alert of ``snapshot_id`` for one route (None: the gating severities), or None when the route has nothing
    to be told (reason logged).

    ``verdict`` is the snapshot's part of the gate's XCom ``verdict`` (None when the gate gave none: failed).
    Raises FileNotFoundError when the snapshot's findings are missing.
    """
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    gating = tuple(cfg.gate.gating_severities)
    severities = tuple(s for s in SEVERITIES if (route.takes(s, gating) if route else s in gating))
    label = "/".join(severities) or "gating"
    gate_failed = not (verdict and verdict.get("success"))
    routed = _routed(lifecycle, severities)
    triggered, resolved, firing = routed["triggered"], routed["resolved"], routed["firing"]
    if lifecycle.stale:
        log.info("snapshot %s: a later snapshot's alerts were sent already; no alert", snapshot_id)
        return None
    if not triggered and not resolved and (cfg.alerts.only_new or not (firing or gate_failed)):
        why = "alerts.only_new is true" if cfg.alerts.only_new else "nothing fires and the gate passed"
        log.info("snapshot %s: the gate %s, but no %s finding started firing or resolved since the previous run "
                 "(%d firing, %d pending); no alert sent (%s)", snapshot_id, "failed" if gate_failed else "passed",
                 label, len(firing), len(routed["pending"]), why)
        return None

    findings = read_findings(wh, snapshot_id)
    routed_findings = sorted((f for f in findings if f.get("severity") in severities), key=_finding_order)
    audit = _read_optional_json(wh, f"{wh.run_dir(snapshot_id)}/audit.json")
    manifest = _read_optional_json(wh, wh.manifest_path(snapshot_id))
    limit = cfg.alerts.top_offenders
    new_findings = sorted((f for f in findings if f.get("status") == "new"), key=_finding_order)
    gate_line, gate_failed_checks = _gate_summary(verdict) if gate_failed else ("passed", [])
    data_docs = (verdict or {}).get("data_docs") or wh.data_docs_index
    reasons = [f"{len(triggered)} {label} finding(s) started firing"] if triggered else []
    reasons += [f"{len(resolved)} resolved"] if resolved else []
    reason = ", ".join(reasons) or f"{len(firing)} {label} finding(s) still firing (alerts.only_new is off)"
    facts: dict[str, Any] = {
        "snapshot_id": snapshot_id,
        "baseline_snapshot_id": audit.get("baseline_snapshot_id"),
        "cluster": _cluster(manifest),
        "cluster_name": lifecycle.cluster,
        "snapshot_started_at": manifest.get("started_at"),
        "reason": reason,
        "severities": list(severities),
        "gate": {
            "success": not gate_failed,
            "summary": gate_line,
            "failed_expectations": (verdict or {}).get("failed_expectations"),
            "non_gating_failed_expectations": (verdict or {}).get("non_gating_failed_expectations"),
            "failed_checks": [{k: f.get(k) for k in ("check_id", "severity", "unexpected_count", "label")}
                              for f in gate_failed_checks],
        },
        "totals": {
            "findings": int(audit.get("findings", len(findings))),
            "gating_findings": len(routed_findings),
            "new_findings": int(audit.get("new_findings", len(new_findings))),
            "new_gating_findings": sum(f.get("status") == "new" for f in routed_findings),
            "resolved_findings": audit.get("resolved_findings"),
            "suppressed_findings": audit.get("suppressed_findings"),
            "firing": len(firing), "pending": len(routed["pending"]), "started_firing": len(triggered),
            "resolved_alerts": len(resolved),
        },
        "checks": _check_counts(findings, audit, cfg),
        "new_findings": [_public_finding(f) for f in new_findings[:limit]],
        "new_findings_not_listed": max(0, len(new_findings) - limit),
        "started_firing": [_public_entry(e) for e in triggered[:limit]],
        "started_firing_not_listed": max(0, len(triggered) - limit),
        "resolved": [_public_entry(e) for e in resolved[:limit]],
        "resolved_not_listed": max(0, len(resolved) - limit),
        "pending": [_public_entry(e) for e in routed["pending"][:limit]],
        "top_offenders": top_offenders(routed_findings, limit),
        "gating_severities": list(severities),
        "data_docs": data_docs,
        "data_docs_href": _data_docs_href(data_docs),
        "run_url": run_url,
    }
    subject = _subject(facts, triggered, resolved, label)
    text = render_text(facts)
    return Alert(snapshot_id=snapshot_id, subject=subject, text=text, html=render_html(facts, subject),
                 payload=render_webhook(facts, subject, text), facts=facts)


def _cluster(manifest: dict[str, Any]) -> str | None:
    if manifest.get("cluster"):
        return f"{manifest['cluster']} ({manifest.get('ensemble')}{manifest.get('chroot') or ''})"
    if not manifest.get("ensemble"):
        return None
    chroot = manifest.get("chroot") or "/"
    return manifest["ensemble"] + ("" if chroot == "/" else chroot)


def _checks_of(entries: list[dict[str, Any]]) -> str:
    checks = list(dict.fromkeys(e["check_id"] for e in entries))
    return ", ".join(checks[:3]) + (", …" if len(checks) > 3 else "")


def _subject(facts: dict[str, Any], triggered: list[dict[str, Any]], resolved: list[dict[str, Any]],
             label: str) -> str:
    if triggered:
        what = f"{len(triggered)} {label} finding(s) started firing: {_checks_of(triggered)}"
        what += f"; {len(resolved)} resolved" if resolved else ""
    elif resolved:
        what = f"{len(resolved)} {label} finding(s) resolved: {_checks_of(resolved)}"
    else:
        what = f"{facts['totals']['firing']} {label} finding(s) firing, none started now"
    gate = "gate FAILED for snapshot" if not facts["gate"]["success"] else "gate passed for snapshot"
    return f"{SUBJECT_PREFIX} {gate} {facts['snapshot_id']}: {what}"


def _headline(facts: dict[str, Any]) -> list[str]:
    totals = facts["totals"]
    baseline = facts["baseline_snapshot_id"]
    verdict = "FAILED" if not facts["gate"]["success"] else "passed"
    lines = [f"Kafka ZooKeeper audit: gate {verdict} for snapshot {facts['snapshot_id']}"]
    if facts["cluster"]:
        lines.append(f"Cluster: {facts['cluster']}")
    lines.append(f"Why this alert: {facts['reason']}.")
    lines.append(f"Gate: {facts['gate']['summary']}.")
    since = f"since {baseline}" if baseline else "(first audited snapshot, no baseline)"
    resolved = totals["resolved_findings"]
    lines.append(f"Findings: {totals['findings']} in total ({totals['gating_findings']} gating), "
                 f"{totals['new_findings']} new" + (f", {resolved} resolved" if resolved is not None else "")
                 + f" {since}.")
    lines.append(f"Alerts ({'/'.join(facts['severities'])}): {totals['started_firing']} started firing, "
                 f"{totals['resolved_alerts']} resolved, {totals['firing']} firing, {totals['pending']} pending.")
    return lines


def _transition_lines(facts: dict[str, Any]) -> dict[str, list[str]]:
    """The started-firing and resolved findings, one line each with its key and durations."""
    started = [f"{describe_entry(e)}, first seen {format_duration_s(e['age_s'])} ago" for e in facts["started_firing"]]
    if facts["started_firing_not_listed"]:
        started.append(f"… and {facts['started_firing_not_listed']} more")
    resolved = [f"{describe_entry(e)}, after {format_duration_s(e['lasted_s'])} ({format_duration_s(e['fired_s'])} "
                "firing)" for e in facts["resolved"]]
    if facts["resolved_not_listed"]:
        resolved.append(f"… and {facts['resolved_not_listed']} more")
    return {f"Started firing ({facts['totals']['started_firing']})": started,
            f"Resolved ({facts['totals']['resolved_alerts']})": resolved}


def render_text(facts: dict[str, Any]) -> str:
    """The plain-text alert (e-mail readers, webhook ``text``, logs)."""
    lines = _headline(facts)
    for title, entries in _transition_lines(facts).items():
        if entries:
            lines += ["", f"{title}:", *(f"  - {entry}" for entry in entries)]
    lines += ["", "Findings per check (total / new):"]
    width = max((len(r["check_id"]) for r in facts["checks"]), default=0)
    lines += [f"  {r['severity']:<8} {r['check_id']:<{width}}  {r['count']} / {r['new']}" for r in facts["checks"]]
    if not facts["checks"]:
        lines.append("  none")
    lines += ["", f"New since the previous run ({facts['totals']['new_findings']}):"]
    lines += [f"  - {describe_finding(f)}" for f in facts["new_findings"]]
    if facts["new_findings_not_listed"]:
        lines.append(f"  … and {facts['new_findings_not_listed']} more")
    if not facts["new_findings"] and not facts["new_findings_not_listed"]:
        lines.append("  none")
    if facts["top_offenders"]:
        lines += ["", f"Top offenders ({'/'.join(facts['gating_severities'])}):"]
        for rank, offender in enumerate(facts["top_offenders"], 1):
            lines.append(f"  {rank}. {_offender_line(offender)}")
            lines.append(f"     worst: {describe_finding(offender['worst'])}")
    lines += ["", f"Data Docs: {facts['data_docs']}"]
    if facts["run_url"]:
        lines.append(f"Airflow: {facts['run_url']}")
    return "\n".join(lines)


def _offender_line(offender: dict[str, Any]) -> str:
    severities = ", ".join(f"{s} {offender['severities'][s]}"
                           for s in sorted(offender["severities"], key=_severity_rank))
    return (f"{offender['kind']} {offender['name']}: {offender['findings']} finding(s), {offender['new']} new "
            f"({severities}); checks: {', '.join(offender['checks'])}")


def render_html(facts: dict[str, Any], subject: str) -> str:
    """The HTML e-mail body: the same content as the text, as tables."""
    e = html.escape
    parts = [f"<html><head><meta charset='utf-8'><title>{e(subject)}</title></head>"
             "<body style='font-family: sans-serif'>"]
    headline = _headline(facts)
    parts.append(f"<h2>{e(headline[0])}</h2>")
    parts += [f"<p>{e(line)}</p>" for line in headline[1:]]

    for title, entries in _transition_lines(facts).items():
        if entries:
            parts.append(f"<h3>{e(title)}</h3><ul>" + "".join(f"<li>{e(entry)}</li>" for entry in entries) + "</ul>")
    parts.append("<h3>Findings per check</h3>")
    parts.append(_html_table(("severity", "check", "total", "new"),
                             [(r["severity"], r["check_id"], r["count"], r["new"]) for r in facts["checks"]]))

    parts.append(f"<h3>New since the previous run ({facts['totals']['new_findings']})</h3>")
    parts.append(_html_table(
        ("severity", "check", "topic", "partition", "group", "broker", "path", "detail"),
        [(f["severity"], f["check_id"], f["topic"], f["partition"], f["group_id"], f["broker_id"], f["path"],
          f["detail"]) for f in facts["new_findings"]],
    ))
    if facts["new_findings_not_listed"]:
        parts.append(f"<p>… and {facts['new_findings_not_listed']} more</p>")

    if facts["top_offenders"]:
        parts.append(f"<h3>Top offenders ({e('/'.join(facts['gating_severities']))})</h3>")
        rows = []
        for offender in facts["top_offenders"]:
            worst = offender["worst"]
            rows.append((f"{offender['kind']} {offender['name']}", offender["findings"], offender["new"],
                         ", ".join(offender["checks"]),
                         f"{worst['severity']} {worst['check_id']} {describe_subject(worst)}".strip(),
                         worst["path"], worst["detail"]))
        parts.append(_html_table(("offender", "findings", "new", "checks", "worst finding", "path", "detail"), rows))

    href = facts["data_docs_href"]
    parts.append(f"<p>Data Docs: <a href=\"{e(href)}\">{e(facts['data_docs'])}</a></p>")
    if facts["run_url"]:
        parts.append(f"<p>Airflow: <a href=\"{e(facts['run_url'])}\">{e(facts['run_url'])}</a></p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _html_table(header: tuple[str, ...], rows: list[tuple]) -> str:
    if not rows:
        return "<p>none</p>"
    e = html.escape
    cell = "style='border: 1px solid #ccc; padding: 2px 6px'"
    head = "".join(f"<th {cell}>{e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td {cell}>{'' if v is None else e(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table style='border-collapse: collapse'><tr>{head}</tr>{body}</table>"


def _mrkdwn(text: str) -> str:
    """Escape the three characters Slack's mrkdwn reserves."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _code_section(title: str, lines: list[str]) -> dict[str, Any]:
    body = "\n".join(lines) or "none"
    fence = "```"
    budget = SLACK_SECTION_CHARS - len(title) - 2 * len(fence) - 3
    return {"type": "section", "text": {"type": "mrkdwn",
                                        "text": f"*{title}*\n{fence}{_clip(_mrkdwn(body), budget)}{fence}"}}


def render_webhook(facts: dict[str, Any], subject: str, text: str) -> dict[str, Any]:
    """Slack-compatible JSON: ``text`` (the whole plain-text alert), ``blocks``, and the structured facts."""
    width = max((len(r["check_id"]) for r in facts["checks"]), default=0)
    counts = [f"{r['severity']:<8} {r['check_id']:<{width}}  {r['count']} / {r['new']}" for r in facts["checks"]]
    new = [describe_finding(f) for f in facts["new_findings"]]
    if facts["new_findings_not_listed"]:
        new.append(f"… and {facts['new_findings_not_listed']} more")
    offenders = []
    for rank, offender in enumerate(facts["top_offenders"], 1):
        offenders += [f"{rank}. {_offender_line(offender)}", f"   worst: {describe_finding(offender['worst'])}"]
    href = facts["data_docs_href"]
    docs = f"<{href}|Data Docs>" if href.startswith(("http://", "https://")) else f"Data Docs: `{_mrkdwn(href)}`"
    context = [docs, f"snapshot `{facts['snapshot_id']}`"]
    if facts["run_url"]:
        context.append(f"<{facts['run_url']}|Airflow>")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(subject, SLACK_HEADER_CHARS)}},
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": _clip(_mrkdwn("\n".join(_headline(facts)[1:])), SLACK_SECTION_CHARS)}},
        *(_code_section(title, entries) for title, entries in _transition_lines(facts).items() if entries),
        _code_section("Findings per check (total / new)", counts),
        _code_section(f"New since the previous run ({facts['totals']['new_findings']})", new),
    ]
    if offenders:
        blocks.append(_code_section(f"Top offenders ({'/'.join(facts['gating_severities'])})", offenders))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": item} for item in context]})
    return {"text": text, "blocks": blocks, "kafka_zk_audit": facts}
