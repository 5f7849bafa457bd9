"""The whole settings file, ``AuditConfig``, and how it is read: YAML over the packaged defaults, every problem
located.

``load_config(None)`` returns the packaged defaults (``default_settings.yaml``, where every setting is
documented). A user file only lists what it changes; it is merged over the defaults section by section
and validated by the models (``models``; unknown keys are errors). Anything invalid raises one
:class:`SettingsError` listing every problem, each with its dotted key, the file and line, and what is
allowed there. ``AuditConfig.for_cluster`` validates a cluster's overrides the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError
from pydantic_core import ErrorDetails

from kafka_zk_audit.contract.catalogue import BY_ID, SEVERITIES
from kafka_zk_audit.contract.settings import models
from kafka_zk_audit.contract.settings.durations import DURATION_HELP, to_timedelta

DEFAULT_CONFIG_RESOURCE = "default_settings.yaml"
DEFAULT_SOURCE = "<packaged defaults>"

KeyPath = tuple[str | int, ...]


class SettingsError(ValueError):
    """Invalid audit settings; ``problems`` holds one line per problem (key, file, line, what is allowed)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        count = f"{len(problems)} problems" if len(problems) > 1 else "1 problem"
        super().__init__(f"invalid audit settings ({count}):\n" + "\n".join(f"  {p}" for p in problems))


class AuditConfig(BaseModel):
    """The validated audit settings; ``source`` says where they came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sla: models.SlaConfig
    notification_backlog: models.NotificationBacklogConfig
    severity_overrides: dict[models.CheckId, models.Severity]
    suppressions: models.Suppressions
    alerts: models.AlertsConfig
    gate: models.GateConfig
    schedule: models.Text | None
    clusters: models.Clusters
    fleet: models.FleetConfig
    snapshot: models.SnapshotConfig
    drift: models.DriftConfig
    retention: models.RetentionConfig
    migration: models.MigrationConfig
    history: models.HistoryConfig
    events: models.EventsConfig
    _source: str = PrivateAttr(default=DEFAULT_SOURCE)
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    def for_cluster(self, name: str) -> AuditConfig:
        """These settings with the named cluster's overrides applied (unknown or unlisted name: unchanged)."""
        cluster = next((c for c in self.clusters if c.name == name), None)
        if cluster is None or not cluster.overrides:
            return self
        where = _Where(f"{self.source} (cluster {name})", {})
        return _validate(_merge(self._raw, cluster.overrides), where, defaults=False)

    def cluster_names(self) -> tuple[str, ...]:
        return tuple(cluster.name for cluster in self.clusters)

    @property
    def source(self) -> str:
        """The file the settings came from, or ``<packaged defaults>``."""
        return self._source

    def severity_of(self, check_id: str) -> str:
        """The severity of a check: the override when configured, else the catalogue default."""
        return self.severity_overrides.get(check_id, BY_ID[check_id].severity)

    def is_gating(self, severity: str) -> bool:
        """True when findings of this severity fail the gate."""
        return severity in self.gate.gating_severities

    def alert_routes(self) -> tuple[models.AlertRoute, ...]:
        """Every route of the alerts: the one of ``alerts.email_to`` and ``alerts.webhook_conn_id`` (for the gating
        severities) when they name a channel, then ``alerts.routes``."""
        alerts = self.alerts
        first = (models.AlertRoute(email_to=alerts.email_to, webhook_conn_id=alerts.webhook_conn_id),) if (
            alerts.email_to or alerts.webhook_conn_id) else ()
        return (*first, *alerts.routes)


_CUSTOM_KINDS = frozenset({"duration", "check_id", "severity", "target_version", "route", "events"})
# what a key must look like, for pydantic's own error types (the custom ones above carry their own text)
_ALLOWED_BY_TYPE = {
    "bool_type": "; write true or false",
    "int_type": "; it must be a whole number",
    "int_from_float": "; it must be a whole number",
    "greater_than_equal": "; it must be a whole number >= {ge}",
    "string_type": "; it must be a non-empty string",
    "string_pattern_mismatch": "; it must be a non-empty string",
}
_MISSING_HINTS = {
    "check_id": "name the check this suppression applies to",
    "reason": "say why these findings are accepted",
    "data_dir": "give the folder (path or URL) of ZooKeeper's dataDir",
}
_LIST_HINTS = {
    "suppressions": "a list of entries with check_id and reason",
    "email_to": "a list of e-mail addresses",
    "gating_severities": f"a list of severities such as [critical, error] (from {', '.join(SEVERITIES)})",
    "severities": f"a list of severities such as [critical] (from {', '.join(SEVERITIES)})",
    "routes": "a list of routes, each with severities and at least one channel",
}
_SECTIONS: dict[str, type[BaseModel]] = {
    "": AuditConfig,
    "sla": models.SlaConfig,
    "notification_backlog": models.NotificationBacklogConfig,
    "suppressions": models.Suppression,
    "alerts": models.AlertsConfig,
    "alerts.routes": models.AlertRoute,
    "gate": models.GateConfig,
    "clusters": models.ClusterConfig,
    "clusters.files": models.FilesConfig,
    "clusters.kraft": models.KraftConfig,
    "fleet": models.FleetConfig,
    "snapshot": models.SnapshotConfig,
    "drift": models.DriftConfig,
    "retention": models.RetentionConfig,
    "migration": models.MigrationConfig,
    "history": models.HistoryConfig,
    "events": models.EventsConfig,
}


