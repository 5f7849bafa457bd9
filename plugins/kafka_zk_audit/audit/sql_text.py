"""Spark SQL text for expressions built from names and values, parsed by the JVM in one ``F.expr`` call.

Each call of PySpark's column API (``F.col``, ``cast``, ``alias``, ``F.when``, a column list) is a round trip to the
driver JVM; an audit makes tens of thousands of them, and they are most of its planning time. An expression
written as SQL text is one round trip however many columns it names: the same Catalyst expression, planned the
same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType


def identifier(name: str) -> str:
    """A column name as a quoted SQL identifier (backticks; a backtick in the name doubled)."""
    return "`" + name.replace("`", "``") + "`"


def column_ref(name: str) -> str:
    """A column reference as ``F.col(name)`` reads it: a dot separates a struct's field (``e.host``)."""
    return ".".join(identifier(part) for part in name.split("."))


def string_literal(text: str) -> str:
    """A Python string as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_type(data_type: DataType) -> str:
    """A Spark type as SQL text, e.g. ``array<int>`` or ``struct<`host`:string,`port`:int>``."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        return "struct<" + ",".join(f"{identifier(f.name)}:{sql_type(f.dataType)}" for f in data_type.fields) + ">"
    if isinstance(data_type, ArrayType):
        return f"array<{sql_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"map<{sql_type(data_type.keyType)},{sql_type(data_type.valueType)}>"
    return data_type.simpleString()


def cast(sql: str, data_type: DataType) -> str:
    return f"CAST({sql} AS {sql_type(data_type)})"


def nullable(sql: str) -> str:
    """The value of ``sql``, marked nullable (a CASE that yields it, or null when it is null)."""
    return f"CASE WHEN {sql} IS NULL THEN NULL ELSE {sql} END"


def named_struct(fields: Iterable[tuple[str, str]]) -> str:
    """A struct of (field name, SQL value) pairs."""
    return "named_struct(" + ", ".join(f"{string_literal(name)}, {sql}" for name, sql in fields) + ")"


def expr(sql: str) -> Column:
    """The SQL text as a Column (one round trip to the JVM)."""
    from pyspark.sql import functions as F

    return F.expr(sql)
