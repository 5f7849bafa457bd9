"""Sequential notification children: the generic notifications table, ISR changes, log-dir events."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    Parse,
    accepted,
    document_reasons,
    field_of,
    origin,
    scope,
    seq_of_path,
)

ISR_CHANGE_VERSIONS = (1,)
LOG_DIR_EVENT_VERSIONS = (1,)


def _isr_changes() -> Parse:
    """{"version":1,"partitions":[{"topic":…,"partition":…},…]}."""
    incomplete = F.exists(field_of("partitions"), lambda e: e["topic"].isNull() | e["partition"].isNull())
    checks = [
        *document_reasons(json_schemas.ISR_CHANGE, ISR_CHANGE_VERSIONS, version_required=False),
        F.when(incomplete, F.lit("partition entry without topic or partition")),
    ]
    values = [seq_of_path().alias("seq"), field_of("partitions").alias("partitions")]
    return Parse((kinds.ISR_CHANGE,), "isr_change_notifications", checks, values, json=json_schemas.ISR_CHANGE)


def _log_dir_events() -> Parse:
    """{"version":1,"broker":<id>,"event":1}."""
    checks = [
        *document_reasons(json_schemas.LOG_DIR_EVENT, LOG_DIR_EVENT_VERSIONS, version_required=False),
    ]
    values = [
        seq_of_path().alias("seq"),
        field_of("version").alias("version"),
        field_of("broker").alias("broker_id"),
        field_of("event").alias("event"),
    ]
    return Parse((kinds.LOG_DIR_EVENT,), "log_dir_event_notifications", checks, values,
                 json=json_schemas.LOG_DIR_EVENT)


def notifications_table(classified: DataFrame) -> DataFrame:
    """Every sequential child of every notification parent, whatever its data (for backlog checks)."""
    return classified.filter(F.col("kind").isin(*kinds.NOTIFICATION_KINDS)).select(
        "kind",
        F.regexp_extract(F.col("path"), "^(.*)/[^/]+$", 1).alias("parent"),
        F.regexp_extract(F.col("path"), "([^/]+)$", 1).alias("name"),
        seq_of_path().alias("seq"),
        *origin(),
    )


def parses() -> list[Parse]:
    """ISR-change and log-dir-event notifications (the other notification kinds belong to their families)."""
    with scope(kinds.ISR_CHANGE):
        isr_changes = _isr_changes()
    with scope(kinds.LOG_DIR_EVENT):
        log_dir_events = _log_dir_events()
    return [isr_changes, log_dir_events]


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """isr_change_notifications (one row per listed partition) and log_dir_event_notifications."""
    isr_changes = accepted(parsed, "isr_change_notifications")
    exploded = isr_changes.select("seq", F.explode("partitions").alias("entry"), *origin())
    return {
        "isr_change_notifications": exploded.select(
            "seq", F.col("entry.topic").alias("topic"), F.col("entry.partition").alias("partition"), *origin()
        ),
        "log_dir_event_notifications": accepted(parsed, "log_dir_event_notifications"),
    }
