"""Audit tables for the gate: one row per audited thing, one boolean column per check of its entity.

Each column is named exactly after its check id and is True when the findings hold that check for the
row's subject (so the gate and the findings can never disagree), unless the finding is explained: the
expectation for every such column is "all False". Rows are the entity's own rows plus any finding
subject that has none, so a failing row always names its topic / partition / group / broker / znode.

Keyed like every frame of the audit: each table holds the rows of every snapshot of the batch, its subjects
grouped within their snapshot; the controller table has exactly one row per snapshot of ``snapshots`` (a
frame of their keys), and the znodes table a placeholder row for a snapshot without a malformed znode.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.contract.catalogue import CHECK_IDS, CHECKS, ENTITIES
from kafka_zk_audit.contract.schemas import INDEX_COLUMNS, KEY

# The subject columns that identify a row of each entity (compared null-safely with the findings').
ENTITY_KEYS: dict[str, tuple[str, ...]] = {
    "partitions": ("topic", "partition"),
    "controller": (),
    "brokers": ("broker_id",),
    "topics": ("topic",),
    "admin": ("path", "topic", "partition"),
    "consumer_owners": ("group_id", "topic", "partition"),
    "offsets": ("group_id", "topic", "partition", "path"),
    "znodes": ("path",),
}
CONTROLLER_PATH = "/controller"


def entity_checks(entity: str) -> tuple[str, ...]:
    """The check ids (= boolean column names) of an entity, in catalogue order."""
    return tuple(check.check_id for check in CHECKS if check.entity == entity)


def _entity_rows(entity: str, tables: dict[str, DataFrame]) -> DataFrame:
    """The entity's own rows: its key columns plus a few evidence columns (and path)."""
    if entity == "partitions":
        return tables["partitions"].select(KEY, "topic", "partition", "leader", "isr", "replicas", "path")
    if entity == "topics":
        return tables["topics"].select(KEY, "topic", "partition_count", "path")
    if entity == "brokers":
        return tables["brokers"].select(KEY, "broker_id", "host", "port", "is_ephemeral", "path")
    if entity == "admin":
        return tables["admin_markers"].select(KEY, "path", "topic", "partition", "kind", "replicas", "ctime")
    if entity == "consumer_owners":
        return tables["consumer_owners"].groupBy(KEY, "group_id", "topic", "partition").agg(
            F.array_join(F.array_sort(F.collect_list("owner")), ", ").alias("owners"),
            F.min("path").alias("path"),
        )
    if entity == "offsets":
        return tables["consumer_offsets"].select(KEY, "group_id", "topic", "partition", "path", "offset", "raw")
    if entity == "znodes":
        return tables["malformed_znodes"].select(KEY, "path", "kind", "reason")
    raise ValueError(f"no audit rows defined for entity {entity!r}")


def _flag(check_id: str) -> str:
    return f"coalesce(max(check_id = {sql_text.string_literal(check_id)}), false) AS {sql_text.identifier(check_id)}"


def _flagged(findings: DataFrame, checks: tuple[str, ...]) -> DataFrame:
    """The findings of these checks that flag their subject: an explained finding (a known, harmless
    cause, severity info) is reported but never flagged, so the gate does not fail on it."""
    listed = ", ".join(map(sql_text.string_literal, checks))
    return findings.where(f"check_id IN ({listed}) AND NOT coalesce(status = 'explained', false)")


def _with_flags(entity: str, rows: DataFrame, findings: DataFrame) -> DataFrame:
    """The entity's rows and its findings' subjects, one row per subject, one boolean per check.

    Both sides are stacked and grouped by the subject columns (grouping treats nulls as equal, as the
    findings' identity does): one shuffle, where a join would need three. The expressions are SQL text: one JVM
    round trip each.
    """
    keys = ENTITY_KEYS[entity]
    checks = entity_checks(entity)
    q = sql_text.identifier
    evidence = [c for c in rows.columns if c not in keys and c not in ("path", KEY)]
    own = rows.selectExpr(
        KEY, *map(q, keys), "path AS own_path", "CAST(NULL AS STRING) AS subject_path", *map(q, evidence),
        "CAST(NULL AS STRING) AS check_id",
    )
    subjects = _flagged(findings, checks).selectExpr(
        KEY, *map(q, keys), "CAST(NULL AS STRING) AS own_path", "path AS subject_path",
        *[f"{sql_text.cast('NULL', rows.schema[c].dataType)} AS {q(c)}" for c in evidence], "check_id",
    )
    path = [] if "path" in keys else ["coalesce(first(own_path, true), min(subject_path)) AS path"]
    aggregates = [*path, *[f"first({q(c)}, true) AS {q(c)}" for c in evidence], *map(_flag, checks)]
    return own.unionByName(subjects).groupBy(KEY, *keys).agg(*map(sql_text.expr, aggregates))


