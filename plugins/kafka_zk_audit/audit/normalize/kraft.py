"""A KRaft snapshot's own znodes (``/kraft/...``, written by snapshot.kraft.render) into the ``kraft_*`` tables.

What the KRaft metadata image holds and ZooKeeper never did: every registered broker and controller, each
partition's ELR and log directories, the quorum, the finalized features, the replay's end and its anomalies. A
ZooKeeper snapshot has none of these znodes, so its ``kraft_*`` tables are empty and the KRaft checks find nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, IntegerType, LongType, MapType, StringType

from . import kinds
from .common import JsonSpec, Parse, accepted, field_of, json_reason, name_part, scope, spec, text_reason

I, L, S, B = IntegerType(), LongType(), StringType(), BooleanType()  # noqa: E741
INTS = ArrayType(I)
FEATURE_RANGES = MapType(S, INTS)

BROKER = spec(("broker_id", I), ("epoch", L), ("incarnation_id", S), ("fenced", B), ("in_controlled_shutdown", B),
              ("migrating_zk_broker", B), ("rack", S), ("endpoints", ArrayType(S)), ("features", FEATURE_RANGES),
              ("log_dirs", ArrayType(S)), required=("broker_id", "fenced"))
CONTROLLER = spec(("controller_id", I), ("incarnation_id", S), ("zk_migration_ready", B),
                  ("endpoints", ArrayType(S)), ("features", FEATURE_RANGES), required=("controller_id",))
PARTITION = spec(("topic_id", S), ("partition_epoch", I), ("leader_epoch", I), ("leader_recovery_state", I),
                 ("elr", INTS), ("last_known_elr", INTS), ("directories", ArrayType(S)),
                 ("reassigning_since_offset", L), ("reassigning_since", L))
QUORUM = spec(("leader_id", I), ("epoch", I), ("voters", INTS), ("granting_voters", INTS), ("kraft_version", I))
LOG = spec(("last_offset", L), ("last_time", L), ("records_applied", L), ("zk_migration_state", I),
           required=("last_offset",))
ANOMALY = spec(("kind", S), ("offset", L), ("subject", S), ("detail", S), ("topic", S), ("partition", I),
               required=("kind", "offset"))

# (kind, JSON spec, table, extra columns from the path)
_DOCUMENTS = (
    (kinds.KRAFT_BROKER, BROKER, "kraft_brokers"),
    (kinds.KRAFT_CONTROLLER, CONTROLLER, "kraft_controllers"),
    (kinds.KRAFT_PARTITION, PARTITION, "kraft_partitions"),
    (kinds.KRAFT_QUORUM, QUORUM, "kraft_quorum"),
    (kinds.KRAFT_LOG, LOG, "kraft_log"),
    (kinds.KRAFT_ANOMALY, ANOMALY, "kraft_anomalies"),
)
TABLE_NAMES = (*(table for _, _, table in _DOCUMENTS), "kraft_features")


def _document(kind: str, json_spec: JsonSpec, table: str) -> Parse:
    values = [field_of(field.name).alias(field.name) for field in json_spec.fields.fields]
    if kind == kinds.KRAFT_PARTITION:
        values = [name_part(kinds.KRAFT_PARTITION_PATH, 1).alias("topic"),
                  name_part(kinds.KRAFT_PARTITION_PATH, 2).try_cast("int").alias("partition"), *values]
    return Parse((kind,), table, [text_reason(), json_reason(json_spec)], values, json=json_spec)


def _features() -> Parse:
    """/kraft/features: a JSON object of feature name -> finalized level."""
    levels = F.from_json(F.col("text"), MapType(S, I))
    checks = [text_reason(), F.when(levels.isNull(), F.lit("not a JSON object of levels"))]
    return Parse((kinds.KRAFT_FEATURES,), "kraft_features", checks, [levels.alias("features")])


def parses() -> list[Parse]:
    """One parse per KRaft kind, its struct named after its table."""
    built = []
    for kind, json_spec, table in _DOCUMENTS:
        with scope(kind):
            built.append(_document(kind, json_spec, table))
    with scope(kinds.KRAFT_FEATURES):
        built.append(_features())
    return built


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """kraft_brokers, kraft_controllers, kraft_partitions, kraft_quorum, kraft_log, kraft_anomalies and
    kraft_features."""
    return {table: accepted(parsed, table) for table in TABLE_NAMES}