def _dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _yaml_lines(node: yaml.Node | None, path: KeyPath = ()) -> Iterator[tuple[KeyPath, int]]:
    """(path, 1-based line) of every key and list item in a composed YAML document."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*path, key_node.value) if isinstance(key_node, yaml.ScalarNode) else path
            yield child, key_node.start_mark.line + 1
            yield from _yaml_lines(value_node, child)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield (*path, index), item.start_mark.line + 1
            yield from _yaml_lines(item, (*path, index))


@dataclass(frozen=True)
class _Where:
    """Where the user's settings came from: a label, and the line of each key when read from a file."""

    source: str
    lines: Mapping[KeyPath, int]

    def line_of(self, path: KeyPath) -> int | None:
        """The line of ``path``, else of its nearest ancestor in the file (None: not from a file)."""
        for depth in range(len(path), 0, -1):
            if path[:depth] in self.lines:
                return self.lines[path[:depth]]
        return None

    def at(self, line: int | None) -> str:
        return f"{self.source}, line {line}" if line else self.source


def _section_of(path: KeyPath) -> type[BaseModel]:
    return _SECTIONS.get(".".join(str(part) for part in path[:-1] if not isinstance(part, int)), AuditConfig)


def _nullable(path: KeyPath) -> bool:
    """True when the key at ``path`` may be null."""
    field = _section_of(path).model_fields.get(str(path[-1])) if path else None
    return field is not None and type(None) in get_args(field.annotation)


def _describe(error: ErrorDetails) -> tuple[KeyPath, str]:
    """One problem as (key path, text): the dotted key, the offending value and what is allowed."""
    path: KeyPath = tuple(part for part in error["loc"] if part != "[key]")
    key, kind, value = _dotted(path), error["type"], error.get("input")
    if kind == "extra_forbidden":
        parent = f"under '{_dotted(path[:-1])}'" if path[:-1] else "at the top level"
        known = ", ".join(sorted(field.alias or name for name, field in _section_of(path).model_fields.items()))
        return path, f"unknown key '{key}'; the keys {parent} are {known}. Fix the spelling or remove it."
    if kind == "missing":
        return path, f"'{key}' is missing; {_MISSING_HINTS.get(str(path[-1]), 'add it')}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return path, f"'{key}' must be a mapping of keys to values, not {type(value).__name__} ({value!r})"
    if kind in ("tuple_type", "list_type"):
        return path, f"'{key}' must be {_LIST_HINTS.get(str(path[-1]), 'a list')}, not {value!r}"
    if kind in _ALLOWED_BY_TYPE:
        allowed = _ALLOWED_BY_TYPE[kind].format(**error.get("ctx", {})) + (" or null" if _nullable(path) else "")
    else:  # our own error types carry their text; pydantic's others read well after a semicolon
        allowed = error["msg"] if kind in _CUSTOM_KINDS else "; " + error["msg"]
    return path, f"'{key}' is {value!r}{allowed}"


def _problems(error: ValidationError, where: _Where) -> list[str]:
    """Every problem, in file order, each prefixed with the file and line."""
    located = [(where.line_of(path), text) for path, text in map(_describe, error.errors())]
    located.sort(key=lambda item: item[0] or 0)
    return [f"{where.at(line)}: {text}" for line, text in located]


