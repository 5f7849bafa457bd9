"""ACLs (literal and prefixed), ACL change notifications and delegation-token metadata."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.secrets import FINGERPRINTED_DATA

from . import json_schemas, kinds
from .common import (
    accepted,
    document_reasons,
    field_of,
    fields_of,
    name_part,
    only_when,
    origin,
    parse_result,
    seq_of_path,
    text_reason,
    with_json,
    with_reason,
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


def _acls(znodes: DataFrame) -> DataFrame:
    """/kafka-acl/<Type>/<name> and /kafka-acl-extended/<pattern>/<Type>/<name>, with their entries."""
    rows = znodes.filter(F.col("kind").isin(kinds.ACL, kinds.ACL_EXTENDED))
    extended = F.col("kind") == kinds.ACL_EXTENDED
    rows = with_json(rows, json_schemas.ACL, retry_backslashes=True)
    incomplete = F.exists(
        field_of("acls"),
        lambda entry: reduce(operator.or_, (entry[name].isNull() for name in ACL_ENTRY_FIELDS)),
    )
    checks = [
        *document_reasons(json_schemas.ACL, ACL_VERSIONS, version_required=True),
        F.when(incomplete, F.lit("acl entry without principal, permissionType, operation or host")),
    ]
    return parse_result(
        with_reason(rows, checks),
        "acls",
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
    )


def _literal_acl_changes(znodes: DataFrame) -> DataFrame:
    """/kafka-acl-changes: plain text ``Type:name`` (``TOPIC:name`` from 2.5)."""
    rows = znodes.filter(F.col("kind") == kinds.ACL_CHANGE)
    checks = [text_reason(), F.when(~F.col("text").rlike(LITERAL_CHANGE), F.lit("not ResourceType:name"))]
    return parse_result(
        with_reason(rows, checks),
        "acl_changes",
        F.lit("literal").alias("store"),
        seq_of_path().alias("seq"),
        pascal_case(F.regexp_extract(F.col("text"), LITERAL_CHANGE, 1)).alias("resource_type"),
        F.regexp_extract(F.col("text"), LITERAL_CHANGE, 2).alias("resource_name"),
        F.lit("literal").alias("pattern_type"),
    )


def _extended_acl_changes(znodes: DataFrame) -> DataFrame:
    """/kafka-acl-extended-changes: {"version":1,"resourceType":…,"name":…,"patternType":"PREFIXED"}."""
    rows = with_json(
        znodes.filter(F.col("kind") == kinds.ACL_EXTENDED_CHANGE), json_schemas.ACL_EXTENDED_CHANGE
    )
    checks = [
        *document_reasons(json_schemas.ACL_EXTENDED_CHANGE, ACL_CHANGE_VERSIONS, version_required=True),
    ]
    return parse_result(
        with_reason(rows, checks),
        "acl_changes",
        F.lit("extended").alias("store"),
        seq_of_path().alias("seq"),
        pascal_case(field_of("resourceType")).alias("resource_type"),
        field_of("name").alias("resource_name"),
        F.lower(field_of("patternType")).alias("pattern_type"),
    )


def _delegation_tokens(znodes: DataFrame) -> DataFrame:
    """/delegation_token/tokens/<id>: v1 or v3 (adds tokenRequester); metadata only.

    When the snapshot replaced the token's data by a fingerprint, the token is listed by id alone.
    """
    rows = with_json(znodes.filter(F.col("kind") == kinds.DELEGATION_TOKEN), json_schemas.DELEGATION_TOKEN)
    readable = ~F.col("fingerprinted").eqNullSafe(FINGERPRINTED_DATA)
    checks = only_when(
        readable, document_reasons(json_schemas.DELEGATION_TOKEN, TOKEN_VERSIONS, version_required=True)
    )
    return parse_result(
        with_reason(rows, checks),
        "delegation_tokens",
        name_part(kinds.DELEGATION_TOKEN_PATH).alias("token_id"),
        *fields_of("version", "owner"),
        field_of("tokenRequester").alias("token_requester"),
        field_of("renewers").alias("renewers"),
        field_of("issueTimestamp").alias("issue_timestamp"),
        field_of("maxTimestamp").alias("max_timestamp"),
        field_of("expiryTimestamp").alias("expiry_timestamp"),
    )


def _token_changes(znodes: DataFrame) -> DataFrame:
    """/delegation_token/token_changes: the token id as text; only non-text data is malformed."""
    rows = with_reason(znodes.filter(F.col("kind") == kinds.TOKEN_CHANGE), [text_reason()])
    return parse_result(rows, "token_changes", F.col("text").alias("token_id"))


def parse(znodes: DataFrame) -> list[DataFrame]:
    """ACL nodes, ACL changes of both stores, delegation tokens and token changes."""
    return [
        _acls(znodes),
        _literal_acl_changes(znodes),
        _extended_acl_changes(znodes),
        _delegation_tokens(znodes),
        _token_changes(znodes),
    ]


def tables(parsed: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
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
