"""The sections of the settings file, one pydantic model each, and the value types their keys take.

Unknown keys are errors (``extra="forbid"``); the custom types (durations, check ids, severities, target versions)
raise errors whose text says what is allowed. ``SnapshotConfig`` is built from ``contract.snapshot_options``: the
options the ``snapshot`` section sets, with their bounds there. The whole file, ``AuditConfig``, and how it is
loaded and checked are in ``loader``.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kafka_zk_audit.contract.catalogue import CHECK_IDS, SEVERITIES
from kafka_zk_audit.contract.readiness import TARGET_HELP, parse_target
from kafka_zk_audit.contract.settings.durations import DURATION_HELP, to_timedelta
from kafka_zk_audit.contract.snapshot_options import SETTINGS, SnapshotOptions


def _validate_duration(value: Any) -> timedelta:
    try:
        return to_timedelta(value)
    except ValueError:
        raise PydanticCustomError("duration", "; " + DURATION_HELP) from None


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


def _none_as_dict(value: Any) -> Any:
    return {} if value is None else value


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


DEFAULT_FOR = "default"  # the key of ``alerts.for`` that applies to every check not listed


def _validate_for_key(value: Any) -> str:
    if value != DEFAULT_FOR and value not in CHECK_IDS:
        raise PydanticCustomError(
            "check_id", ", which is not a check id; use 'default' or one of the catalogue ids ({ids})",
            {"ids": ", ".join(CHECK_IDS)})
    return value


ForKey = Annotated[str, BeforeValidator(_validate_for_key)]
Recipients = Annotated[tuple[Text, ...], BeforeValidator(_one_or_many)]
ROUTE_CHANNELS = ("email_to", "webhook_conn_id", "slack_conn_id", "pagerduty_conn_id", "opsgenie_conn_id")


class AlertRoute(_Section):
    """Where the alerts of findings of some severities go: any of e-mail, a webhook, Slack, PagerDuty, Opsgenie.

    ``severities`` empty: the gating severities. E-mail goes through ``alerts.smtp_conn_id``.
    """

    severities: Annotated[tuple[Severity, ...], BeforeValidator(_none_as_empty)] = ()
    email_to: Recipients = ()
    webhook_conn_id: Text | None = None
    slack_conn_id: Text | None = None
    pagerduty_conn_id: Text | None = None
    opsgenie_conn_id: Text | None = None

    @model_validator(mode="after")
    def _has_a_channel(self) -> AlertRoute:
        if not any(getattr(self, channel) for channel in ROUTE_CHANNELS):
            raise PydanticCustomError("route", "; a route needs at least one of {channels}",
                                      {"channels": ", ".join(ROUTE_CHANNELS)})
        return self

    def takes(self, severity: str | None, gating: tuple[str, ...]) -> bool:
        """Whether findings of this severity go this way."""
        return severity in (self.severities or gating)


class AlertsConfig(_Section):
    """Settings the alerts read: when a finding fires (``for``), where its trigger and resolve go, what they say."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    only_new: StrictBool
    email_to: Recipients
    smtp_conn_id: Text
    webhook_conn_id: Text | None
    top_offenders: Count
    for_: Annotated[dict[ForKey, Duration], BeforeValidator(_none_as_dict)] = Field(default_factory=dict, alias="for")
    routes: Annotated[tuple[AlertRoute, ...], BeforeValidator(_none_as_empty)] = ()

    def pending_for(self, check_id: str) -> timedelta:
        """How long a finding of this check must persist before it fires (``for``: the check's, else ``default``)."""
        return self.for_.get(check_id, self.for_.get(DEFAULT_FOR, timedelta(0)))


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


# The Python type of each kind of snapshot option, as the settings file must write it (no "1" for 1, no 1 for true).
_OPTION_TYPES: dict[str, Any] = {"int": StrictInt, "float": float, "bool": StrictBool}
_OPTIONS = {option.name: option for option in dataclasses.fields(SnapshotOptions)}

SnapshotConfig: type[_Section] = create_model(  # the fields: SnapshotOptions', those SETTINGS names, its bounds
    "SnapshotConfig",
    __base__=_Section,
    __module__=__name__,
    __doc__="How gently the snapshot reads the ensemble, how long it tries to resume, and what it copies.",
    **{name: (Annotated[_OPTION_TYPES[str(_OPTIONS[name].type)], Field(**bounds)], ...)
       for name, bounds in SETTINGS.items()},
)