def _default_raw() -> dict[str, Any]:
    text = resources.files("kafka_zk_audit.contract").joinpath(DEFAULT_CONFIG_RESOURCE).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def _merge(defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides over defaults: mapping sections merge key by key (null keeps the defaults), the rest is replaced."""
    merged = dict(defaults)
    for key, value in overrides.items():
        default = defaults.get(key)
        if isinstance(default, Mapping) and value is None:
            continue
        merged[key] = {**default, **value} if isinstance(default, Mapping) and isinstance(value, Mapping) else value
    return merged


def _validate(raw: Any, where: _Where, defaults: bool = True) -> AuditConfig:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise SettingsError(where.source, [
            f"{where.at(1 if where.lines else None)}: the settings must be a mapping of keys to values, "
            f"not {type(raw).__name__}"
        ])
    merged = _merge(_default_raw(), raw) if defaults else dict(raw)
    try:
        config = AuditConfig.model_validate(merged)
    except ValidationError as error:
        raise SettingsError(where.source, _problems(error, where)) from None
    config._source = where.source
    config._raw = merged
    problems = []
    for index, cluster in enumerate(config.clusters):
        if cluster.zk_conn_id is None and cluster.files is None and cluster.kraft is None:
            problems.append(f"{where.at(where.line_of(('clusters', index)))}: cluster {cluster.name!r} needs "
                            "zk_conn_id (its ZooKeeper connection), files (where its ZooKeeper files are) or kraft "
                            "(where its KRaft metadata log is)")
        if cluster.kraft is not None and cluster.files is not None:
            problems.append(f"{where.at(where.line_of(('clusters', index)))}: cluster {cluster.name!r} names both "
                            "files (ZooKeeper's) and kraft (a KRaft metadata log); a cluster is audited from one "
                            "source: keep the one it runs on now")
        if cluster.migration is not None and cluster.kraft is not None:
            problems.append(f"{where.at(where.line_of(('clusters', index, 'migration')))}: cluster {cluster.name!r} "
                            "has migration (its KRaft log, compared with its ZooKeeper tree) but is audited from "
                            "kraft: a migrating cluster is audited from ZooKeeper (zk_conn_id or files)")
        at = ("clusters", index, "overrides")
        for key in cluster.overrides:
            if key not in models.CLUSTER_OVERRIDABLE:
                problems.append(f"{where.at(where.line_of((*at, key)))}: '{_dotted((*at, key))}' cannot be "
                                f"overridden per cluster; the keys a cluster may override are "
                                f"{', '.join(models.CLUSTER_OVERRIDABLE)}")
        if any(key not in models.CLUSTER_OVERRIDABLE for key in cluster.overrides):
            continue
        try:
            AuditConfig.model_validate(_merge(merged, cluster.overrides))
        except ValidationError as error:
            for path, text in map(_describe, error.errors()):
                line = where.line_of((*at, *path))
                problems.append(f"{where.at(line)}: {text.replace(repr(_dotted(path)), repr(_dotted((*at, *path))))}")
    names = [cluster.name for cluster in config.clusters]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"{where.at(where.line_of(('clusters',)))}: cluster names must be unique; "
                        f"{', '.join(duplicates)} appear more than once")
    if problems:
        raise SettingsError(where.source, problems)
    return config


def parse_config(raw: Mapping[str, Any] | None, source: str = "audit config") -> AuditConfig:
    """Validate a settings mapping (only the keys it changes) merged over the packaged defaults."""
    return _validate(raw, _Where(source, {}))


def read_settings_text(location: str) -> str:
    """The text of a settings file (local path or fsspec URL); ``SettingsError`` when it cannot be read."""
    try:
        if "://" in location:
            import fsspec

            with fsspec.open(location, "r", encoding="utf-8") as handle:
                return handle.read()
        with open(location, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise SettingsError(location, [f"{location}: cannot read it ({reason}); check the path"]) from error


def load_config(path: str | os.PathLike[str] | None = None) -> AuditConfig:
    """The settings from a YAML file (local path or fsspec URL) over the defaults; None: the defaults."""
    if path is None:
        return _validate({}, _Where(DEFAULT_SOURCE, {}))
    location = os.fspath(path)
    text = read_settings_text(location)
    try:
        raw = yaml.safe_load(text)
        lines = dict(_yaml_lines(yaml.compose(text, Loader=yaml.SafeLoader)))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        detail = " ".join(str(error).split())
        raise SettingsError(location, [f"{location}{line}: not valid YAML: {detail}"]) from error
    return _validate(raw, _Where(location, lines))


def parse_duration(value: Any, key: str = "duration", source: str = "audit config") -> timedelta:
    """'90s', '30m', '24h', '7d', '1h30m' or a plain number of seconds, as a timedelta (>= 0)."""
    try:
        return to_timedelta(value)
    except ValueError:
        raise SettingsError(source, [f"{source}: '{key}' is {value!r}; {DURATION_HELP}"]) from None