def _controller_table(tables: dict[str, DataFrame], findings: DataFrame, snapshots: DataFrame) -> DataFrame:
    """Exactly one row per snapshot for /controller, present or not, with the cluster's controller epoch."""
    znode = tables["controller"].groupBy(KEY).agg(
        F.first("path", ignorenulls=True).alias("path"),
        F.first("broker_id", ignorenulls=True).alias("broker_id"),
        F.first("is_ephemeral", ignorenulls=True).alias("is_ephemeral"),
        F.first("kraft_controller_epoch", ignorenulls=True).alias("kraft_controller_epoch"),
    )
    epoch = tables["controller_epoch"].groupBy(KEY).agg(F.first("epoch", ignorenulls=True).alias("controller_epoch"))
    checks = entity_checks("controller")
    flags = _flagged(findings, checks).groupBy(KEY).agg(*[sql_text.expr(_flag(c)) for c in checks])
    return (
        snapshots.select(KEY).join(znode, KEY, "left").join(epoch, KEY, "left").join(flags, KEY, "left")
        .select(KEY, F.coalesce(F.col("path"), F.lit(CONTROLLER_PATH)).alias("path"), "broker_id", "is_ephemeral",
                "kraft_controller_epoch", "controller_epoch",
                *[F.coalesce(F.col(c), F.lit(False)).alias(c) for c in checks])
    )


def _znodes_table(tables: dict[str, DataFrame], findings: DataFrame, snapshots: DataFrame) -> DataFrame:
    """One row per malformed znode, or a single row with path null for a snapshot without any."""
    table = _with_flags("znodes", _entity_rows("znodes", tables), findings)
    placeholder = snapshots.select(KEY).join(table.select(KEY).distinct(), KEY, "left_anti").select(
        *[
            F.col(KEY) if c == KEY else
            (F.lit(False) if c in entity_checks("znodes") else F.lit(None)).cast(table.schema[c].dataType).alias(c)
            for c in table.columns
        ]
    )
    return table.unionByName(placeholder)


def build_audit_tables(tables: dict[str, DataFrame], findings: DataFrame,
                       snapshots: DataFrame) -> dict[str, DataFrame]:
    """entity -> DataFrame: the entity's rows with one boolean column per check (True = violated), keyed.

    ``snapshots`` holds the key of every snapshot of the batch (one row each)."""
    audit: dict[str, DataFrame] = {}
    for entity in ENTITIES:
        if entity == "controller":
            audit[entity] = _controller_table(tables, findings, snapshots)
        elif entity == "znodes":
            audit[entity] = _znodes_table(tables, findings, snapshots)
        else:
            audit[entity] = _with_flags(entity, _entity_rows(entity, tables), findings)
    return audit

IDENTITY_TYPES = {"topic": "string", "partition": "int", "group_id": "string", "broker_id": "int", "path": "string"}


def conform_for_gate(audit: DataFrame) -> DataFrame:
    """Give an audit table the gate's index columns: identity columns (typed nulls where absent) and
    ``evidence``, the other non-flag columns as ``name value`` text, e.g. ``leader 3 · isr [1,2]``."""
    flags = set(CHECK_IDS)
    fields = audit.schema.fields
    present = {field.name for field in fields}
    evidence_parts = []  # SQL text: the whole select is one JVM round trip per column
    for field in fields:
        if field.name in flags or field.name in IDENTITY_TYPES or field.name == KEY:
            continue
        value = sql_text.identifier(field.name)
        if isinstance(field.dataType, ArrayType | MapType | StructType):
            value = f"to_json({value})"
        label = sql_text.string_literal(field.name + " ")
        evidence_parts.append(f"CASE WHEN {value} IS NOT NULL THEN concat({label}, CAST({value} AS STRING)) END")
    index = {name: sql_text.identifier(name) if name in present else f"CAST(NULL AS {dtype}) AS {name}"
             for name, dtype in IDENTITY_TYPES.items()}
    index["evidence"] = (f"concat_ws(' · ', {', '.join(evidence_parts)})" if evidence_parts
                         else "CAST(NULL AS STRING)") + " AS evidence"
    rest = [c for c in audit.columns if c not in IDENTITY_TYPES and c not in (KEY, "evidence")]
    key = [KEY] if KEY in present else []
    return audit.selectExpr(*key, *[index[name] for name in INDEX_COLUMNS], *map(sql_text.identifier, rest))
