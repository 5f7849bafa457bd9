"""The audit settings: SLAs, backlog limits, severity overrides, suppressions, alerts and the gate.

``load_config(None)`` returns the packaged defaults (``default_settings.yaml``, where every setting is
documented). A user file only lists what it changes; it is merged over the defaults section by section
and validated by the pydantic models below (unknown keys are errors). Anything invalid raises one
:class:`SettingsError` listing every problem, each with its dotted key, the file and line, and what is
allowed there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from typing import Annotated, Any, get_args

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS, SEVERITIES
from kafka_zk_audit.contract.readiness import TARGET_HELP, parse_target

DEFAULT_CONFIG_RESOURCE = "default_settings.yaml"
DEFAULT_SOURCE = "<packaged defaults>"

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_DURATION_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+")
_MAX_SECONDS = timedelta.max.total_seconds() // 2
_DURATION_HELP = (
    'write a duration: a number followed by s, m, h, d or w, e.g. "90s", "30m", "24h", "7d", "1h30m", '
    "or a plain number of seconds >= 0"
)

KeyPath = tuple[str | int, ...]


class SettingsError(ValueError):
    """Invalid audit settings; ``problems`` holds one line per problem (key, file, line, what is allowed)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        count = f"{len(problems)} problems" if len(problems) > 1 else "1 problem"
        super().__init__(f"invalid audit settings ({count}):\n" + "\n".join(f"  {p}" for p in problems))


