"""Cluster-wide singletons: /controller, /controller_epoch, /cluster/id, /feature, /migration."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    DECIMAL_INT,
    accepted,
    document_reasons,
    field_of,
    json_reason,
    lenient_long,
    only_when,
    parse_result,
    text_reason,
    to_int,
    version_reason,
    with_json,
    with_reason,
)

CONTROLLER_VERSIONS = (1, 2)
FEATURE_VERSIONS = (1, 2)
FEATURE_STATUSES = (0, 1)
MIGRATION_VERSIONS = (0,)
CLUSTER_ID_VERSION = "1"


def _of_kind(znodes: DataFrame, kind: str) -> DataFrame:
    return znodes.filter(F.col("kind") == kind)


def _controller(znodes: DataFrame) -> DataFrame:
    """/controller: JSON v1/v2, or the legacy bare broker id (version null)."""
    rows = with_json(_of_kind(znodes, kinds.CONTROLLER), json_schemas.CONTROLLER)
    text = F.col("text")
    bare = text.rlike(DECIMAL_INT)
    checks = [
        text_reason(),
        F.when(bare & to_int(text).isNull(), F.lit("broker id out of range")),
        *only_when(
            ~bare,
            [
                json_reason(json_schemas.CONTROLLER),
                version_reason(CONTROLLER_VERSIONS, required=False),
            ],
        ),
    ]
    rows = with_reason(rows, checks)
    return parse_result(
        rows,
        "controller",
        F.when(bare, to_int(text)).otherwise(field_of("brokerid")).alias("broker_id"),
        F.when(~bare, field_of("version")).alias("version"),
        F.when(~bare, lenient_long(field_of("timestamp"))).alias("timestamp"),
        F.when(~bare, field_of("kraftControllerEpoch")).alias("kraft_controller_epoch"),
        F.col("ephemeral_owner").alias("session"),
        (F.col("ephemeral_owner") != 0).alias("is_ephemeral"),
    )


def _controller_epoch(znodes: DataFrame) -> DataFrame:
    """/controller_epoch: a bare decimal int; data_version is the stat version (the fencing token)."""
    rows = _of_kind(znodes, kinds.CONTROLLER_EPOCH)
    epoch = to_int(F.col("text"))
    rows = with_reason(rows, [text_reason(), F.when(epoch.isNull(), F.lit("not an integer"))])
    return parse_result(
        rows, "controller_epoch", epoch.alias("epoch"), F.col("version").alias("data_version")
    )


def _cluster_id(znodes: DataFrame) -> DataFrame:
    """/cluster/id: {"version":"1","id":…}; version is kept as the string it is."""
    rows = with_json(_of_kind(znodes, kinds.CLUSTER_ID), json_schemas.CLUSTER_ID)
    version = field_of("version")
    unknown = F.when(
        version.isNotNull() & (version != CLUSTER_ID_VERSION), F.concat(F.lit("unknown version "), version)
    )
    rows = with_reason(rows, [text_reason(), json_reason(json_schemas.CLUSTER_ID), unknown])
    return parse_result(rows, "cluster_id", field_of("id").alias("cluster_id"), version.alias("version"))


def _feature(znodes: DataFrame) -> DataFrame:
    """/feature v1/v2; features stays the JSON text of the "features" object."""
    rows = with_json(_of_kind(znodes, kinds.FEATURE), json_schemas.FEATURE)
    status, features = field_of("status"), field_of("features")
    checks = [
        *document_reasons(json_schemas.FEATURE, FEATURE_VERSIONS, version_required=True),
        F.when(~status.isin(*FEATURE_STATUSES), F.concat(F.lit("unknown status "), status.cast("string"))),
        F.when(~F.ltrim(features).startswith("{"), F.lit("features is not an object")),
    ]
    rows = with_reason(rows, checks)
    return parse_result(
        rows,
        "feature",
        field_of("version").alias("version"),
        status.alias("status"),
        features.alias("features"),
    )


def _migration(znodes: DataFrame) -> DataFrame:
    """/migration: version 0 only (Kafka rejects any other)."""
    rows = with_json(_of_kind(znodes, kinds.MIGRATION), json_schemas.MIGRATION)
    checks = [
        *document_reasons(json_schemas.MIGRATION, MIGRATION_VERSIONS, version_required=True),
    ]
    rows = with_reason(rows, checks)
    names = ("kraft_controller_id", "kraft_controller_epoch", "kraft_metadata_offset", "kraft_metadata_epoch")
    return parse_result(
        rows,
        "migration",
        field_of("version").alias("version"),
        *(field_of(name).alias(name) for name in names),
        F.col("mtime"),  # the last dual write (every KRaft metadata batch updates /migration)
    )


SINGLETON_TABLES = ("controller", "controller_epoch", "cluster_id", "feature", "migration")


def parse(znodes: DataFrame) -> list[DataFrame]:
    """One parse result per singleton kind, its struct named after its table."""
    return [part(znodes) for part in (_controller, _controller_epoch, _cluster_id, _feature, _migration)]


def tables(parsed: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """controller, controller_epoch, cluster_id, feature and migration."""
    return {table: accepted(parsed, table) for table in SINGLETON_TABLES}
