"""Sequential notification children: the generic notifications table, ISR changes, log-dir events."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    accepted,
    document_reasons,
    field_of,
    origin,
    parse_result,
    seq_of_path,
    with_json,
    with_reason,
)

ISR_CHANGE_VERSIONS = (1,)
LOG_DIR_EVENT_VERSIONS = (1,)


def _isr_changes(znodes: DataFrame) -> DataFrame:
    """{"version":1,"partitions":[{"topic":…,"partition":…},…]}."""
    rows = with_json(znodes.filter(F.col("kind") == kinds.ISR_CHANGE), json_schemas.ISR_CHANGE)
    incomplete = F.exists(field_of("partitions"), lambda e: e["topic"].isNull() | e["partition"].isNull())
    checks = [
        *document_reasons(json_schemas.ISR_CHANGE, ISR_CHANGE_VERSIONS, version_required=False),
        F.when(incomplete, F.lit("partition entry without topic or partition")),
    ]
    return parse_result(
        with_reason(rows, checks),
        "isr_change_notifications",
        seq_of_path().alias("seq"),
        field_of("partitions").alias("partitions"),
    )


def _log_dir_events(znodes: DataFrame) -> DataFrame:
    """{"version":1,"broker":<id>,"event":1}."""
    rows = with_json(znodes.filter(F.col("kind") == kinds.LOG_DIR_EVENT), json_schemas.LOG_DIR_EVENT)
    checks = [
        *document_reasons(json_schemas.LOG_DIR_EVENT, LOG_DIR_EVENT_VERSIONS, version_required=False),
    ]
    return parse_result(
        with_reason(rows, checks),
        "log_dir_event_notifications",
        seq_of_path().alias("seq"),
        field_of("version").alias("version"),
        field_of("broker").alias("broker_id"),
        field_of("event").alias("event"),
    )


def notifications_table(classified: DataFrame) -> DataFrame:
    """Every sequential child of every notification parent, whatever its data (for backlog checks)."""
    return classified.filter(F.col("kind").isin(*kinds.NOTIFICATION_KINDS)).select(
        "kind",
        F.regexp_extract(F.col("path"), "^(.*)/[^/]+$", 1).alias("parent"),
        F.regexp_extract(F.col("path"), "([^/]+)$", 1).alias("name"),
        seq_of_path().alias("seq"),
        *origin(),
    )


def parse(znodes: DataFrame) -> list[DataFrame]:
    """ISR-change and log-dir-event notifications (the other notification kinds belong to their families)."""
    return [_isr_changes(znodes), _log_dir_events(znodes)]


def tables(parsed: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """isr_change_notifications (one row per listed partition) and log_dir_event_notifications."""
    isr_changes = accepted(parsed, "isr_change_notifications")
    exploded = isr_changes.select("seq", F.explode("partitions").alias("entry"), *origin())
    return {
        "isr_change_notifications": exploded.select(
            "seq", F.col("entry.topic").alias("topic"), F.col("entry.partition").alias("partition"), *origin()
        ),
        "log_dir_event_notifications": accepted(parsed, "log_dir_event_notifications"),
    }
