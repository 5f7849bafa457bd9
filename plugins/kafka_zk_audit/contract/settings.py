"""The audit settings: SLAs, backlog limits, severity overrides, suppressions, alerts and the gate.

``load_config(None)`` returns the packaged defaults (``default_settings.yaml``, where every setting is
documented). A user file only lists what it changes; it is merged over the defaults section by section.
Anything invalid raises ``ValueError`` naming the key and what to do about it.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from typing import Any

import yaml

from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS, SEVERITIES

DEFAULT_CONFIG_RESOURCE = "default_settings.yaml"

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_DURATION_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+")


@dataclass(frozen=True)
class SlaConfig:
    """How long each admin operation may stay pending."""

    delete_topic: timedelta
    reassignment: timedelta
    preferred_election: timedelta


@dataclass(frozen=True)
class NotificationBacklogConfig:
    """When a sequential notification queue counts as backlogged."""

    max_children: int
    max_age: timedelta


@dataclass(frozen=True)
class Suppression:
    """An accepted finding: check_id plus optional glob patterns (topic, group_id) and broker_id."""

    check_id: str
    reason: str
    topic: str | None = None
    group_id: str | None = None
    broker_id: int | None = None


@dataclass(frozen=True)
class AlertsConfig:
    """Settings the alert task reads."""

    only_new: bool
    email_to: tuple[str, ...]
    smtp_conn_id: str
    webhook_conn_id: str | None
    top_offenders: int


@dataclass(frozen=True)
class GateConfig:
    """Which severities fail the gate."""

    gating_severities: tuple[str, ...]


@dataclass(frozen=True)
class AuditConfig:
    """The validated audit settings."""

    sla: SlaConfig
    notification_backlog: NotificationBacklogConfig
    severity_overrides: Mapping[str, str]
    suppressions: tuple[Suppression, ...]
    alerts: AlertsConfig
    gate: GateConfig
    source: str = "<packaged defaults>"

    def severity_of(self, check_id: str) -> str:
        """The severity of a check: the override when configured, else the catalogue default."""
        return self.severity_overrides.get(check_id, BY_ID[check_id].severity)

    def is_gating(self, severity: str) -> bool:
        """True when findings of this severity fail the gate."""
        return severity in self.gate.gating_severities


def parse_duration(value: Any, key: str = "duration", source: str = "audit config") -> timedelta:
    """'90s', '30m', '24h', '7d', '1h30m' or a plain number of seconds, as a timedelta (>= 0)."""
    if isinstance(value, bool):
        raise ValueError(f"{source}: '{key}' is {value!r}; write a duration such as \"30m\", \"24h\" or \"7d\"")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif _DURATION_WHOLE.fullmatch(text):
            seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text))
        else:
            raise ValueError(
                f"{source}: '{key}' is {value!r}, which is not a duration; write a number followed by "
                "s, m, h, d or w, e.g. \"90s\", \"30m\", \"24h\", \"7d\", or a plain number of seconds"
            )
    else:
        raise ValueError(f"{source}: '{key}' is {value!r}; write a duration such as \"30m\", \"24h\" or \"7d\"")
    if seconds < 0:
        raise ValueError(f"{source}: '{key}' is negative ({value!r}); durations must be >= 0")
    return timedelta(seconds=seconds)


def format_duration(duration: timedelta) -> str:
    """A short human form, e.g. '1d 2h', '30m', '1m 30s', '0s' (the same form the findings use)."""
    total = int(duration.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")) if n]
    return " ".join(parts) or "0s"


def glob_to_regex(pattern: str) -> str:
    """An fnmatch-style glob (*, ?, [abc], [!abc]) as an anchored regex valid for Java and Python."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        i += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            start = i + 1 if pattern[i : i + 1] == "!" else i
            start = start + 1 if pattern[start : start + 1] == "]" else start
            end = pattern.find("]", start)
            if end < 0:
                out.append(r"\[")
                continue
            body = pattern[i:end]
            i = end + 1
            negate = body.startswith("!")
            if negate:
                body = body[1:]
            escaped = "".join("\\" + c if c in "\\[]^&" else c for c in body)
            out.append("[" + ("^" if negate else "") + escaped + "]")
        elif char.isalnum() or char == "_":
            out.append(char)
        else:
            out.append("\\" + char if ord(char) < 128 else char)
    return "^" + "".join(out) + "$"


def _default_raw() -> dict[str, Any]:
    text = resources.files("kafka_zk_audit.contract").joinpath(DEFAULT_CONFIG_RESOURCE).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def _known_keys(section: Mapping[str, Any], known: Mapping[str, Any], prefix: str, source: str) -> None:
    for key in section:
        if key not in known:
            where = f"under '{prefix}'" if prefix else "at the top level"
            raise ValueError(
                f"{source}: unknown key '{prefix + '.' if prefix else ''}{key}'; the keys {where} are "
                f"{', '.join(sorted(known))}. Fix the spelling or remove it."
            )


