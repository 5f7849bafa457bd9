"""Cluster-wide singletons: /controller, /controller_epoch, /cluster/id, /feature, /migration."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    DECIMAL_INT,
    Parse,
    accepted,
    document_reasons,
    field_of,
    json_reason,
    lenient_long,
    only_when,
    scope,
    text_reason,
    to_int,
    version_reason,
)

CONTROLLER_VERSIONS = (1, 2)
FEATURE_VERSIONS = (1, 2)
FEATURE_STATUSES = (0, 1)
MIGRATION_VERSIONS = (0,)
CLUSTER_ID_VERSION = "1"


def _controller() -> Parse:
    """/controller: JSON v1/v2, or the legacy bare broker id (version null)."""
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
    values = [
        F.when(bare, to_int(text)).otherwise(field_of("brokerid")).alias("broker_id"),
        F.when(~bare, field_of("version")).alias("version"),
        F.when(~bare, lenient_long(field_of("timestamp"))).alias("timestamp"),
        F.when(~bare, field_of("kraftControllerEpoch")).alias("kraft_controller_epoch"),
        F.col("ephemeral_owner").alias("session"),
        (F.col("ephemeral_owner") != 0).alias("is_ephemeral"),
    ]
    return Parse((kinds.CONTROLLER,), "controller", checks, values, json=json_schemas.CONTROLLER)


def _controller_epoch() -> Parse:
    """/controller_epoch: a bare decimal int; data_version is the stat version (the fencing token)."""
    epoch = to_int(F.col("text"))
    checks = [text_reason(), F.when(epoch.isNull(), F.lit("not an integer"))]
    values = [epoch.alias("epoch"), F.col("version").alias("data_version")]
    return Parse((kinds.CONTROLLER_EPOCH,), "controller_epoch", checks, values)


def _cluster_id() -> Parse:
    """/cluster/id: {"version":"1","id":…}; version is kept as the string it is."""
    version = field_of("version")
    unknown = F.when(
        version.isNotNull() & (version != CLUSTER_ID_VERSION), F.concat(F.lit("unknown version "), version)
    )
    checks = [text_reason(), json_reason(json_schemas.CLUSTER_ID), unknown]
    values = [field_of("id").alias("cluster_id"), version.alias("version")]
    return Parse((kinds.CLUSTER_ID,), "cluster_id", checks, values, json=json_schemas.CLUSTER_ID)


def _feature() -> Parse:
    """/feature v1/v2; features stays the JSON text of the "features" object."""
    status, features = field_of("status"), field_of("features")
    checks = [
        *document_reasons(json_schemas.FEATURE, FEATURE_VERSIONS, version_required=True),
        F.when(~status.isin(*FEATURE_STATUSES), F.concat(F.lit("unknown status "), status.cast("string"))),
        F.when(~F.ltrim(features).startswith("{"), F.lit("features is not an object")),
    ]
    values = [field_of("version").alias("version"), status.alias("status"), features.alias("features")]
    return Parse((kinds.FEATURE,), "feature", checks, values, json=json_schemas.FEATURE)


def _migration() -> Parse:
    """/migration: version 0 only (Kafka rejects any other)."""
    checks = [
        *document_reasons(json_schemas.MIGRATION, MIGRATION_VERSIONS, version_required=True),
    ]
    names = ("kraft_controller_id", "kraft_controller_epoch", "kraft_metadata_offset", "kraft_metadata_epoch")
    values = [
        field_of("version").alias("version"),
        *(field_of(name).alias(name) for name in names),
        F.col("mtime"),  # the last dual write (every KRaft metadata batch updates /migration)
    ]
    return Parse((kinds.MIGRATION,), "migration", checks, values, json=json_schemas.MIGRATION)


SINGLETON_TABLES = ("controller", "controller_epoch", "cluster_id", "feature", "migration")


def parses() -> list[Parse]:
    """One parse per singleton kind, its struct named after its table."""
    built = []
    for kind, part in ((kinds.CONTROLLER, _controller), (kinds.CONTROLLER_EPOCH, _controller_epoch),
                       (kinds.CLUSTER_ID, _cluster_id), (kinds.FEATURE, _feature), (kinds.MIGRATION, _migration)):
        with scope(kind):
            built.append(part())
    return built


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """controller, controller_epoch, cluster_id, feature and migration."""
    return {table: accepted(parsed, table) for table in SINGLETON_TABLES}
