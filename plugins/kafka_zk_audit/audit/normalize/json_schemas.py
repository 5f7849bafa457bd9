"""Explicit ``from_json`` schemas of every JSON znode kind, as Kafka 0.8 to 3.9 writes them.

Fields are typed as Kafka writes them: ints as ``IntegerType``, longs that Kafka stores as strings
(``timestamp``, ``block_start``) as ``StringType`` (converted afterwards), nested objects Kafka keeps
opaque (``features``) as ``StringType`` so Spark returns their JSON text. ``required`` lists the
fields whose absence makes a znode malformed; versions are checked by the family modules.
"""

from __future__ import annotations

from pyspark.sql.types import ArrayType, IntegerType, LongType, MapType, StringType, StructField, StructType

from .common import spec

INT, L, S = IntegerType(), LongType(), StringType()
INTS = ArrayType(INT)
REPLICA_MAP = MapType(S, INTS)


def _entries(*fields: tuple[str, object]) -> ArrayType:
    return ArrayType(StructType([StructField(name, dtype) for name, dtype in fields]))  # type: ignore[arg-type]


BROKER = spec(
    ("version", INT),
    ("host", S),
    ("port", INT),
    ("jmx_port", INT),
    ("timestamp", S),
    ("rack", S),
    ("endpoints", ArrayType(S)),
    ("listener_security_protocol_map", MapType(S, S)),
    ("features", S),
)
# version is read as text: Kafka ignores it and third-party writers store "1".
TOPIC = spec(
    ("version", S),
    ("partitions", REPLICA_MAP),
    ("adding_replicas", REPLICA_MAP),
    ("removing_replicas", REPLICA_MAP),
    ("topic_id", S),
    required=("partitions",),
)
PARTITION_STATE = spec(
    ("version", INT),
    ("leader", INT),
    ("leader_epoch", INT),
    ("isr", INTS),
    ("controller_epoch", INT),
    ("leader_recovery_state", INT),
    required=("leader", "leader_epoch", "isr", "controller_epoch"),
)
CONTROLLER = spec(
    ("version", INT),
    ("brokerid", INT),
    ("timestamp", S),
    ("kraftControllerEpoch", INT),
    required=("brokerid",),
)
# /cluster/id's version is the string "1".
CLUSTER_ID = spec(("version", S), ("id", S), required=("id",))
FEATURE = spec(("version", INT), ("status", INT), ("features", S), required=("status", "features"))
MIGRATION = spec(
    ("version", INT),
    ("kraft_controller_id", INT),
    ("kraft_controller_epoch", INT),
    ("kraft_metadata_offset", L),
    ("kraft_metadata_epoch", INT),
    required=(
        "kraft_controller_id",
        "kraft_controller_epoch",
        "kraft_metadata_offset",
        "kraft_metadata_epoch",
    ),
)
CONFIG = spec(("version", INT), ("config", MapType(S, S)), required=("config",))
CONFIG_CHANGE = spec(("version", INT), ("entity_type", S), ("entity_name", S), ("entity_path", S))
ISR_CHANGE = spec(
    ("version", INT), ("partitions", _entries(("topic", S), ("partition", INT))), required=("partitions",)
)
LOG_DIR_EVENT = spec(("version", INT), ("broker", INT), ("event", INT), required=("broker",))
# Reassignment and preferred election: Kafka ignores "version" (bubuku writes "1"), so it is not read.
REASSIGNMENT = spec(
    ("partitions", _entries(("topic", S), ("partition", INT), ("replicas", INTS))),
    required=("partitions",),
)
PREFERRED_ELECTION = spec(
    ("partitions", _entries(("topic", S), ("partition", INT))), required=("partitions",)
)
PRODUCER_ID_BLOCK = spec(
    ("version", INT),
    ("broker", INT),
    ("block_start", S),
    ("block_end", S),
    required=("broker", "block_start", "block_end"),
)
ACL = spec(
    ("version", INT),
    ("acls", _entries(("principal", S), ("permissionType", S), ("operation", S), ("host", S))),
    required=("acls",),
)
ACL_EXTENDED_CHANGE = spec(
    ("version", INT),
    ("resourceType", S),
    ("name", S),
    ("patternType", S),
    required=("resourceType", "name", "patternType"),
)
DELEGATION_TOKEN = spec(
    ("version", INT),
    ("owner", S),
    ("tokenRequester", S),
    ("renewers", ArrayType(S)),
    ("issueTimestamp", L),
    ("maxTimestamp", L),
    ("expiryTimestamp", L),
    ("tokenId", S),
    required=("owner", "renewers", "issueTimestamp", "maxTimestamp", "expiryTimestamp"),
)
CONSUMER_REGISTRATION = spec(
    ("version", INT),
    ("subscription", MapType(S, INT)),
    ("pattern", S),
    ("timestamp", S),
    required=("subscription", "pattern"),
)
