"""The check engine: a check is a small declaration, and one select evaluates every check of a frame.

A check declares what it reads and what it finds::

    @check("partitions", facts=(REGISTERED_BROKERS,))
    def offline_partition() -> Finds:
        \"\"\"A partition has a leader and a registered isr member.\"\"\"
        return Finds(where=..., detail=..., topic="topic", partition="partition", path="path")

* ``on``, the frame its rows come from: a normalized table by name, or a ``View``: a frame derived once per
  audit from the tables, the baselines (``previous_<table>``) and the parameters (a topic's replication factors,
  a partition beside its baseline);
* ``facts``: ``Fact`` columns joined onto those rows (each snapshot's registered brokers, a partition's adding
  replicas), each computed once per audit and joined once per frame for all the checks that name it (a value
  without a match takes the fact's default, SQL text such as ``"false"``);
* the function returns ``Finds``: a predicate, a detail sentence and the subject, as columns of the frame and its
  facts, and optionally whether a finding is explained. It takes no argument, or ``params`` (``audit.params``).

``evaluate`` groups the checks by frame. Per frame, one select holds every check as a conditional struct
(``when(predicate, struct(check_id, subject, path, detail, explained))``) and ``inline`` of the non-null ones gives
the findings, keyed by snapshot like every frame; the frames' findings are united at once (one n-ary union). The
joins of the facts, their defaults, the selects and the union are steps of one plan (``plans.Steps``): the whole
evaluation is one DataFrame, one Catalyst analysis, whatever the number of frames and checks, and Spark scans each
frame once for all of its checks. A frame the audit knows to have no row (``Sources.empty``: a normalized table
without a row in any snapshot of the batch, as its row counts say) gives no finding: it is not planned at all, nor
are the facts and views only its checks need.

A declared check is still a function of its inputs: called with its tables (by position in its catalogue
spec's order, or by name) it evaluates itself alone and returns its CHECK_OUTPUT rows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.audit.keyed_io import rows_frame
from kafka_zk_audit.audit.plans import Steps, united
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, KEY, keyed

ColumnLike = Column | str | None
SUBJECT = ("topic", "partition", "group_id", "broker_id", "path")


@dataclass(frozen=True)
class Finds:
    """What a check finds on each row of its frame: where ``where`` holds, a finding with this detail and subject
    (a column, a column name or None for null), explained where ``explained`` holds (default: never)."""

    where: Column
    detail: Column
    topic: ColumnLike = None
    partition: ColumnLike = None
    group_id: ColumnLike = None
    broker_id: ColumnLike = None
    path: ColumnLike = None
    explained: Column | None = None


def _inputs_of(function: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters)


# Every View and Fact by name: a view's or fact's function may take another one by naming it.
_DERIVED: dict[str, View | Fact] = {}


def _register(derived: View | Fact) -> None:
    known = _DERIVED.get(derived.name)
    if known is not None and known is not derived:
        raise ValueError(f"two derived frames are named {derived.name!r}")
    _DERIVED[derived.name] = derived


@dataclass(frozen=True, eq=False)
class View:
    """A frame checks read, derived once per audit: ``build`` takes inputs by parameter name (normalized tables,
    ``previous_<table>``, ``params``, another View or Fact by its name) and returns the frame, keyed by snapshot,
    or None when it has no rows to give (a history view without a baseline)."""

    name: str
    build: Callable[..., DataFrame | None]

    def __post_init__(self) -> None:
        _register(self)


@dataclass(frozen=True, eq=False)
class Fact:
    """Columns joined onto a frame's rows (left join on ``on``), computed once per audit by ``build`` (inputs by
    parameter name, as a View's). ``defaults`` give each value column for rows without a match, as SQL text (e.g.
    ``"false"``, ``EMPTY_INTS``); a column without a default stays null."""

    name: str
    build: Callable[..., DataFrame]
    on: tuple[str, ...] = (KEY,)
    defaults: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _register(self)


def view(build: Callable[..., DataFrame | None]) -> View:
    """Decorator: the function as a View named like it."""
    return View(build.__name__, build)


def fact(*, on: Sequence[str] = (KEY,), defaults: Mapping[str, str] | None = None
         ) -> Callable[[Callable[..., DataFrame]], Fact]:
    """Decorator: the function as a Fact named like it, joined on ``on`` with ``defaults``."""
    def declare(build: Callable[..., DataFrame]) -> Fact:
        return Fact(build.__name__, build, tuple(on), dict(defaults or {}))
    return declare


class Sources:
    """The inputs of one evaluation by name, and the Views and Facts derived from them, each built once; ``empty``
    names the inputs known to hold no row."""

    def __init__(self, inputs: Mapping[str, Any], empty: Iterable[str] = ()) -> None:
        self._inputs = inputs  # looked up, not copied: a lazy mapping builds only the inputs a rule reads
        self._built: dict[str, Any] = {}
        self.empty = frozenset(empty)

    def get(self, name: str) -> Any:
        if name in self._inputs:
            return self._inputs[name]
        if name not in self._built:
            derived = _DERIVED.get(name)
            if derived is None:
                raise KeyError(f"no input, view or fact named {name!r} (given: {', '.join(sorted(self._inputs))})")
            self._built[name] = self.call(derived.build)
        return self._built[name]

    def call(self, function: Callable[..., Any]) -> Any:
        return function(**{name: self.get(name) for name in _inputs_of(function)})

    def spark(self) -> Any:
        if self._inputs.get("spark") is not None:  # the session given as an input: no frame built to ask for it
            return self._inputs["spark"]
        for value in self._inputs.values():
            if isinstance(value, DataFrame):
                return value.sparkSession
        raise ValueError("no DataFrame among the inputs")


def base_inputs(names: Iterable[str]) -> tuple[str, ...]:
    """The inputs (not Views or Facts) that these names need, transitively, in first-seen order."""
    seen: dict[str, None] = {}

    def visit(name: str) -> None:
        derived = _DERIVED.get(name)
        if derived is None:
            seen.setdefault(name)
            return
        for inner in _inputs_of(derived.build):
            visit(inner)

    for name in names:
        visit(name)
    return tuple(seen)


class Rule:
    """A declared check (``check``): its frame, its facts and its ``Finds``; callable as the check function."""

    def __init__(self, finds: Callable[..., Finds], on: str | View, facts: Sequence[Fact],
                 arguments: Sequence[str] | None) -> None:
        self.check_id = finds.__name__
        self.on = on.name if isinstance(on, View) else on
        self.facts = tuple(facts)
        self.finds = finds
        self.__name__ = finds.__name__
        self.__qualname__ = finds.__qualname__
        self.__module__ = finds.__module__
        self.__doc__ = finds.__doc__
        extra = [name for name in _inputs_of(finds) if name != "params"]
        if extra:
            raise TypeError(f"{self.check_id}: a Finds function takes no input but params; it takes {extra}")
        needs = base_inputs([self.on, *(f.name for f in self.facts), *_inputs_of(finds)])
        self.needs = needs
        self.arguments = tuple(arguments) if arguments is not None else needs
        missing = [name for name in needs if name not in self.arguments]
        if missing:
            raise TypeError(f"{self.check_id} reads {', '.join(missing)}, which its spec does not name")
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in self.arguments])

    def __call__(self, *args: Any, **kwargs: Any) -> DataFrame:
        bound = self.__signature__.bind(*args, **kwargs)
        return evaluate([self], Sources(bound.arguments))

    def __repr__(self) -> str:
        return f"<check {self.check_id} on {self.on}>"


def check(on: str | View, *, facts: Sequence[Fact] = (), arguments: Sequence[str] | None = None
          ) -> Callable[[Callable[..., Finds]], Rule]:
    """Decorator: the ``Finds`` function as a check named like it, over the rows of ``on`` with ``facts``.

    ``arguments`` is the check's signature as a function (default: the inputs it needs, in first-seen order);
    every input it needs must be among them."""
    def declare(finds: Callable[..., Finds]) -> Rule:
        return Rule(finds, on, facts, arguments)
    return declare


def _with_facts(frame: DataFrame, facts: Sequence[Fact], sources: Sources) -> Steps:
    """The frame with every fact's columns: one left join each, then the defaults where no row matched (one
    ``withColumns``), as steps of one plan. Nothing here asks for a schema: under Spark Connect each ask is a round
    trip and an analysis (that no fact brings a column its frame already has is a test's:
    tests/audit/checks/test_keyed.py)."""
    steps = Steps(frame)
    defaults: dict[str, str] = {}
    for item in facts:
        steps = steps.join_using(sources.get(item.name), item.on, "left")
        defaults.update(item.defaults)
    if not defaults:
        return steps
    q = sql_text.identifier
    return steps.with_columns({c: sql_text.expr(f"coalesce({q(c)}, {default})") for c, default in defaults.items()})


def _field(name: str, value: ColumnLike, data_type: Any) -> Column:
    """One field of a finding's struct, cast to its CHECK_OUTPUT type. A column name or None is SQL text: one
    JVM round trip, where a column's cast and alias are three."""
    if value is None or isinstance(value, str):
        source = "NULL" if value is None else sql_text.column_ref(value)
        return sql_text.expr(f"{sql_text.cast(source, data_type)} AS {sql_text.identifier(name)}")
    return value.cast(sql_text.sql_type(data_type)).alias(name)


