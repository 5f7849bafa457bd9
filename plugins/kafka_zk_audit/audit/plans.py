"""A few DataFrame steps as one plan, analyzed once.

On a classic session every DataFrame step (``where``, ``select``, ``join``, ``withColumns``) builds a new Dataset, and
Catalyst analyzes each when it is built: a chain of n steps costs n analyses, each over the whole plan so far. A
``Steps`` chain composes the same steps as one Catalyst logical plan and ``frame()`` analyzes it once, as Spark
Connect does with its plans::

    findings = Steps(partitions).join_using(brokers, ["snapshot_id"]).with_columns({...}).select(...).frame()

The steps are the operators the DataFrame methods build (``Filter``, ``Project``, a ``USING`` join, the star with
columns of ``withColumns``), with the columns converted by the session, so the analyzed plan is the one the
DataFrame methods give. ``united`` makes several chains one frame: one n-ary ``Union``, analyzed once; and
``union_at_once`` several frames, each through a select list.

On a Spark Connect session (whose DataFrames are unanalyzed plans already), or a Spark whose internals these steps
do not find, each step is the DataFrame method itself.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.audit.unions import braces_escaped, sql_over, union_all

log = logging.getLogger(__name__)

_LOGICAL = "org.apache.spark.sql.catalyst.plans.logical"
_STAR_WITH_COLUMNS = "org.apache.spark.sql.catalyst.analysis.UnresolvedStarWithColumns"
_DATASET = "org.apache.spark.sql.classic.Dataset"


def _java_class(jvm: Any, name: str) -> Any:
    found = jvm
    for part in name.split("."):
        found = getattr(found, part)
    return found


# the most items java.util.List.of takes one by one (more go as an array: py4j passes no varargs)
_LIST_OF_MAX = 10


class _Catalyst:
    """The JVM classes the steps build, of one classic session."""

    def __init__(self, frame: DataFrame) -> None:
        spark = frame.sparkSession
        self.jvm = spark._jvm
        self.session = spark._jsparkSession
        self.parser = self.session.sessionState().sqlParser()
        self.project = _java_class(self.jvm, f"{_LOGICAL}.Project")
        self.filter = _java_class(self.jvm, f"{_LOGICAL}.Filter")
        self.union = _java_class(self.jvm, f"{_LOGICAL}.Union")
        self.star_with_columns = _java_class(self.jvm, _STAR_WITH_COLUMNS)
        self.dataset = _java_class(self.jvm, _DATASET)
        for found in (self.project, self.filter, self.union, self.star_with_columns, self.dataset):
            if not isinstance(found, JavaClass):
                raise AttributeError(f"no class {found!r} in this Spark")
        self.frame_type = type(frame)
        self.spark = spark
        self._joins: dict[tuple[str, tuple[str, ...]], Any] = {}
        # looked up once: each lookup through the JVM view is a round trip, and the JVM resolves a package name such
        # as ``java`` by failing to load it as a class (about a millisecond)
        java_util = self.jvm.java.util
        self._array_list, self._list_of = java_util.ArrayList, java_util.List.of
        self._to_seq = self.jvm.PythonUtils.toSeq
        self.no_option = self.jvm.scala.Option.empty()

    def seq(self, items: Sequence[Any]) -> Any:
        """A Scala ``Seq`` of the items, built from Java lists of up to ten of them (``List.of``): a call per ten
        items, not one per item."""
        items = list(items)
        if any(item is None for item in items):  # List.of takes no null
            values = self._array_list()
            for item in items:
                values.add(item)
        elif len(items) <= _LIST_OF_MAX:
            values = self._list_of(*items)
        else:
            values = self._array_list(self._list_of(*items[:_LIST_OF_MAX]))
            for start in range(_LIST_OF_MAX, len(items), _LIST_OF_MAX):
                values.addAll(self._list_of(*items[start:start + _LIST_OF_MAX]))
        return self._to_seq(values)

    def expression(self, column: Column) -> Any:
        return self.session.expression(column._jc)

    def named(self, column: Column) -> Any:
        return self.session.toRichColumn(column._jc).named()

    def projection(self, columns: str, plan: Any) -> Any:
        """``Project`` of ``columns`` (a select list as SQL text) over ``plan``: one parse, whatever their number. A
        list with an aggregate function parses as an ``Aggregate``, which takes ``plan`` as its child."""
        parsed = self.parser.parsePlan(f"SELECT {columns} FROM _steps")
        try:
            return self.project(parsed.projectList(), plan)
        except Py4JError:
            return parsed.withNewChildren(self.seq([plan]))

    def join_template(self, how: str, on: tuple[str, ...]) -> Any:
        """A ``USING`` join of two placeholder relations, parsed once per join type and columns."""
        key = (how, on)
        if key not in self._joins:
            using = ", ".join(sql_text.identifier(name) for name in on)
            join = self.parser.parsePlan(f"SELECT * FROM _left {_JOINS[how]} JOIN _right USING ({using})").child()
            if join.getClass().getSimpleName() != "Join":
                raise TypeError(f"a join parsed as {join.getClass().getSimpleName()}")
            self._joins[key] = join
        return self._joins[key]


_JOINS = {"left": "LEFT OUTER", "inner": "INNER", "right": "RIGHT OUTER", "full": "FULL OUTER",
          "left_semi": "LEFT SEMI", "left_anti": "LEFT ANTI"}
_SESSIONS: weakref.WeakKeyDictionary[Any, _Catalyst | None] = weakref.WeakKeyDictionary()


def _catalyst(frame: DataFrame) -> _Catalyst | None:
    """The classic session's builder of ``frame``, or None (Spark Connect, or internals not found)."""
    if not hasattr(frame, "_jdf"):
        return None
    spark = frame.sparkSession
    if spark not in _SESSIONS:
        try:
            _SESSIONS[spark] = _Catalyst(frame)
        except (Py4JError, AttributeError, TypeError) as error:
            log.debug("steps as one plan are not available (%s): DataFrame methods instead", error)
            _SESSIONS[spark] = None
    return _SESSIONS[spark]


