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
from pyspark.sql.types import ArrayType, MapType, StructType

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.audit.unions import braces_escaped, sql_over
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


# Each entity's own rows: its table and the columns they keep (its key columns plus a few evidence columns, and path).
# A column given as (name, SQL aggregate, SQL type) is computed, the rows grouped by the snapshot and the others.
ENTITY_ROWS: dict[str, tuple[str, tuple[str | tuple[str, str, str], ...]]] = {
    "partitions": ("partitions", ("topic", "partition", "leader", "isr", "replicas", "path")),
    "topics": ("topics", ("topic", "partition_count", "path")),
    "brokers": ("brokers", ("broker_id", "host", "port", "is_ephemeral", "path")),
    "admin": ("admin_markers", ("path", "topic", "partition", "kind", "replicas", "ctime")),
    "consumer_owners": ("consumer_owners", ("group_id", "topic", "partition",
                                            ("owners", "array_join(array_sort(collect_list(owner)), ', ')", "string"),
                                            ("path", "min(path)", "string"))),
    "offsets": ("consumer_offsets", ("group_id", "topic", "partition", "path", "offset", "raw")),
    "znodes": ("malformed_znodes", ("path", "kind", "reason")),
}


def _entity_rows(entity: str, table: DataFrame) -> tuple[str, dict[str, str]]:
    """SQL of the entity's own rows over its table ``{rows}``, and the SQL type of each of their columns."""
    q = sql_text.identifier
    types = {f.name: sql_text.sql_type(f.dataType) for f in table.schema.fields}
    plain = [c for c in ENTITY_ROWS[entity][1] if isinstance(c, str)]
    computed = [c for c in ENTITY_ROWS[entity][1] if not isinstance(c, str)]
    columns = [q(KEY), *map(q, plain), *(f"{sql} AS {q(name)}" for name, sql, _ in computed)]
    sql = f"SELECT {', '.join(columns)} FROM {{rows}}"
    if computed:
        sql += f" GROUP BY {', '.join([q(KEY), *map(q, plain)])}"
    return sql, {**{c: types[c] for c in plain}, **{name: dtype for name, _, dtype in computed}}


def _flag(check_id: str) -> str:
    return f"coalesce(max(check_id = {sql_text.string_literal(check_id)}), false) AS {sql_text.identifier(check_id)}"


def _flagged(checks: tuple[str, ...]) -> str:
    """SQL: the findings (``{findings}``) of these checks that flag their subject: an explained finding (a known,
    harmless cause, severity info) is reported but never flagged, so the gate does not fail on it."""
    listed = ", ".join(map(sql_text.string_literal, checks))
    return f"SELECT * FROM {{findings}} WHERE check_id IN ({listed}) AND NOT coalesce(status = 'explained', false)"


def _with_flags_sql(entity: str, table: DataFrame) -> tuple[str, list[tuple[str, str]]]:
    """SQL over ``{rows}`` (the entity's table) and ``{findings}``: the entity's rows and its findings' subjects, one
    row per subject, one boolean per check; and its evidence columns with their SQL types.

    Both sides are stacked and grouped by the subject columns (grouping treats nulls as equal, as the
    findings' identity does): one shuffle, where a join would need three.
    """
    keys = ENTITY_KEYS[entity]
    checks = entity_checks(entity)
    q = sql_text.identifier
    rows, types = _entity_rows(entity, table)
    evidence = [(c, t) for c, t in types.items() if c not in keys and c != "path"]
    own = ", ".join([q(KEY), *map(q, keys), "path AS own_path", "CAST(NULL AS STRING) AS subject_path",
                     *(q(c) for c, _ in evidence), "CAST(NULL AS STRING) AS check_id"])
    subjects = ", ".join([q(KEY), *map(q, keys), "CAST(NULL AS STRING) AS own_path", "path AS subject_path",
                          *(f"CAST(NULL AS {t}) AS {q(c)}" for c, t in evidence), "check_id"])
    path = [] if "path" in keys else ["coalesce(first(own_path, true), min(subject_path)) AS path"]
    aggregates = ", ".join([*path, *[f"first({q(c)}, true) AS {q(c)}" for c, _ in evidence], *map(_flag, checks)])
    group = ", ".join([q(KEY), *map(q, keys)])
    stacked = (f"SELECT {braces_escaped(own)} FROM ({rows}) "
               f"UNION ALL SELECT {braces_escaped(subjects)} FROM ({_flagged(checks)})")
    sql = (f"SELECT {braces_escaped(group)}, {braces_escaped(aggregates)} FROM ({stacked}) "
           f"GROUP BY {braces_escaped(group)}")
    return sql, evidence


