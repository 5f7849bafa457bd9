"""Normalize ZooKeeper snapshots into the typed tables of ``kafka_zk_audit.contract.schemas.TABLES``.

Usage (the Spark app)::

    from kafka_zk_audit.audit.normalize import normalize
    tables = normalize(snapshots_df)     # {table name: DataFrame}, every key of TABLES, keyed(...) schemas
    for name, frame in tables.items():
        frame.write.parquet(...)
    tables.release()                     # unpersist the frames normalize cached (see below)

The input holds one or many snapshots (schema ``keyed(SNAPSHOT)``, ``snapshot_id`` first); every
table is ``keyed(TABLES[name])``: each row keeps its snapshot's ``snapshot_id``, and the only join (the
partitions table) includes it, so snapshots normalized together give exactly the union of each
normalized alone.

How it runs: ``classify`` gives every znode path a kind and decodes its data once. Each family
module describes how it parses its kinds (``common.Parse``: explicit ``from_json`` schemas, ordered reasons, the
values its tables need), and ``onepass.parse_frame`` puts every kind's parse in one frame: kind, ``reason`` (null
when the znode is fine), origin and one struct per table, each znode parsed by one ``from_json`` of its kind. Tables
select the rows of their struct without a reason; malformed_znodes is the rows with one. The classified frame and
the parse frame are kept (MEMORY_AND_DISK; the parse frame as a local checkpoint, so that the frames built on it
do not carry its large projection through every analysis): the snapshot is classified once and each znode parsed
once, however many tables are written; the normalizer builds a few frames per table, not a few per kind and field.
``normalize`` itself runs no Spark job; the first action on a table materialises what it reads. With
``persist=False`` nothing is cached (each table then re-reads the snapshot). Bad data never raises: it becomes a
malformed_znodes row and no row in its kind's table. A znode the auditor may not read is not judged: it becomes an
unreadable_znodes row (``unreadable``), and data the snapshot replaced by fingerprints (``fingerprinted``)
is read as far as it goes (see ``configs`` and ``security``), never as malformed.

Public API (``__all__``): ``normalize`` and what it is made of (``classify``, ``parse``, ``conform``), and for
other stages that parse znode states with the same parsers (the history stage: every state a change table
replays) ``family_tables``, the path patterns of the kinds they key on (``*_PATH``, one capture group per
name in the path) and the column helpers that read those names (``name_part``, ``to_int``). The family and
helper modules themselves are internal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.audit.session import in_driver_threads
from kafka_zk_audit.contract.schemas import TABLES, keyed

from . import admin, brokers, configs, consumers, controller, kraft, notifications, security, topics
from .common import name_part, to_int
from .kinds import (
    BROKER_PATH,
    CONSUMER_OFFSET_PATH,
    CONSUMER_OWNER_PATH,
    CONSUMER_REGISTRATION_PATH,
    PARTITION_STATE_PATH,
    TOPIC_PATH,
    classify,
    data_was_read,
)
from .malformed import malformed_table
from .notifications import notifications_table
from .onepass import parse_frame
from .unreadable import unreadable_table

__all__ = [
    "BROKER_PATH",
    "CONSUMER_OFFSET_PATH",
    "CONSUMER_OWNER_PATH",
    "CONSUMER_REGISTRATION_PATH",
    "PARTITION_STATE_PATH",
    "TOPIC_PATH",
    "NormalizedTables",
    "classify",
    "conform",
    "family_tables",
    "name_part",
    "normalize",
    "parse",
    "to_int",
]

# Family modules: parses() -> [Parse]; tables(parse frame) -> {table: frame}.
FAMILIES = (brokers, topics, controller, configs, admin, notifications, security, consumers, kraft)


class NormalizedTables(dict[str, DataFrame]):
    """The normalized tables by name, plus the cached frames they are selected from."""

    def __init__(self, tables: dict[str, DataFrame], cached: list[DataFrame]) -> None:
        super().__init__(tables)
        self.cached = cached

    def materialize(self) -> None:
        """Classify and parse now, in one Spark job (no-op when nothing is persisted): the tables then read the kept
        blocks. Jobs that read the tables at once need it: the first to finish would otherwise checkpoint the parse
        frame, cutting its lineage under the tasks of the others (whose metrics the driver then no longer finds)."""
        if self.cached:
            self.cached[0].count()

    def release(self) -> None:
        """Unpersist the cached classified frame and drop the checkpointed parse frame's blocks (no-op when nothing
        was persisted)."""
        for frame in self.cached:
            frame.unpersist()
            jdf = getattr(frame, "_jdf", None)  # a classic session's; a Spark Connect server frees its own
            plan = jdf.logicalPlan() if jdf is not None else None
            if plan is not None and plan.getClass().getSimpleName() == "LogicalRDD":
                plan.rdd().unpersist(False)  # a checkpointed frame's leaf holds the RDD whose blocks it reads


def parse(classified: DataFrame) -> DataFrame:
    """Every family's parse of the classified znodes in one frame: kind, reason, key and origin, and one struct per
    table (null outside its kinds).

    Only rows whose data was read are parsed: an unreadable znode is unknown, not malformed.
    """
    readable = classified.filter(data_was_read())
    return parse_frame(readable, [parsed for family in FAMILIES for parsed in family.parses()])


def family_tables(snapshot: DataFrame, names: Iterable[str]) -> dict[str, DataFrame]:
    """The named tables as the family parsers make them from a ``keyed(SNAPSHOT)`` frame: every row kept with
    its origin (path, mzxid), not conformed to ``TABLES``, nothing cached, no malformed_znodes,
    unreadable_znodes or notifications table. Raises KeyError for a name no family makes."""
    readable = classify(snapshot).filter(data_was_read())
    tables: dict[str, DataFrame] = {}
    for family in FAMILIES:  # a parse frame per family: each table's plan holds its family's parses only
        tables.update(family.tables(parse_frame(readable, family.parses())))
    return {name: tables[name] for name in names}


def conform(frame: DataFrame, schema: StructType) -> DataFrame:
    """The frame's columns in the schema's order, with exactly its types, every column nullable."""
    if list(frame.schema.fields) == list(schema.fields):
        return frame
    current = {field.name: field for field in frame.schema.fields}
    columns: list[str] = []  # SQL text: a JVM round trip for each column, not half a dozen
    for target in schema.fields:
        source, name = current[target.name], sql_text.identifier(target.name)
        if source == target:
            columns.append(name)
            continue
        value = name if source.dataType == target.dataType else sql_text.cast(name, target.dataType)
        if not source.nullable:
            value = sql_text.nullable(value)
        columns.append(f"{value} AS {name}")
    return frame.selectExpr(*columns)


def normalize(snapshot: DataFrame, *, persist: bool = True, conformed: bool = True) -> NormalizedTables:
    """Every table of ``schemas.TABLES``, as ``keyed(TABLES[name])`` frames, from a snapshot frame of schema
    ``keyed(SNAPSHOT)`` holding one or many snapshots. ``conformed=False``: each table as its family builds it (its
    columns, in its own types and order), for a caller that conforms the rows itself (a small audit's collect casts
    them to the contract as it collects them, without a frame per table).

    Raises ValueError (from ``classify``) when the frame has no ``snapshot_id`` column.
    """
    classified = classify(snapshot)
    if persist:
        classified = classified.persist(StorageLevel.MEMORY_AND_DISK)
    parsed = parse(classified)
    if persist:
        # checkpointed, not only cached: the tables' frames then stand on a leaf, not on the parse's one large
        # projection, which Catalyst would otherwise walk again for each of the ~80 frames built on it
        parsed = parsed.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)
    builders: list[Callable[[], dict[str, DataFrame]]] = [
        lambda: {"notifications": notifications_table(classified), "malformed_znodes": malformed_table(parsed),
                 "unreadable_znodes": unreadable_table(classified)},
        *[partial(family.tables, parsed) for family in FAMILIES],
    ]
    frames: dict[str, DataFrame] = {}
    # the driver's JVM analyses each new frame: two driver threads build the families' tables at once
    for built in in_driver_threads(snapshot.sparkSession, lambda build: {
            name: conform(frame, keyed(TABLES[name])) if conformed and name in TABLES else frame
            for name, frame in build().items()}, builders):
        frames.update(built)
    if set(frames) != set(TABLES):
        raise AssertionError(
            f"normalizer tables {sorted(frames)} differ from schemas.TABLES {sorted(TABLES)}"
        )
    return NormalizedTables({name: frames[name] for name in TABLES}, [parsed, classified] if persist else [])
