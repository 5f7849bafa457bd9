"""Every kind's parse in one frame: the normalizer's JSON parsed with one ``from_json`` per kind, in one pass.

The parses of all families (``common.Parse``) become three projections of the readable znodes: the columns each
parse takes from the path and its typed JSON; the all-text JSON of the rows the typed parse rejects; then, per row,
its kind's reason (one CASE over the kinds) and one struct column per table (null outside the table's kinds). A
table is the rows of its struct without a reason; malformed_znodes is the rows with one. Each expression is guarded
by its kind, so a row is only ever judged by its own kind's parse.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .common import CORRUPT, JSON, JSON_OPTIONS, LOOSE, REASON, Parse, first_reason, origin, scoped


def _guard(parse: Parse) -> Column:
    kind = F.col("kind")
    rows = kind == parse.kinds[0] if len(parse.kinds) == 1 else kind.isin(*parse.kinds)
    return rows if parse.include is None else rows & parse.include


def _typed_json(parse: Parse) -> Column:
    """The kind's one typed ``from_json``; with ``retry_backslashes`` a rejected document is parsed again with every
    backslash doubled, as Kafka's own reader does for JSON written before 1.0.1."""
    assert parse.json is not None
    text = F.col("text")
    typed = F.from_json(text, parse.json.typed, JSON_OPTIONS)
    if parse.retry_backslashes:
        doubled = F.regexp_replace(text, r"\\", r"\\\\")
        retry = F.when(typed.getField(CORRUPT).isNotNull() & text.contains("\\"),
                       F.from_json(doubled, parse.json.typed, JSON_OPTIONS))
        typed = F.coalesce(retry, typed)
    return typed


def parse_frame(readable: DataFrame, parses: Sequence[Parse]) -> DataFrame:
    """kind, reason, key and origin, and one struct per table, of every row of the parses' kinds."""
    names = [parse.name for parse in parses]
    if len(set(names)) != len(names):
        raise AssertionError(f"parse names must be unique: {names}")
    guards = {parse.name: _guard(parse) for parse in parses}
    first: list[Column] = []
    for parse in parses:
        guard = guards[parse.name]
        first += [F.when(guard, value).alias(scoped(name, parse.name)) for name, value in parse.derived.items()]
        if parse.json is not None:
            first.append(F.when(guard, _typed_json(parse)).alias(scoped(JSON, parse.name)))
    parsed = readable.select("*", *first)
    loose = []
    for parse in parses:
        if parse.json is not None:
            typed = F.col(scoped(JSON, parse.name))
            rejected = typed.isNull() | typed.getField(CORRUPT).isNotNull()
            loose.append(F.when(guards[parse.name] & rejected,
                                F.from_json(F.col("text"), parse.json.loose, JSON_OPTIONS))
                         .alias(scoped(LOOSE, parse.name)))
    if loose:
        parsed = parsed.select("*", *loose)
    reason: Column | None = None
    structs: dict[str, Column] = {}
    for parse in parses:
        guard, why = guards[parse.name], first_reason(parse.reasons)
        reason = F.when(guard, why) if reason is None else reason.when(guard, why)
        value = F.struct(*parse.values)
        table = structs.get(parse.table)
        structs[parse.table] = F.when(guard, value) if table is None else table.when(guard, value)
    assert reason is not None
    tables = [struct.alias(table) for table, struct in structs.items()]
    return parsed.select("kind", reason.alias(REASON), *origin(), *tables)