class FilesConfig(_Section):
    """Where a cluster's ZooKeeper files are: the audit rebuilds the tree from them instead of reading the ensemble.

    ``data_dir`` (and ``log_dir`` when the logs live apart) is a local path or an fsspec URL, or a path on the
    server of the Airflow SFTP connection ``sftp_conn_id``.
    """

    data_dir: Text
    log_dir: Text | None = None
    sftp_conn_id: Text | None = None


class KraftConfig(_Section):
    """Where a KRaft cluster's metadata log is: any voter's ``metadata.log.dir`` (the folder holding
    ``__cluster_metadata-0/``), a local path or an fsspec URL, or a path on the server of ``sftp_conn_id``."""

    metadata_dir: Text
    sftp_conn_id: Text | None = None


def _validate_release(value: Any) -> str:
    if isinstance(value, float):  # an unquoted 3.7 in YAML
        value = str(value)
    text = str(value).strip()
    parts = text.split(".")
    if not (2 <= len(parts) <= 3 and all(p.isdigit() for p in parts) and parts[0] == "3" and "4" <= parts[1] <= "9"
            and len(parts[1]) == 1):
        raise PydanticCustomError("release", "the Kafka release that ran the migration: 3.4 to 3.9, with an "
                                             "optional patch (\"3.6.1\")")
    return text


MigrationRelease = Annotated[str, BeforeValidator(_validate_release)]


class ClusterMigrationConfig(_Section):
    """A cluster migrating from ZooKeeper to KRaft: where its KRaft metadata log is, the release that runs the
    migration and how far ZooKeeper may trail the log during dual writes; the audit then proves the copy faithful
    (the migration diff)."""

    kraft: KraftConfig
    release: MigrationRelease = "3.9"
    max_lag_records: Annotated[StrictInt, Field(ge=0)] = 10_000
    max_lag: Duration = timedelta(minutes=5)
    # An Airflow connection whose password is the brokers' password.encoder.secret: the snapshot decodes their
    # encoded password configs with it so that the diff compares them by fingerprint (never the secret itself here).
    password_encoder_secret_conn_id: Text | None = None


class HistoryConfig(_Section):
    """The history of each cluster's ZooKeeper files the DAG builds: whether it does, and the floor of a listed
    interval."""

    enabled: StrictBool
    min_interval: Duration


def _validate_znode_path(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/"):
        raise PydanticCustomError("events", "; a watched path is a znode path such as /brokers")
    return value


ZNodePath = Annotated[str, BeforeValidator(_validate_znode_path)]


class EventsConfig(_Section):
    """Event-driven audits: a watch per cluster (in Airflow's triggerer) on the znodes the checks read; a change
    starts an audit of that cluster once the cluster has been quiet for ``quiet_period`` (at most ``max_delay``
    after the first change); through the Spark Connect server of ``spark_connect_conn_id`` when set."""

    enabled: StrictBool
    quiet_period: Duration
    max_delay: Duration
    paths: Annotated[tuple[ZNodePath, ...], BeforeValidator(_none_as_empty)]
    ignore: Annotated[tuple[Text, ...], BeforeValidator(_none_as_empty)]
    recheck_poll: Duration
    spark_connect_conn_id: Text | None = None

    @field_validator("max_delay")
    @classmethod
    def _not_before_the_quiet_period(cls, value: timedelta, info: ValidationInfo) -> timedelta:
        quiet = info.data.get("quiet_period")
        if quiet is not None and value < quiet:
            raise PydanticCustomError("events", "; it must be at least quiet_period ({quiet})",
                                      {"quiet": f"{quiet.total_seconds():g}s"})
        return value

    @field_validator("paths")
    @classmethod
    def _some_path_when_enabled(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if info.data.get("enabled") and not value:
            raise PydanticCustomError("events", "; enabled events need at least one watched path")
        return value


class ClusterConfig(_Section):
    """One audited cluster: its name, its ZooKeeper connection (or files, or its KRaft metadata log) and what it
    overrides."""

    name: ClusterName
    zk_conn_id: Text | None = None
    files: FilesConfig | None = None
    kraft: KraftConfig | None = None
    migration: ClusterMigrationConfig | None = None
    overrides: dict[str, Any] = Field(default_factory=dict)


# What AuditConfig's list sections hold (null: an empty list).
Suppressions = Annotated[tuple[Suppression, ...], BeforeValidator(_none_as_empty)]
Clusters = Annotated[tuple[ClusterConfig, ...], BeforeValidator(_none_as_empty)]