def _duration(value: Any) -> timedelta:
    """'90s', '30m', '24h', '7d', '1h30m' or a plain number of seconds as a timedelta; ValueError otherwise."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ValueError(value)
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif _DURATION_WHOLE.fullmatch(text):
            seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text))
        else:
            raise ValueError(value)
    else:
        raise ValueError(value)
    if not 0 <= seconds <= _MAX_SECONDS:  # also NaN, and what timedelta cannot hold
        raise ValueError(value)
    return timedelta(seconds=seconds)


def _validate_duration(value: Any) -> timedelta:
    try:
        return _duration(value)
    except ValueError:
        raise PydanticCustomError("duration", "; " + _DURATION_HELP) from None


def _validate_check_id(value: Any) -> str:
    if value not in CHECK_IDS:
        raise PydanticCustomError(
            "check_id", ", which is not a check id; use one of the catalogue ids ({ids})", {"ids": ", ".join(CHECK_IDS)}
        )
    return value


def _validate_severity(value: Any) -> str:
    if value not in SEVERITIES:
        raise PydanticCustomError("severity", "; use one of {severities}", {"severities": ", ".join(SEVERITIES)})
    return value


def _validate_target_version(value: Any) -> str:
    if isinstance(value, float):  # an unquoted 3.5 in YAML
        value = str(value)
    try:
        parse_target(value)
    except ValueError:
        raise PydanticCustomError("target_version", "; " + TARGET_HELP) from None
    return value.strip()


def _none_as_empty(value: Any) -> Any:
    return () if value is None else value


def _one_or_many(value: Any) -> Any:
    return (value,) if isinstance(value, str) else _none_as_empty(value)


Duration = Annotated[timedelta, BeforeValidator(_validate_duration)]
CheckId = Annotated[str, BeforeValidator(_validate_check_id)]
Severity = Annotated[str, BeforeValidator(_validate_severity)]
TargetVersion = Annotated[str, BeforeValidator(_validate_target_version)]
Text = Annotated[StrictStr, Field(pattern=r"\S")]
Count = Annotated[StrictInt, Field(ge=0)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlaConfig(_Section):
    """How long each admin operation may stay pending."""

    delete_topic: Duration
    reassignment: Duration
    preferred_election: Duration


class NotificationBacklogConfig(_Section):
    """When a sequential notification queue counts as backlogged."""

    max_children: Count
    max_age: Duration


class Suppression(_Section):
    """An accepted finding: check_id plus optional glob patterns (topic, group_id) and broker_id."""

    check_id: CheckId
    reason: Text
    topic: Text | None = None
    group_id: Text | None = None
    broker_id: Annotated[StrictInt, Field(ge=-1)] | None = None


class AlertsConfig(_Section):
    """Settings the alert task reads."""

    only_new: StrictBool
    email_to: Annotated[tuple[Text, ...], BeforeValidator(_one_or_many)]
    smtp_conn_id: Text
    webhook_conn_id: Text | None
    top_offenders: Count


class GateConfig(_Section):
    """Which severities fail the gate."""

    gating_severities: Annotated[tuple[Severity, ...], BeforeValidator(_none_as_empty)]


Percent = Annotated[float, Field(ge=0, le=100)]
ClusterName = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")]
# What a cluster may override: the thresholds and the alert routes (not the fleet-wide schedule or retention).
CLUSTER_OVERRIDABLE = (
    "sla", "notification_backlog", "severity_overrides", "suppressions", "alerts", "drift", "migration",
)
# (snapshot settings are fleet-wide: the DAG's mapped snapshot task takes them when Airflow parses it)


class DriftConfig(_Section):
    """How much a cluster may change between two audited snapshots (the ``drift`` suite's bounds)."""

    brokers_max_drop: Count
    topics_max_drop_pct: Percent
    partitions_max_drop_pct: Percent
    consumer_groups_max_drop_pct: Percent
    znodes_max_drop_pct: Percent
    controller_changes_max: Count


class MigrationConfig(_Section):
    """ZooKeeper → KRaft migration: the readiness report's target version, whether it gates, and health SLAs."""

    target_version: TargetVersion
    readiness: StrictBool
    gate: StrictBool
    load_stuck_after: Duration
    dual_write_stale_after: Duration


class RetentionConfig(_Section):
    """What the DAG prunes after a successful run; the baseline of each cluster is always kept."""

    keep_snapshots: Count
    keep_snapshots_for: Duration
    keep_findings_for: Duration


class FleetConfig(_Section):
    """How a run over several clusters behaves, and how its tasks retry."""

    max_parallel_snapshots: Annotated[StrictInt, Field(ge=1)]
    task_retries: Count
    retry_delay: Duration
    task_timeout: Duration


class SnapshotConfig(_Section):
    """How gently the snapshot reads the ensemble, how long it tries to resume, and what it copies."""

    max_reads_in_flight: Annotated[StrictInt, Field(ge=1)]
    max_bytes_in_flight: Annotated[StrictInt, Field(ge=1024)]
    reads_per_second: Annotated[float, Field(ge=0)]
    max_reconnects: Count
    reconnect_timeout_s: Annotated[float, Field(gt=0)]
    copy_secrets: StrictBool
    parallel_connections: Annotated[StrictInt, Field(ge=1, le=64)]


class FilesConfig(_Section):
    """Where a cluster's ZooKeeper files are: the audit rebuilds the tree from them instead of reading the ensemble.

    ``data_dir`` (and ``log_dir`` when the logs live apart) is a local path or an fsspec URL, or a path on the
    server of the Airflow SFTP connection ``sftp_conn_id``.
    """

    data_dir: Text
    log_dir: Text | None = None
    sftp_conn_id: Text | None = None


class HistoryConfig(_Section):
    """The history of each cluster's ZooKeeper files the DAG builds: whether it does, and the floor of a listed
    interval."""

    enabled: StrictBool
    min_interval: Duration


class ClusterConfig(_Section):
    """One audited cluster: its name, its ZooKeeper connection (or files) and what it overrides."""

    name: ClusterName
    zk_conn_id: Text | None = None
    files: FilesConfig | None = None
    overrides: dict[str, Any] = Field(default_factory=dict)


class AuditConfig(_Section):
    """The validated audit settings; ``source`` says where they came from."""

    sla: SlaConfig
    notification_backlog: NotificationBacklogConfig
    severity_overrides: dict[CheckId, Severity]
    suppressions: Annotated[tuple[Suppression, ...], BeforeValidator(_none_as_empty)]
    alerts: AlertsConfig
    gate: GateConfig
    schedule: Text | None
    clusters: Annotated[tuple[ClusterConfig, ...], BeforeValidator(_none_as_empty)]
    fleet: FleetConfig
    snapshot: SnapshotConfig
    drift: DriftConfig
    retention: RetentionConfig
    migration: MigrationConfig
    history: HistoryConfig
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


_CUSTOM_KINDS = frozenset({"duration", "check_id", "severity", "target_version"})
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
}
_SECTIONS: dict[str, type[BaseModel]] = {
    "": AuditConfig,
    "sla": SlaConfig,
    "notification_backlog": NotificationBacklogConfig,
    "suppressions": Suppression,
    "alerts": AlertsConfig,
    "gate": GateConfig,
    "clusters": ClusterConfig,
    "clusters.files": FilesConfig,
    "fleet": FleetConfig,
    "snapshot": SnapshotConfig,
    "drift": DriftConfig,
    "retention": RetentionConfig,
    "migration": MigrationConfig,
    "history": HistoryConfig,
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
        known = ", ".join(sorted(_section_of(path).model_fields))
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
        if cluster.zk_conn_id is None and cluster.files is None:
            problems.append(f"{where.at(where.line_of(('clusters', index)))}: cluster {cluster.name!r} needs "
                            "zk_conn_id (its ZooKeeper connection) or files (where its ZooKeeper files are)")
        at = ("clusters", index, "overrides")
        for key in cluster.overrides:
            if key not in CLUSTER_OVERRIDABLE:
                problems.append(f"{where.at(where.line_of((*at, key)))}: '{_dotted((*at, key))}' cannot be "
                                f"overridden per cluster; the keys a cluster may override are "
                                f"{', '.join(CLUSTER_OVERRIDABLE)}")
        if any(key not in CLUSTER_OVERRIDABLE for key in cluster.overrides):
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
        return _duration(value)
    except ValueError:
        raise SettingsError(source, [f"{source}: '{key}' is {value!r}; {_DURATION_HELP}"]) from None


def seconds_text(duration: timedelta) -> str:
    """A duration as a plain number of seconds, to the millisecond ("1", "0.25"), as :func:`parse_duration` reads it
    back (the form command lines are given)."""
    return f"{duration.total_seconds():.3f}".rstrip("0").rstrip(".")


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