def _finding(check_id: str, found: Finds) -> Column:
    """The check's finding on a row, or null where it finds nothing: a CHECK_OUTPUT struct."""
    values: dict[str, ColumnLike] = {
        "check_id": None, "topic": found.topic, "partition": found.partition, "group_id": found.group_id,
        "broker_id": found.broker_id, "path": found.path, "detail": found.detail,
        "explained": None if found.explained is None else F.coalesce(found.explained, F.lit(False))}
    fields = []
    for f in CHECK_OUTPUT.fields:
        if f.name == "check_id":
            fields.append(sql_text.expr(f"{sql_text.string_literal(check_id)} AS check_id"))
        elif f.name == "explained" and values["explained"] is None:
            fields.append(sql_text.expr("false AS explained"))
        else:
            fields.append(_field(f.name, values[f.name], f.dataType))
    return F.when(found.where, F.struct(*fields))


def empty(sources: Sources) -> DataFrame:
    """No findings, in the keyed CHECK_OUTPUT shape."""
    return rows_frame(sources.spark(), [], keyed(CHECK_OUTPUT))


def evaluate(rules: Iterable[Rule], sources: Sources) -> DataFrame:
    """The findings of every rule, as one keyed CHECK_OUTPUT frame: per frame the rules read, one select of them
    all (a frame a View gives as None, or one of ``sources.empty``, has no findings)."""
    by_frame: dict[str, list[Rule]] = {}
    for rule in rules:
        by_frame.setdefault(rule.on, []).append(rule)
    outputs = []
    for name, group in by_frame.items():
        if name in sources.empty:  # no row to find anything on: nothing of it is planned
            continue
        frame = sources.get(name)
        if frame is None:
            continue
        facts = list({id(f): f for rule in group for f in rule.facts}.values())
        steps = _with_facts(frame, facts, sources)
        found = [_finding(rule.check_id, sources.call(rule.finds)) for rule in group]
        outputs.append(steps.select(KEY, F.inline(F.array_compact(F.array(*found)))))
    if not outputs:
        return empty(sources)
    return united(outputs)