def _with_flags(entity: str, tables: dict[str, DataFrame], findings: DataFrame) -> DataFrame:
    """The entity's rows with one boolean per check (``_with_flags_sql``): one SQL statement, one DataFrame."""
    table = tables[ENTITY_ROWS[entity][0]]
    sql, _ = _with_flags_sql(entity, table)
    return sql_over(sql, {"rows": table, "findings": findings})


def _controller_table(tables: dict[str, DataFrame], findings: DataFrame, snapshots: DataFrame) -> DataFrame:
    """Exactly one row per snapshot for /controller, present or not, with the cluster's controller epoch."""
    checks = entity_checks("controller")
    q = sql_text.identifier
    flags = ", ".join(map(_flag, checks))
    defaults = ", ".join(f"coalesce({q(c)}, false) AS {q(c)}" for c in checks)
    sql = (
        f"SELECT `snapshot_id`, coalesce(path, {sql_text.string_literal(CONTROLLER_PATH)}) AS path, broker_id, "
        f"is_ephemeral, kraft_controller_epoch, controller_epoch, {braces_escaped(defaults)} "
        "FROM (SELECT `snapshot_id` FROM {snapshots}) "
        "LEFT JOIN (SELECT `snapshot_id`, first(path, true) AS path, first(broker_id, true) AS broker_id, "
        "first(is_ephemeral, true) AS is_ephemeral, first(kraft_controller_epoch, true) AS kraft_controller_epoch "
        "FROM {controller} GROUP BY `snapshot_id`) USING (`snapshot_id`) "
        "LEFT JOIN (SELECT `snapshot_id`, first(epoch, true) AS controller_epoch FROM {controller_epoch} "
        "GROUP BY `snapshot_id`) USING (`snapshot_id`) "
        f"LEFT JOIN (SELECT `snapshot_id`, {braces_escaped(flags)} FROM ({_flagged(checks)}) GROUP BY `snapshot_id`) "
        "USING (`snapshot_id`)"
    )
    return sql_over(sql, {"snapshots": snapshots, "controller": tables["controller"],
                          "controller_epoch": tables["controller_epoch"], "findings": findings})


def _znodes_table(tables: dict[str, DataFrame], findings: DataFrame, snapshots: DataFrame) -> DataFrame:
    """One row per malformed znode, or a single row with path null for a snapshot without any."""
    table = tables["malformed_znodes"]
    flagged, evidence = _with_flags_sql("znodes", table)
    q = sql_text.identifier
    placeholder = ", ".join(["t.`snapshot_id`", "CAST(NULL AS STRING) AS path",
                             *(f"CAST(NULL AS {dtype}) AS {q(c)}" for c, dtype in evidence),
                             *(f"false AS {q(c)}" for c in entity_checks("znodes"))])
    sql = (f"WITH flagged AS ({flagged}) SELECT * FROM flagged UNION ALL SELECT {braces_escaped(placeholder)} "
           "FROM (SELECT `snapshot_id` FROM {snapshots}) t LEFT ANTI JOIN (SELECT DISTINCT `snapshot_id` FROM flagged) "
           "USING (`snapshot_id`)")
    return sql_over(sql, {"rows": table, "findings": findings, "snapshots": snapshots})


def build_audit_tables(tables: dict[str, DataFrame], findings: DataFrame,
                       snapshots: DataFrame) -> dict[str, DataFrame]:
    """entity -> DataFrame: the entity's rows with one boolean column per check (True = violated), keyed: one SQL
    statement (one DataFrame) each.

    ``snapshots`` holds the key of every snapshot of the batch (one row each)."""
    audit: dict[str, DataFrame] = {}
    for entity in ENTITIES:
        if entity == "controller":
            audit[entity] = _controller_table(tables, findings, snapshots)
        elif entity == "znodes":
            audit[entity] = _znodes_table(tables, findings, snapshots)
        else:
            audit[entity] = _with_flags(entity, tables, findings)
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