def _mapping(value: Any, key: str, source: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{source}: '{key}' must be a mapping of keys to values, not {type(value).__name__}")
    return value


def _merge(defaults: Mapping[str, Any], overrides: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Overrides over defaults: mapping sections merge key by key, everything else is replaced."""
    _known_keys(overrides, defaults, "", source)
    merged = copy.deepcopy(dict(defaults))
    for key, value in overrides.items():
        default = defaults[key]
        if isinstance(default, Mapping) and default:
            section = _mapping(value, key, source)
            _known_keys(section, default, key, source)
            merged[key] = {**default, **section}
        else:
            merged[key] = value
    return merged


def _int(value: Any, key: str, source: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{source}: '{key}' is {value!r}; it must be a whole number >= {minimum}")
    return value


def _bool(value: Any, key: str, source: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{source}: '{key}' is {value!r}; write true or false")
    return value


def _str(value: Any, key: str, source: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        allowed = " or null" if optional else ""
        raise ValueError(f"{source}: '{key}' is {value!r}; it must be a non-empty string{allowed}")
    return value


def _check_id(value: Any, key: str, source: str) -> str:
    if value not in CHECK_IDS:
        raise ValueError(
            f"{source}: '{key}' is {value!r}, which is not a check id; use one of the catalogue ids "
            f"({', '.join(CHECK_IDS)})"
        )
    return value


def _severity(value: Any, key: str, source: str) -> str:
    if value not in SEVERITIES:
        raise ValueError(f"{source}: '{key}' is {value!r}; use one of {', '.join(SEVERITIES)}")
    return value


def _suppression(raw: Any, index: int, source: str) -> Suppression:
    key = f"suppressions[{index}]"
    entry = _mapping(raw, key, source)
    known = {"check_id": None, "reason": None, "topic": None, "group_id": None, "broker_id": None}
    _known_keys(entry, known, key, source)
    if "check_id" not in entry:
        raise ValueError(f"{source}: '{key}.check_id' is missing; name the check this suppression applies to")
    if "reason" not in entry:
        raise ValueError(f"{source}: '{key}.reason' is missing; say why these findings are accepted")
    broker_id = entry.get("broker_id")
    if broker_id is not None:
        broker_id = _int(broker_id, f"{key}.broker_id", source, minimum=-1)
    return Suppression(
        check_id=_check_id(entry["check_id"], f"{key}.check_id", source),
        reason=_str(entry["reason"], f"{key}.reason", source),  # type: ignore[arg-type]
        topic=_str(entry.get("topic"), f"{key}.topic", source, optional=True),
        group_id=_str(entry.get("group_id"), f"{key}.group_id", source, optional=True),
        broker_id=broker_id,
    )


def parse_config(raw: Mapping[str, Any] | None, source: str = "audit config") -> AuditConfig:
    """Validate a settings mapping (only the keys it changes) merged over the packaged defaults."""
    merged = _merge(_default_raw(), _mapping(raw, "<top level>", source), source)

    sla = _mapping(merged["sla"], "sla", source)
    backlog = _mapping(merged["notification_backlog"], "notification_backlog", source)
    overrides = _mapping(merged["severity_overrides"], "severity_overrides", source)
    alerts = _mapping(merged["alerts"], "alerts", source)
    gate = _mapping(merged["gate"], "gate", source)

    suppressions_raw = merged["suppressions"] or []
    if not isinstance(suppressions_raw, list):
        raise ValueError(f"{source}: 'suppressions' must be a list of entries with check_id and reason")
    email_to = alerts["email_to"] or []
    if isinstance(email_to, str):
        email_to = [email_to]
    if not isinstance(email_to, list):
        raise ValueError(f"{source}: 'alerts.email_to' must be a list of e-mail addresses")
    gating = gate["gating_severities"] or []
    if not isinstance(gating, list):
        raise ValueError(f"{source}: 'gate.gating_severities' must be a list such as [critical, error]")

    return AuditConfig(
        sla=SlaConfig(
            delete_topic=parse_duration(sla["delete_topic"], "sla.delete_topic", source),
            reassignment=parse_duration(sla["reassignment"], "sla.reassignment", source),
            preferred_election=parse_duration(sla["preferred_election"], "sla.preferred_election", source),
        ),
        notification_backlog=NotificationBacklogConfig(
            max_children=_int(backlog["max_children"], "notification_backlog.max_children", source),
            max_age=parse_duration(backlog["max_age"], "notification_backlog.max_age", source),
        ),
        severity_overrides={
            _check_id(check_id, f"severity_overrides.{check_id}", source): _severity(
                severity, f"severity_overrides.{check_id}", source
            )
            for check_id, severity in overrides.items()
        },
        suppressions=tuple(_suppression(entry, i, source) for i, entry in enumerate(suppressions_raw)),
        alerts=AlertsConfig(
            only_new=_bool(alerts["only_new"], "alerts.only_new", source),
            email_to=tuple(
                _str(address, f"alerts.email_to[{i}]", source)  # type: ignore[misc]
                for i, address in enumerate(email_to)
            ),
            smtp_conn_id=_str(alerts["smtp_conn_id"], "alerts.smtp_conn_id", source),  # type: ignore[arg-type]
            webhook_conn_id=_str(alerts["webhook_conn_id"], "alerts.webhook_conn_id", source, optional=True),
            top_offenders=_int(alerts["top_offenders"], "alerts.top_offenders", source),
        ),
        gate=GateConfig(
            gating_severities=tuple(
                _severity(severity, f"gate.gating_severities[{i}]", source) for i, severity in enumerate(gating)
            )
        ),
        source=source,
    )


def load_config(path: str | os.PathLike[str] | None = None) -> AuditConfig:
    """The settings from a YAML file (local path or fsspec URL) over the defaults; None: the defaults."""
    if path is None:
        return parse_config({}, source="<packaged defaults>")
    source = os.fspath(path)
    if "://" in source:
        import fsspec

        with fsspec.open(source, "r", encoding="utf-8") as handle:
            text = handle.read()
    else:
        try:
            with open(source, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise ValueError(f"audit config {source}: cannot read it ({error.strerror}); check the path") from error
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"audit config {source}: not valid YAML: {error}") from error
    return parse_config(raw, source=f"audit config {source}")
