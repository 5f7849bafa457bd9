"""/config/<type>/<name> entity configs (secrets redacted) and /config/changes notifications."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StringType

from kafka_zk_audit.contract.secrets import (
    ENCRYPTED_VALUE,
    FINGERPRINT_PREFIX,
    FINGERPRINTED_DATA,
    FINGERPRINTED_VALUES,
    SECRET_CONFIG_KEY,
)

from . import json_schemas, kinds
from .common import (
    Parse,
    accepted,
    field_of,
    json_reason,
    name_part,
    only_when,
    own,
    scope,
    seq_of_path,
    text_reason,
    version_reason,
)

REDACTED = "[redacted]"
# SCRAM credentials (users/<u>), Kafka's password configs and keys named like a secret. Values holding
# "encryptedPassword" are dynamic broker passwords: Kafka writes "k:v,…" (encryptedPassword:<b64>).
SECRET_KEY = SECRET_CONFIG_KEY
CONFIG_VERSIONS = (1,)
CHANGE_VERSIONS = (1, 2)
USERS_CLIENTS = "users/clients"
# A 0.8 change notification: the topic name as a JSON string literal, e.g. "my-topic" with quotes.
JSON_STRING = r'^\s*"([^"\\]*)"\s*$'
USER_CLIENT_ENTITY = r"^users/([^/]+)/clients/([^/]+)$"
ENTITY_PATH = r"^([^/]+)/(.+)$"


def redact(config: Column, fingerprinted: Column | None = None) -> Column:
    """The config map with secret values replaced by ``[redacted]``.

    The snapshot's fingerprints (rows with ``fingerprinted`` = ``values``) stay: they reveal nothing and
    show when a secret changed.
    """
    values_fingerprinted = F.lit(False) if fingerprinted is None else fingerprinted.eqNullSafe(FINGERPRINTED_VALUES)
    return F.transform_values(
        config,
        lambda key, value: F.when(values_fingerprinted & value.startswith(FINGERPRINT_PREFIX), value)
        .when(key.rlike(SECRET_KEY) | value.rlike(ENCRYPTED_VALUE), F.lit(REDACTED))
        .otherwise(value),
    )


def _configs() -> Parse:
    user_client = F.col("path").rlike(kinds.CONFIG_USER_CLIENT_PATH)
    entity_type = F.when(user_client, F.lit(USERS_CLIENTS)).otherwise(name_part(kinds.CONFIG_PATH, 1))
    entity_name = F.when(
        user_client,
        F.concat_ws(
            "/", name_part(kinds.CONFIG_USER_CLIENT_PATH, 1), name_part(kinds.CONFIG_USER_CLIENT_PATH, 2)
        ),
    ).otherwise(name_part(kinds.CONFIG_PATH, 2))
    # Data the snapshot replaced whole by a fingerprint: the entity exists, its config is unknown.
    fingerprinted_whole = F.col("fingerprinted").eqNullSafe(FINGERPRINTED_DATA)
    # Kafka reads absent or empty data as an empty config (e.g. /config/users/<u> above its clients).
    has_data = F.col("text").isNotNull() & (F.col("text") != "") & ~fingerprinted_whole
    checks = [
        text_reason(data_required=False),
        F.when(has_data, json_reason(json_schemas.CONFIG)),
        F.when(has_data, version_reason(CONFIG_VERSIONS, required=False)),
    ]
    empty = F.create_map().cast(MapType(StringType(), StringType()))
    values = [
        own("entity_type").alias("entity_type"),
        own("entity_name").alias("entity_name"),
        F.when(has_data, field_of("version")).alias("version"),
        F.when(fingerprinted_whole, F.lit(None))
        .when(has_data, redact(field_of("config"), F.col("fingerprinted")))
        .otherwise(empty)
        .alias("config"),
    ]
    return Parse((kinds.CONFIG,), "configs", checks, values, json=json_schemas.CONFIG,
                 derived={"entity_type": entity_type, "entity_name": entity_name})


def _config_changes() -> Parse:
    """Three formats: 0.8 JSON string (topic name), v1 entity_type/entity_name, v2 entity_path."""
    text = F.col("text")
    is_string = text.rlike(JSON_STRING)
    version = field_of("version")
    entity_path = field_of("entity_path")
    json_checks = [
        json_reason(json_schemas.CONFIG_CHANGE),
        version_reason(CHANGE_VERSIONS, required=True),
        F.when((version == 1) & field_of("entity_type").isNull(), F.lit("missing field entity_type")),
        F.when((version == 1) & field_of("entity_name").isNull(), F.lit("missing field entity_name")),
        F.when((version == 2) & entity_path.isNull(), F.lit("missing field entity_path")),
        F.when((version == 2) & ~entity_path.rlike(ENTITY_PATH), F.lit("entity_path is not <type>/<name>")),
    ]
    checks = [text_reason(), *only_when(~is_string, json_checks)]

    user_client = entity_path.rlike(USER_CLIENT_ENTITY)
    v2_type = F.when(user_client, F.lit(USERS_CLIENTS)).otherwise(
        F.regexp_extract(entity_path, ENTITY_PATH, 1)
    )
    v2_name = F.when(
        user_client,
        F.concat_ws(
            "/",
            F.regexp_extract(entity_path, USER_CLIENT_ENTITY, 1),
            F.regexp_extract(entity_path, USER_CLIENT_ENTITY, 2),
        ),
    ).otherwise(F.regexp_extract(entity_path, ENTITY_PATH, 2))
    topic_name = F.regexp_extract(text, JSON_STRING, 1)

    def by_format(v0: Column, v1: Column, v2: Column) -> Column:
        return F.when(is_string, v0).when(version == 1, v1).otherwise(v2)

    entity_type = by_format(F.lit("topics"), field_of("entity_type"), v2_type)
    entity_name = by_format(topic_name, field_of("entity_name"), v2_name)
    values = [
        seq_of_path().alias("seq"),
        by_format(F.lit("v0_topic_string"), F.lit("v1"), F.lit("v2")).alias("format"),
        F.when(~is_string, version).alias("version"),
        entity_type.alias("entity_type"),
        entity_name.alias("entity_name"),
        F.when(is_string | (version == 1), F.concat_ws("/", entity_type, entity_name))
        .otherwise(entity_path)
        .alias("entity_path"),
    ]
    return Parse((kinds.CONFIG_CHANGE,), "config_changes", checks, values, json=json_schemas.CONFIG_CHANGE)


def parses() -> list[Parse]:
    """Entity configs (``configs`` struct) and change notifications (``config_changes`` struct)."""
    with scope(kinds.CONFIG):
        configs = _configs()
    with scope(kinds.CONFIG_CHANGE):
        changes = _config_changes()
    return [configs, changes]


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """configs and config_changes."""
    return {
        "configs": accepted(parsed, "configs"),
        "config_changes": accepted(parsed, "config_changes"),
    }
