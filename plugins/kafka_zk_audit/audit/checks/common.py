"""Shared building blocks of the checks: the evidence formatting, the per-snapshot facts, the ``check`` decorator of
the catalogue's checks and the lookup of a check in its family module.

Every frame is keyed by ``snapshot_id`` (``KEY``): a fact about a whole snapshot (its registered brokers, whether a
KRaft controller holds /controller) is one row per snapshot, joined onto a frame's rows by the engine on the key,
with a default for snapshots without any.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.audit.checks.engine import ColumnLike, Fact, Finds, Rule, View
from kafka_zk_audit.audit.checks.engine import check as engine_check
from kafka_zk_audit.contract.catalogue import BY_ID
from kafka_zk_audit.contract.schemas import KEY


def _sql(value: ColumnLike) -> Column | str:
    """A column as itself; a column name or None as SQL text (a reference, or NULL)."""
    if value is None:
        return "NULL"
    return sql_text.column_ref(value) if isinstance(value, str) else value


def _column(value: ColumnLike) -> Column:
    if value is None:
        return F.lit(None)
    return F.col(value) if isinstance(value, str) else value


def text(value: ColumnLike) -> Column:
    """A value as text for a detail sentence; null reads as 'null'."""
    source = _sql(value)
    if isinstance(source, Column):
        return F.coalesce(source.cast("string"), F.lit("null"))
    return sql_text.expr(f"coalesce(CAST({source} AS STRING), 'null')")  # one JVM round trip


# An empty array<int> as SQL text (a fact's default).
EMPTY_INTS = "CAST(array() AS array<int>)"


def empty_ints() -> Column:
    """An empty array<int> (to coalesce null arrays with)."""
    return F.array().cast("array<int>")


def int_list(values: ColumnLike) -> Column:
    """An int array as '[1, 2, 3]' (null reads as '[]')."""
    joined = F.array_join(_column(values).cast("array<string>"), ", ", "null")
    return F.concat(F.lit("["), F.coalesce(joined, F.lit("")), F.lit("]"))


def say(template: str, *values: ColumnLike) -> Column:
    """A detail sentence: printf-style template with %s for each value (column or name; null reads 'null')."""
    return F.format_string(template, *[text(value) for value in values])


def zk_id(value: ColumnLike) -> Column:
    """A ZooKeeper session id or zxid as hex, e.g. 0x1000a2b3c4d0005."""
    return F.when(_column(value).isNull(), F.lit("null")).otherwise(
        F.concat(F.lit("0x"), F.lower(F.hex(_column(value))))
    )


def duration(milliseconds: ColumnLike) -> Column:
    """Milliseconds as '1d 2h 3m 4s' (zero units left out; '0s' for zero or negative)."""
    seconds = F.greatest(F.floor(_column(milliseconds) / 1000), F.lit(0))
    units = (
        (F.floor(seconds / 86400), "d"),
        (F.floor((seconds % 86400) / 3600), "h"),
        (F.floor((seconds % 3600) / 60), "m"),
        (seconds % 60, "s"),
    )
    parts = [F.when(amount > 0, F.concat(amount.cast("string"), F.lit(unit))) for amount, unit in units]
    return F.coalesce(F.nullif(F.concat_ws(" ", *parts), F.lit("")), F.lit("0s"))


BASELINE_ID = "baseline_snapshot_id"


def previous_snapshot(previous: DataFrame) -> Column:
    """' <id>' when the previous table carries its baseline's id (``baseline_snapshot_id``), else '' (for detail
    sentences). A previous table is keyed by the snapshot it is the baseline of (see ``audit.baseline``)."""
    if BASELINE_ID in previous.columns:
        return F.concat(F.lit(" "), F.coalesce(previous[BASELINE_ID].cast("string"), F.lit("?")))
    return F.lit("")


def registered_broker_ids(brokers: DataFrame) -> DataFrame:
    """One row per snapshot with a broker: (snapshot_id, registered_brokers), every broker id under /brokers/ids."""
    return brokers.groupBy(KEY).agg(F.collect_set("broker_id").alias("registered_brokers"))


# Each snapshot's broker ids under /brokers/ids, as column registered_brokers (empty when it has none).
REGISTERED_BROKERS = Fact("registered_brokers", registered_broker_ids, defaults={"registered_brokers": EMPTY_INTS})


def instant(epoch_ms: ColumnLike) -> Column:
    """Epoch milliseconds as an ISO-8601 instant with its offset, e.g. 2027-01-15T08:00:00Z."""
    return F.date_format(F.timestamp_millis(_column(epoch_ms).cast("long")), "yyyy-MM-dd'T'HH:mm:ssXXX")


def kraft_controller() -> Column:
    """On /controller rows: a KRaft controller holds it during a ZK -> KRaft migration (persistent, kraft
    epoch >= 0; apache/kafka KafkaZkClient.tryRegisterKRaftControllerAsActiveController)."""
    persistent = ~F.coalesce(F.col("is_ephemeral"), F.lit(True))
    return persistent & (F.coalesce(F.col("kraft_controller_epoch"), F.lit(-1)) >= 0)


def kraft_migration(controller: DataFrame) -> DataFrame:
    """One row per snapshot with a /controller row: (snapshot_id, kraft_migration), whether a KRaft controller
    holds /controller.

    Brokers already restarted in KRaft mode are then alive but never in /brokers/ids, so the checks
    that take /brokers/ids for the live brokers cannot tell a dead broker from a KRaft one.
    """
    return controller.groupBy(KEY).agg(F.coalesce(F.max(kraft_controller()), F.lit(False)).alias("kraft_migration"))


# Whether a KRaft controller holds each snapshot's /controller, as column kraft_migration (False without one).
KRAFT_MIGRATION = Fact("kraft_migration", kraft_migration, defaults={"kraft_migration": "false"})


def partition_finds(where: Column, detail: Column, explained: Column | None = None) -> Finds:
    """``Finds`` of a partition's check: the subject is the row's topic, partition and path."""
    return Finds(where=where, detail=detail, topic="topic", partition="partition", path="path", explained=explained)


def check(on: str | View, *, facts: Sequence[Fact] = ()) -> Callable[[Callable[..., Finds]], Rule]:
    """Decorator: a snapshot check (``engine.check``) whose signature as a function is its catalogue spec's."""
    def declare(finds: Callable[..., Finds]) -> Rule:
        return engine_check(on, facts=facts, arguments=BY_ID[finds.__name__].arguments)(finds)
    return declare


def family_functions(check_ids: Iterable[str], families: Iterable[ModuleType]) -> dict[str, Callable[..., DataFrame]]:
    """The function of each check id: the one defined under that name in one of the family modules; LookupError
    for an id no family defines, or more than one does."""
    families = tuple(families)
    functions = {}
    for check_id in check_ids:
        found = [vars(module)[check_id] for module in families
                 if getattr(vars(module).get(check_id), "__module__", None) == module.__name__]
        if len(found) != 1:
            names = ", ".join(module.__name__ for module in families)
            raise LookupError(f"check {check_id} must be defined in exactly one of {names}; found {len(found)}")
        functions[check_id] = found[0]
    return functions