def _column(value: Column | str) -> Column:
    return F.col(value) if isinstance(value, str) else value


def _reference(name: str) -> str:
    """A column name as ``select`` reads it, as SQL text: ``a.b`` a struct's field, ``s.*`` its fields."""
    if name == "*":
        return name
    if name.endswith(".*"):
        return sql_text.column_ref(name[:-2]) + ".*"
    return sql_text.column_ref(name)


class Steps:
    """DataFrame steps from ``frame``, composed as one plan on a classic session (see the module)."""

    def __init__(self, frame: DataFrame) -> None:
        self._catalyst = _catalyst(frame)
        self._frame: DataFrame | None = None if self._catalyst is not None else frame
        self._plan: Any = frame._jdf.logicalPlan() if self._catalyst is not None else None

    def _next(self, plan: Any = None, frame: DataFrame | None = None) -> Steps:
        following = object.__new__(Steps)
        following._catalyst, following._plan, following._frame = self._catalyst, plan, frame
        return following

    def where(self, condition: Column | str) -> Steps:
        """Rows where ``condition`` (a column, or SQL text: parsed with the step, one call) holds."""
        if self._catalyst is None:
            return self._next(frame=self._frame.where(condition))
        if isinstance(condition, str):
            return self._next(self._catalyst.filter(self._catalyst.parser.parseExpression(condition), self._plan))
        return self._next(self._catalyst.filter(self._catalyst.expression(condition), self._plan))

    def select(self, *columns: Column | str) -> Steps:
        """These columns (a name is a column reference, ``"s.*"`` a struct's fields; names only: one parsed
        projection, three calls into the JVM whatever their number)."""
        if self._catalyst is None:
            return self._next(frame=self._frame.select(*columns))
        if all(isinstance(column, str) for column in columns):
            listed = ", ".join(_reference(column) for column in columns)
            return self._next(self._catalyst.projection(listed, self._plan))
        named = [self._catalyst.named(_column(column)) for column in columns]
        return self._next(self._catalyst.project(self._catalyst.seq(named), self._plan))

    def select_expr(self, *expressions: str) -> Steps:
        """A select list of SQL expressions (``selectExpr``): one parsed projection."""
        if self._catalyst is None:
            return self._next(frame=self._frame.selectExpr(*expressions))
        return self._next(self._catalyst.projection(", ".join(expressions), self._plan))

    @property
    def planned(self) -> bool:
        """Whether the steps are one plan (a classic session), not DataFrame methods."""
        return self._catalyst is not None

    def with_columns(self, columns: Mapping[str, Column]) -> Steps:
        """Every column, with these ones replaced or added (``withColumns``)."""
        if self._catalyst is None:
            return self._next(frame=self._frame.withColumns(dict(columns)))
        catalyst = self._catalyst
        star = catalyst.star_with_columns(catalyst.seq(list(columns)),
                                          catalyst.seq([catalyst.expression(c) for c in columns.values()]),
                                          catalyst.no_option)
        return self._next(catalyst.project(catalyst.seq([star]), self._plan))

    def join_using(self, other: DataFrame | Steps, on: Sequence[str], how: str = "left") -> Steps:
        """A join with ``other`` on equal ``on`` columns (``join(other, on, how)``: the columns once)."""
        if how not in _JOINS:
            raise ValueError(f"join_using: no join {how!r} (one of {', '.join(_JOINS)})")
        if self._catalyst is None:
            right = other.frame() if isinstance(other, Steps) else other
            return self._next(frame=self._frame.join(right, list(on), how))
        right_plan = other._plan if isinstance(other, Steps) else other._jdf.logicalPlan()
        template = self._catalyst.join_template(how, tuple(on))
        return self._next(template.withNewChildren(self._catalyst.seq([self._plan, right_plan])))

    def frame(self) -> DataFrame:
        """The steps as a DataFrame: one analysis."""
        if self._catalyst is None:
            return self._frame
        catalyst = self._catalyst
        return catalyst.frame_type(catalyst.dataset.ofRows(catalyst.session, self._plan), catalyst.spark)


