"""The audit settings: SLAs, backlog limits, severity overrides, suppressions, alerts, the gate, the snapshot.

``models`` holds a pydantic model per section of the file, ``loader`` the whole (``AuditConfig``) and how a file
is read and checked (every problem with its key, file and line), ``durations`` the '90s'/'1h30m' values and
``globs`` the suppressions' patterns. Import the names below from here.
"""

from kafka_zk_audit.contract.settings.durations import format_duration, seconds_text
from kafka_zk_audit.contract.settings.globs import glob_to_regex
from kafka_zk_audit.contract.settings.loader import (
    DEFAULT_CONFIG_RESOURCE,
    DEFAULT_SOURCE,
    AuditConfig,
    SettingsError,
    load_config,
    parse_config,
    parse_duration,
    read_settings_text,
)
from kafka_zk_audit.contract.settings.models import (
    CLUSTER_OVERRIDABLE,
    AlertRoute,
    AlertsConfig,
    ClusterConfig,
    ClusterMigrationConfig,
    DriftConfig,
    EventsConfig,
    FilesConfig,
    FleetConfig,
    GateConfig,
    HistoryConfig,
    MigrationConfig,
    NotificationBacklogConfig,
    RetentionConfig,
    SlaConfig,
    SnapshotConfig,
    Suppression,
)

__all__ = [
    "CLUSTER_OVERRIDABLE",
    "DEFAULT_CONFIG_RESOURCE",
    "DEFAULT_SOURCE",
    "AlertRoute",
    "AlertsConfig",
    "AuditConfig",
    "ClusterConfig",
    "ClusterMigrationConfig",
    "DriftConfig",
    "EventsConfig",
    "FilesConfig",
    "FleetConfig",
    "GateConfig",
    "HistoryConfig",
    "MigrationConfig",
    "NotificationBacklogConfig",
    "RetentionConfig",
    "SettingsError",
    "SlaConfig",
    "SnapshotConfig",
    "Suppression",
    "format_duration",
    "glob_to_regex",
    "load_config",
    "parse_config",
    "parse_duration",
    "read_settings_text",
    "seconds_text",
]
