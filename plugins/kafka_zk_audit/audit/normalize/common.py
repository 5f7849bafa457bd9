"""Helpers the family modules share: origin columns, reasons, JSON parsing, and the parse spec of a kind.

A family describes each kind it parses as a :class:`Parse` (the kinds it reads, its JSON spec, the columns it takes
from the path, its ordered reasons and the values of its table's struct), built inside ``scope(name)``: the
expressions then name that parse's own columns (``field_of``, ``own``), so that every kind's parse can sit side by
side in one frame (``onepass``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_zk_audit.audit.plans import Steps
from kafka_zk_audit.contract.schemas import KEY

ORIGIN = ("path", "mzxid", "ctime")
REASON = "reason"
JSON = "_json"
LOOSE = "_loose"
CORRUPT = "_corrupt_record"
# Kafka parses with Jackson defaults: no single quotes, no comments. Spark would allow single quotes.
JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, "allowSingleQuotes": "false"}
DECIMAL_INT = "^-?[0-9]+\\z"  # \z: "$" would also match before a final newline
# ASCII control characters other than tab, newline and carriage return: data that is not text.
CONTROL_CHARS = "[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]"


@dataclass(frozen=True)
class JsonSpec:
    """The fields a kind's JSON may carry, typed as Kafka writes them, and the ones it must carry."""

    fields: T.StructType
    required: tuple[str, ...] = ()

    @property
    def typed(self) -> T.StructType:
        return T.StructType([*self.fields.fields, T.StructField(CORRUPT, T.StringType())])

    @property
    def loose(self) -> T.StructType:
        """Same field names, every value read as text: parses whenever the JSON object does."""
        names = [f.name for f in self.fields.fields] + [CORRUPT]
        return T.StructType([T.StructField(name, T.StringType()) for name in names])


_SCOPES: list[str] = []


@contextmanager
def scope(name: str) -> Iterator[None]:
    """Expressions built inside name the columns of parse ``name`` (``field_of``, ``own``, the reasons)."""
    _SCOPES.append(name)
    try:
        yield
    finally:
        _SCOPES.pop()


def current_scope() -> str:
    if not _SCOPES:
        raise RuntimeError("a parse expression built outside normalize.common.scope(...)")
    return _SCOPES[-1]


def scoped(name: str, parse_name: str | None = None) -> str:
    """The column name of ``name`` in parse ``parse_name`` (default: the current one)."""
    return f"{name}__{parse_name or current_scope()}"


def json_column() -> str:
    """The current parse's typed JSON column."""
    return scoped(JSON)


def loose_column() -> str:
    """The current parse's all-text JSON column (only for rows the typed parse rejects)."""
    return scoped(LOOSE)


def own(name: str) -> Column:
    """A column the current parse took from the path (``Parse.derived``)."""
    return F.col(scoped(name))


@dataclass
class Parse:
    """How a kind (or kinds read alike) becomes its table's rows and its malformed rows, as expressions.

    ``derived``: columns from the path (read with ``own``); ``json``: the spec of its one ``from_json`` (None for
    text data); ``reasons``: ordered checks, the first non-null one is the row's reason; ``values``: the fields of the
    struct ``table``; ``include``: rows outside it are neither parsed nor malformed (None: every row of the kinds).
    Built inside ``scope(name)``; ``name`` defaults to the scope.
    """

    kinds: tuple[str, ...]
    table: str
    reasons: list[Column]
    values: list[Column]
    json: JsonSpec | None = None
    retry_backslashes: bool = False
    derived: dict[str, Column] = field(default_factory=dict)
    include: Column | None = None
    name: str = field(default_factory=current_scope)


def spec(*fields: tuple[str, T.DataType], required: Sequence[str] = ()) -> JsonSpec:
    return JsonSpec(T.StructType([T.StructField(name, dtype) for name, dtype in fields]), tuple(required))


def origin() -> list[str]:
    """The columns every row carries from its znode: the snapshot key, then path, mzxid and ctime."""
    return [KEY, *ORIGIN]


def name_part(pattern: str, group: int = 1) -> Column:
    """A part of the path captured by a kinds.py pattern."""
    return F.regexp_extract(F.col("path"), pattern, group)


def to_int(text: Column) -> Column:
    """An optional-minus decimal integer as int, else null (no whitespace, no overflow)."""
    return F.when(text.rlike(DECIMAL_INT), text.try_cast("int"))


def to_long(text: Column) -> Column:
    """An optional-minus decimal integer as long, else null (no whitespace, no overflow)."""
    return F.when(text.rlike(DECIMAL_INT), text.try_cast("long"))


def lenient_long(text: Column) -> Column:
    """Values Kafka never reads (timestamps): a decimal string or number as long, anything else null."""
    return F.trim(text).try_cast("long")


def seq_of_path() -> Column:
    """The 10-digit suffix of a sequential znode's name, as long."""
    return F.regexp_extract(F.col("path"), "([0-9]{10})$", 1).try_cast("long")