def united(chains: Sequence[Steps]) -> DataFrame:
    """The rows of every chain as one frame, united by position: one n-ary ``Union`` (the operator Catalyst's
    ``CombineUnions`` makes of a tree), analyzed once. Without one plan (Spark Connect, whose unions are built by the
    client and analysed with the plan that runs them), ``unions.union_all`` of their frames. Raises ValueError without a
    chain."""
    if not chains:
        raise ValueError("united needs at least one chain of steps")
    catalyst = chains[0]._catalyst
    if len(chains) == 1 or catalyst is None or any(chain._catalyst is not catalyst for chain in chains):
        return union_all([chain.frame() for chain in chains], by_name=False)
    union = catalyst.union(catalyst.seq([chain._plan for chain in chains]), False, False)
    return catalyst.frame_type(catalyst.dataset.ofRows(catalyst.session, union), catalyst.spark)


def union_at_once(frames: Sequence[DataFrame], selects: Sequence[Sequence[str]] | None = None) -> DataFrame:
    """The frames' rows as ONE DataFrame, united by position, each frame through its select list of ``selects``
    (expressions as SQL text; default: the frame as it is): on a classic session one ``Union`` of their plans, each
    select list parsed into a projection, all analyzed once (``united``); on a Spark Connect session, or a Spark
    without that internal route, one ``spark.sql`` ``UNION ALL`` statement over them (whose temporary views cost an
    analysis each). Raises ValueError without a frame."""
    if not frames:
        raise ValueError("union_at_once needs at least one frame")
    lists = list(selects) if selects is not None else [None] * len(frames)
    if len(lists) != len(frames):
        raise ValueError(f"union_at_once: {len(frames)} frames but {len(lists)} select lists")
    if len(frames) == 1:
        return frames[0] if lists[0] is None else frames[0].selectExpr(*lists[0])
    chains = [Steps(frame) for frame in frames]
    if all(chain.planned for chain in chains):  # a classic session: one Union of the plans
        return united([chain if columns is None else chain.select_expr(*columns)
                       for chain, columns in zip(chains, lists, strict=True)])
    branches = [f"SELECT {braces_escaped(', '.join(columns or ['*']))} FROM {{_{index}}}"
                for index, columns in enumerate(lists)]
    return sql_over("\nUNION ALL\n".join(branches), {f"_{index}": frame for index, frame in enumerate(frames)})
