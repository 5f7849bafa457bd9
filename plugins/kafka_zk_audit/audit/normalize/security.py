"""ACLs (literal and prefixed), ACL change notifications and delegation-token metadata."""

from __future__ import annotations

import operator
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.secrets import FINGERPRINTED_DATA

from . import json_schemas, kinds
from .common import (
    Parse,
    accepted,
    document_reasons,
    field_of,
    fields_of,
    name_part,
    only_when,
    origin,
    scope,
    seq_of_path,
    text_reason,
)

ACL_VERSIONS = (1,)
ACL_CHANGE_VERSIONS = (1,)
TOKEN_VERSIONS = (1, 3)
LITERAL_CHANGE = r"(?s)^([^:]+):(.*)$"
ACL_ENTRY_FIELDS = ("principal", "permissionType", "operation", "host")


def pascal_case(resource_type: Column) -> Column:
    """Kafka 2.5+ writes enum names (TRANSACTIONAL_ID); the stores' paths use PascalCase (TransactionalId)."""
    words = F.transform(F.split(F.lower(resource_type), "_"), lambda word: F.initcap(word))
    return F.when(resource_type == F.upper(resource_type), F.array_join(words, "")).otherwise(resource_type)


def _acls() -> Parse:
    """/kafka-acl/<Type>/<name> and /kafka-acl-extended/<pattern>/<Type>/<name>, with their entries."""
    extended = F.col("kind") == kinds.ACL_EXTENDED
    incomplete = F.exists(
        field_of("acls"),
        lambda entry: reduce(operator.or_, (entry[name].isNull() for name in ACL_ENTRY_FIELDS)),
    )
    checks = [
        *document_reasons(json_schemas.ACL, ACL_VERSIONS, version_required=True),
        F.when(incomplete, F.lit("acl entry without principal, permissionType, operation or host")),
    ]
    values = [
        F.when(extended, F.lower(name_part(kinds.ACL_EXTENDED_PATH, 1)))
        .otherwise(F.lit("literal"))
        .alias("pattern_type"),
        F.when(extended, name_part(kinds.ACL_EXTENDED_PATH, 2))
        .otherwise(name_part(kinds.ACL_PATH, 1))
        .alias("resource_type"),
        F.when(extended, name_part(kinds.ACL_EXTENDED_PATH, 3))
        .otherwise(name_part(kinds.ACL_PATH, 2))
        .alias("resource_name"),
        field_of("acls").alias("entries"),
    ]
    return Parse((kinds.ACL, kinds.ACL_EXTENDED), "acls", checks, values, json=json_schemas.ACL,
                 retry_backslashes=True)


def _literal_acl_changes() -> Parse:
    """/kafka-acl-changes: plain text ``Type:name`` (``TOPIC:name`` from 2.5)."""
    checks = [text_reason(), F.when(~F.col("text").rlike(LITERAL_CHANGE), F.lit("not ResourceType:name"))]
    values = [
        F.lit("literal").alias("store"),
        seq_of_path().alias("seq"),
        pascal_case(F.regexp_extract(F.col("text"), LITERAL_CHANGE, 1)).alias("resource_type"),
        F.regexp_extract(F.col("text"), LITERAL_CHANGE, 2).alias("resource_name"),
        F.lit("literal").alias("pattern_type"),
    ]
    return Parse((kinds.ACL_CHANGE,), "acl_changes", checks, values)


def _extended_acl_changes() -> Parse:
    """/kafka-acl-extended-changes: {"version":1,"resourceType":…,"name":…,"patternType":"PREFIXED"}."""
    checks = [
        *document_reasons(json_schemas.ACL_EXTENDED_CHANGE, ACL_CHANGE_VERSIONS, version_required=True),
    ]
    values = [
        F.lit("extended").alias("store"),
        seq_of_path().alias("seq"),
        pascal_case(field_of("resourceType")).alias("resource_type"),
        field_of("name").alias("resource_name"),
        F.lower(field_of("patternType")).alias("pattern_type"),
    ]
    return Parse((kinds.ACL_EXTENDED_CHANGE,), "acl_changes", checks, values, json=json_schemas.ACL_EXTENDED_CHANGE)


def _delegation_tokens() -> Parse:
    """/delegation_token/tokens/<id>: v1 or v3 (adds tokenRequester); metadata only.

    When the snapshot replaced the token's data by a fingerprint, the token is listed by id alone.
    """
    readable = ~F.col("fingerprinted").eqNullSafe(FINGERPRINTED_DATA)
    checks = only_when(
        readable, document_reasons(json_schemas.DELEGATION_TOKEN, TOKEN_VERSIONS, version_required=True)
    )
    values = [
        name_part(kinds.DELEGATION_TOKEN_PATH).alias("token_id"),
        *fields_of("version", "owner"),
        field_of("tokenRequester").alias("token_requester"),
        field_of("renewers").alias("renewers"),
        field_of("issueTimestamp").alias("issue_timestamp"),
        field_of("maxTimestamp").alias("max_timestamp"),
        field_of("expiryTimestamp").alias("expiry_timestamp"),
    ]
    return Parse((kinds.DELEGATION_TOKEN,), "delegation_tokens", checks, values, json=json_schemas.DELEGATION_TOKEN)


def _token_changes() -> Parse:
    """/delegation_token/token_changes: the token id as text; only non-text data is malformed."""
    return Parse((kinds.TOKEN_CHANGE,), "token_changes", [text_reason()], [F.col("text").alias("token_id")])


def parses() -> list[Parse]:
    """ACL nodes, ACL changes of both stores, delegation tokens and token changes."""
    built = []
    for kind, part in ((kinds.ACL, _acls), (kinds.ACL_CHANGE, _literal_acl_changes),
                       (kinds.ACL_EXTENDED_CHANGE, _extended_acl_changes),
                       (kinds.DELEGATION_TOKEN, _delegation_tokens), (kinds.TOKEN_CHANGE, _token_changes)):
        with scope(kind):
            built.append(part())
    return built


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """acls (one row per ACL entry), acl_changes and delegation_tokens."""
    acl_nodes = accepted(parsed, "acls")
    exploded = acl_nodes.select(
        "pattern_type", "resource_type", "resource_name", F.explode("entries").alias("acl"), *origin()
    )
    acls = exploded.select(
        "pattern_type",
        "resource_type",
        "resource_name",
        F.col("acl.principal").alias("principal"),
        F.col("acl.permissionType").alias("permission_type"),
        F.col("acl.operation").alias("operation"),
        F.col("acl.host").alias("host"),
        *origin(),
    )
    return {
        "acls": acls,
        "acl_changes": accepted(parsed, "acl_changes"),
        "delegation_tokens": accepted(parsed, "delegation_tokens"),
    }
