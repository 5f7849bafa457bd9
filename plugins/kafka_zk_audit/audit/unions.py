"""Many frames as one: a union built as a balanced tree.

Spark analyzes every DataFrame it builds as a whole plan. A chain of n unions (``reduce(DataFrame.unionByName,
frames)``) therefore analyzes the first frames n times over, and planning grows with the square of the frames
united: the checks' 60-odd outputs, the normalized tables collected in one job. Uniting them pairwise, then the
pairs, and so on, analyzes each frame about log2(n) times. The optimizer flattens the nested unions into one
(``CombineUnions``): the executed plan is the same as the chain's.

Every union is still a DataFrame of its own, analyzed when it is built; ``plans.union_at_once`` unites any number of
frames in ONE DataFrame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame


def union_all(frames: Sequence[DataFrame], *, by_name: bool = True, allow_missing_columns: bool = False) -> DataFrame:
    """The frames' rows as one frame (``unionByName``, or ``union`` by position with ``by_name=False``), united as a
    balanced tree. Raises ValueError without a frame."""
    if not frames:
        raise ValueError("union_all needs at least one frame")
    level = list(frames)
    while len(level) > 1:
        paired = []
        for left, right in zip(level[0::2], level[1::2], strict=False):
            paired.append(left.unionByName(right, allowMissingColumns=allow_missing_columns) if by_name
                          else left.union(right))
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def braces_escaped(sql: str) -> str:
    """SQL text as a literal part of a ``spark.sql`` template (its braces doubled)."""
    return sql.replace("{", "{{").replace("}", "}}")


def sql_over(sql: str, frames: Mapping[str, DataFrame]) -> DataFrame:
    """One ``spark.sql`` statement over DataFrames: ``sql`` names each frame ``{name}`` (PySpark gives each a
    temporary view for the statement; other braces of the text doubled, ``braces_escaped``). One DataFrame."""
    spark = next(iter(frames.values())).sparkSession
    return spark.sql(sql, **frames)


def only_columns(frame: DataFrame, columns: Sequence[str]) -> DataFrame:
    """The frame with exactly ``columns``, in that order: the frame itself when it has them already (a select of
    n names costs about 2n JVM round trips), else a select of them."""
    return frame if frame.columns == list(columns) else frame.select(*columns)
