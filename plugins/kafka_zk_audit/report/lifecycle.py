"""The alert lifecycle of one cluster: which findings are pending, firing or resolved, and which transitions to send.

Pure: the findings of one audited snapshot, the ``for`` of each check and the cluster's previous alert state in,
a :class:`Lifecycle` out; the caller delivers its transitions and writes :func:`next_state`
(``alerts/<cluster>/state.json``).

A finding (``new`` or ``ongoing``; explained findings never alert) is known across runs by its dedup key, derived
from the cluster and the finding's identity (``contract.catalogue.FINDING_IDENTITY``). It is *pending* while its
first observation (``first_seen``: the first snapshot of its unbroken series) is younger than its check's ``for``,
then *firing*. The run where it starts firing sends a *trigger*; the first run where a firing finding is gone (fixed,
suppressed or explained) sends a *resolve* with the same key. A finding that heals while pending sends nothing, and
one that fired stays firing while it is reported, even if ``for`` grows meanwhile. Durations are measured between the
snapshots' start times (the ids' UTC prefix), so a run's verdict does not depend on when it is computed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kafka_zk_audit.contract.catalogue import FINDING_IDENTITY, FINDING_SUBJECT

STATE_VERSION = 1
ALERTING_STATUSES = ("new", "ongoing")
KEY_PREFIX = "kafka-zk-audit"
ENTRY_FIELDS = ("check_id", "severity", *FINDING_SUBJECT, "detail", "first_seen", "status")


def dedup_key(cluster: str, finding: Mapping[str, Any]) -> str:
    """The finding's stable key: ``kafka-zk-audit:<cluster>:<check_id>:<hash of cluster and identity>``; the same
    in every run while its identity is the same (at most 255 characters, as PagerDuty takes them)."""
    identity = [cluster, *(finding.get(column) for column in FINDING_IDENTITY)]
    digest = hashlib.sha256(json.dumps(identity, separators=(",", ":")).encode()).hexdigest()[:20]
    return f"{KEY_PREFIX}:{cluster[:120]}:{finding.get('check_id')}:{digest}"


def snapshot_time(snapshot_id: str) -> datetime:
    """A snapshot's start, the UTC time its id begins with (``YYYYMMDDTHHMMSSZ``)."""
    return datetime.strptime(snapshot_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _seconds(delta: timedelta) -> int:
    return max(0, int(delta.total_seconds()))


@dataclass(frozen=True)
class Lifecycle:
    """One cluster's alerts at one snapshot. Each entry is a finding's fields plus ``key``, ``since`` (its first
    observation), ``age_s``, ``for_s``; firing ones have ``firing_since``, pending ones ``fires_in_s``, resolved ones
    ``resolved_in``, ``lasted_s`` and ``fired_s``. ``stale``: a later snapshot's lifecycle is already in the state
    (nothing to send, the state stays)."""

    cluster: str
    snapshot_id: str
    firing: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    healed_while_pending: list[dict[str, Any]] = field(default_factory=list)
    stale: bool = False

    @property
    def triggered(self) -> list[dict[str, Any]]:
        """The firing findings that started firing at this snapshot (none for a stale lifecycle)."""
        return [] if self.stale else [entry for entry in self.firing if entry["firing_since"] == self.snapshot_id]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``runs/<id>/alerts.json``'s ``lifecycle``)."""
        return {"cluster": self.cluster, "snapshot_id": self.snapshot_id, "stale": self.stale,
                "counts": {"firing": len(self.firing), "pending": len(self.pending), "resolved": len(self.resolved),
                           "triggered": len(self.triggered), "healed_while_pending": len(self.healed_while_pending)},
                "firing": self.firing, "pending": self.pending, "resolved": self.resolved,
                "healed_while_pending": self.healed_while_pending}


def _entry(cluster: str, finding: Mapping[str, Any], at: datetime, pending_for: timedelta) -> dict[str, Any]:
    since = snapshot_time(str(finding.get("first_seen") or "")) if finding.get("first_seen") else at
    return {"key": dedup_key(cluster, finding), **{name: finding.get(name) for name in ENTRY_FIELDS},
            "since": since.isoformat(), "age_s": _seconds(at - since), "for_s": _seconds(pending_for)}


def _later_or_same(state_snapshot: str | None, snapshot_id: str) -> bool:
    if not state_snapshot:
        return False
    return (snapshot_time(state_snapshot), state_snapshot) >= (snapshot_time(snapshot_id), snapshot_id)


def compute_lifecycle(cluster: str, snapshot_id: str, findings: Iterable[Mapping[str, Any]],
                      pending_for: Callable[[str], timedelta], previous: Mapping[str, Any] | None) -> Lifecycle:
    """The lifecycle of ``cluster`` at ``snapshot_id`` from its findings there, ``pending_for(check_id)`` (the
    settings' ``for``) and the cluster's previous state (None: none yet, so every firing finding triggers)."""
    previous = previous or {}
    was_firing: Mapping[str, Any] = previous.get("firing") or {}
    was_pending: Mapping[str, Any] = previous.get("pending") or {}
    stale = _later_or_same(previous.get("snapshot_id"), snapshot_id)
    at = snapshot_time(snapshot_id)
    firing, pending, present = [], [], set()
    for finding in findings:
        if finding.get("status") not in ALERTING_STATUSES:
            continue
        entry = _entry(cluster, finding, at, pending_for(str(finding.get("check_id"))))
        if entry["key"] in present:  # one finding per identity; the audit never writes two
            continue
        present.add(entry["key"])
        before = was_firing.get(entry["key"])
        if before is not None or entry["age_s"] >= entry["for_s"]:
            entry["firing_since"] = before["firing_since"] if before else snapshot_id
            firing.append(entry)
        else:
            entry["fires_in_s"] = entry["for_s"] - entry["age_s"]
            pending.append(entry)
    resolved = [] if stale else [_resolved(entry, snapshot_id, at) for key, entry in was_firing.items()
                                 if key not in present]
    healed = [] if stale else [dict(entry) for key, entry in was_pending.items() if key not in present]
    if stale:  # nothing changes hands: a later snapshot already moved the state on
        for entry in firing:
            entry["firing_since"] = (was_firing.get(entry["key"]) or {}).get("firing_since", "")
    return Lifecycle(cluster, snapshot_id, sorted(firing, key=_order), sorted(pending, key=_order),
                     sorted(resolved, key=_order), sorted(healed, key=_order), stale)


def _resolved(entry: Mapping[str, Any], snapshot_id: str, at: datetime) -> dict[str, Any]:
    since = datetime.fromisoformat(entry["since"])
    fired_from = snapshot_time(entry["firing_since"]) if entry.get("firing_since") else since
    return {**entry, "resolved_in": snapshot_id, "lasted_s": _seconds(at - since), "fired_s": _seconds(at - fired_from)}


def _order(entry: Mapping[str, Any]) -> tuple:
    return (entry.get("check_id") or "", entry.get("key"))


def next_state(lifecycle: Lifecycle, previous: Mapping[str, Any] | None, *, failed_triggers: Iterable[str] = (),
               failed_resolves: Iterable[str] = (), now: datetime | None = None) -> dict[str, Any]:
    """The cluster's state after ``lifecycle`` was delivered: what fires (less the triggers no channel took, so the
    next run sends them again; plus the resolves no channel took, sent again next run) and what is pending.
    A stale lifecycle leaves the previous state as it was."""
    if lifecycle.stale and previous:
        return dict(previous)
    not_triggered, not_resolved = set(failed_triggers), set(failed_resolves)
    strip = ("resolved_in", "lasted_s", "fired_s")
    firing = {entry["key"]: entry for entry in lifecycle.firing if entry["key"] not in not_triggered}
    firing |= {entry["key"]: {k: v for k, v in entry.items() if k not in strip}
               for entry in lifecycle.resolved if entry["key"] in not_resolved}
    return {"version": STATE_VERSION, "cluster": lifecycle.cluster, "snapshot_id": lifecycle.snapshot_id,
            "updated_at": (now or datetime.now(UTC)).isoformat(), "firing": firing,
            "pending": {entry["key"]: entry for entry in lifecycle.pending}}


def format_duration_s(seconds: int | float | None) -> str:
    """``2h05m``, ``14m``, ``40s``: a duration for people."""
    if seconds is None:
        return "?"
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_lifecycle(lifecycle: Mapping[str, Any]) -> list[str]:
    """Lines for the summary's text: counts, then each firing, pending and resolved finding with its durations."""
    counts = lifecycle["counts"]
    lines = [f"alerts: {counts['firing']} firing ({counts['triggered']} started now), {counts['pending']} pending, "
             f"{counts['resolved']} resolved, {counts['healed_while_pending']} healed while pending"]
    for entry in lifecycle["firing"]:
        lines.append(f"  firing   {describe_entry(entry)} for {format_duration_s(entry['age_s'])}")
    for entry in lifecycle["pending"]:
        lines.append(f"  pending  {describe_entry(entry)} for {format_duration_s(entry['age_s'])}, fires in "
                     f"{format_duration_s(entry['fires_in_s'])}")
    for entry in lifecycle["resolved"]:
        lines.append(f"  resolved {describe_entry(entry)} after {format_duration_s(entry['lasted_s'])}")
    return lines


def describe_subject(finding: Mapping[str, Any]) -> str:
    """``group g topic t partition 0 broker 3``: the identifying columns that are set."""
    return " ".join(f"{label} {finding[column]}" for column, label in (
        ("group_id", "group"), ("topic", "topic"), ("partition", "partition"), ("broker_id", "broker"))
        if finding.get(column) not in (None, ""))


def describe_entry(entry: Mapping[str, Any]) -> str:
    """``[error] leader_not_in_isr topic t partition 0 at /path (key …)``."""
    subject = describe_subject(entry)
    return (f"[{entry.get('severity')}] {entry.get('check_id')}{' ' + subject if subject else ''} at "
            f"{entry.get('path')} (key {entry['key']})")