def only_when(condition: Column, checks: Iterable[Column]) -> list[Column]:
    """The checks, applied only to rows where ``condition`` holds."""
    return [F.when(condition, check) for check in checks]


def first_reason(checks: Iterable[Column]) -> Column:
    """The first non-null reason of the ordered checks, or null when every check passes."""
    checks = list(checks)
    return checks[0] if len(checks) == 1 else F.coalesce(*checks)


def text_reason(data_required: bool = True) -> Column:
    """Reason for data that is not text at all (and, when required, for absent data)."""
    no_data = "WHEN text IS NULL OR text = '' THEN 'no data'" if data_required else ""
    binary = f"WHEN text RLIKE r'{CONTROL_CHARS}' THEN 'binary data'"
    return F.expr(f"CASE WHEN bad_utf8 THEN 'not UTF-8' {binary} {no_data} END")


def field_of(name: str) -> Column:
    """A field of the current parse's typed JSON."""
    return F.col(f"{json_column()}.`{name}`")


def fields_of(*names: str) -> list[Column]:
    """Fields of the typed parse, each under its own name."""
    return [field_of(name).alias(name) for name in names]


_PLURAL = {T.IntegerType: "integers", T.LongType: "integers", T.StringType: "strings"}


def _plural(dtype: T.DataType) -> str:
    if isinstance(dtype, T.ArrayType):
        element = _PLURAL.get(type(dtype.elementType), "")
        return f"{element[:-1]} lists".lstrip()
    return _PLURAL.get(type(dtype), "objects")


def describe(dtype: T.DataType) -> str:
    """How a reason names the JSON type a field should have, e.g. ``a list of integers``."""
    if isinstance(dtype, (T.IntegerType, T.LongType)):
        return "an integer"
    if isinstance(dtype, T.StringType):
        return "a string"
    if isinstance(dtype, T.ArrayType):
        return f"a list of {_plural(dtype.elementType)}"
    if isinstance(dtype, T.MapType) and not isinstance(dtype.valueType, T.StringType):
        return f"an object of {_plural(dtype.valueType)}"
    return "an object"


def _sql_field(struct: str, name: str) -> str:
    return f"{struct}.`{name}`"


def json_reason(json_spec: JsonSpec) -> Column:
    """The reason from a ``with_json`` parse: syntax, shape, field types, then required fields.

    Built as one SQL expression from the spec (one call into Spark instead of dozens).
    """
    typed_json, loose_json = json_column(), loose_column()
    cases = [
        f"CASE WHEN {typed_json} IS NULL OR {loose_json}.{CORRUPT} IS NOT NULL THEN"
        " CASE WHEN try_parse_json(text) IS NOT NULL AND NOT ltrim(text) LIKE '{%' THEN 'not a JSON object'"
        " ELSE 'not valid JSON' END END"
    ]
    for struct_field in json_spec.fields.fields:
        typed, loose = _sql_field(typed_json, struct_field.name), _sql_field(loose_json, struct_field.name)
        message = f"{struct_field.name} is not {describe(struct_field.dataType)}"
        cases.append(f"CASE WHEN {typed} IS NULL AND {loose} IS NOT NULL THEN '{message}' END")
    cases.append(f"CASE WHEN {typed_json}.{CORRUPT} IS NOT NULL THEN 'unexpected JSON content' END")
    for name in json_spec.required:
        cases.append(
            f"CASE WHEN {_sql_field(typed_json, name)} IS NULL THEN"
            f" CASE WHEN array_contains(json_object_keys(text), '{name}') THEN '{name} is null'"
            f" ELSE 'missing field {name}' END END"
        )
    return F.expr(f"coalesce({', '.join(cases)})")


def version_reason(known: Sequence[int], required: bool) -> Column:
    """Reason for a ``_json.version`` outside ``known`` (or absent, when ``required``)."""
    version = _sql_field(json_column(), "version")
    known_list = ", ".join(str(number) for number in known)
    missing = f"WHEN {version} IS NULL THEN 'missing field version'" if required else ""
    return F.expr(
        f"CASE {missing} WHEN {version} NOT IN ({known_list}) THEN concat('unknown version ', {version}) END"
    )


def document_reasons(json_spec: JsonSpec, versions: Sequence[int], version_required: bool) -> list[Column]:
    """The reasons every versioned JSON znode shares: not text, not the expected JSON, unknown version."""
    return [text_reason(), json_reason(json_spec), version_reason(versions, required=version_required)]


def accepted(parsed: DataFrame, column: str) -> DataFrame:
    """The rows without a reason of the parses whose struct is ``column``: its fields, then key and origin."""
    steps = Steps(parsed).where(f"{column} IS NOT NULL AND {REASON} IS NULL")
    return steps.select(f"{column}.*", *origin()).frame()
