"""Spark schemas shared by the snapshot, the normalizer, the checks and the gate.

Every normalized table carries ``path`` (the znode the row comes from), ``mzxid`` and ``ctime``
(epoch ms) so a finding can always point at its evidence. Tables are written under
``<warehouse>/tables/<table>/snapshot_id=<id>/``.

The audit is keyed by snapshot: in Spark every frame of the audit (the snapshot, each normalized table,
check rows, findings, readiness rows) carries ``snapshot_id`` (``KEY``) as its first column, and every
join, aggregation and window includes it, so one plan audits any number of snapshots. ``keyed(schema)``
is a schema with the key in front; the schemas below without it are what a table's files hold (the key
is the ``snapshot_id=<id>`` folder).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from kafka_zk_audit.contract.snapshot_table import SNAPSHOT_COLUMNS

I, L, S, B = IntegerType(), LongType(), StringType(), BooleanType()  # noqa: E741
INTS = ArrayType(IntegerType())


def _struct(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, dtype, True) for name, dtype in fields])  # type: ignore[arg-type]


ORIGIN = (("path", S), ("mzxid", L), ("ctime", L))

# The key of every frame of the audit: which snapshot a row belongs to.
KEY = "snapshot_id"


def keyed(schema: StructType) -> StructType:
    """The schema with the snapshot key in front (as the audit's frames carry it)."""
    if schema.names[:1] == [KEY]:
        return schema
    return StructType([StructField(KEY, StringType(), True), *schema.fields])

# One row per znode, as read from ZooKeeper (the snapshot's Parquet files): contract.snapshot_table's columns.
_SNAPSHOT_TYPES = {"string": S, "binary": BinaryType(), "int64": L, "int32": I}
SNAPSHOT = _struct(*((name, _SNAPSHOT_TYPES[kind]) for name, kind in SNAPSHOT_COLUMNS))

ENDPOINT = _struct(("listener", S), ("security_protocol", S), ("host", S), ("port", I))

TABLES: dict[str, StructType] = {
    # /brokers/ids/<id>, v1..v5. session = ephemeralOwner, broker_epoch = czxid.
    "brokers": _struct(
        ("broker_id", I), ("version", I), ("host", S), ("port", I), ("jmx_port", I), ("timestamp", L),
        ("rack", S), ("endpoints", ArrayType(ENDPOINT)), ("listener_security_protocol_map", MapType(S, S)),
        ("features", S), ("session", L), ("broker_epoch", L), ("is_ephemeral", B), *ORIGIN,
    ),
    # /brokers/topics/<t>, v1..v3: one row per topic. czxid tells a recreated topic apart.
    "topics": _struct(
        ("topic", S), ("version", I), ("topic_id", S), ("partition_count", I), ("czxid", L), *ORIGIN,
    ),
    # /brokers/topics/<t> "partitions" (+ adding/removing replicas): one row per assigned partition.
    "assignments": _struct(
        ("topic", S), ("partition", I), ("replicas", INTS), ("adding_replicas", INTS),
        ("removing_replicas", INTS), *ORIGIN,
    ),
    # /brokers/topics/<t>/partitions/<p>/state: one row per state znode.
    "partition_states": _struct(
        ("topic", S), ("partition", I), ("version", I), ("leader", I), ("leader_epoch", I), ("isr", INTS),
        ("controller_epoch", I), ("leader_recovery_state", I), ("state_version", I), *ORIGIN,
    ),
    # assignments FULL OUTER JOIN partition_states on (topic, partition). path = the state znode,
    # or the topic znode when the state is missing. assigned / has_state say which side exists.
    "partitions": _struct(
        ("topic", S), ("partition", I), ("replicas", INTS), ("leader", I), ("isr", INTS),
        ("leader_epoch", I), ("controller_epoch", I), ("leader_recovery_state", I), ("state_version", I),
        ("assigned", B), ("has_state", B), *ORIGIN,
    ),
    # /controller: v1, v2 or a bare int. 0 or 1 row.
    "controller": _struct(
        ("broker_id", I), ("version", I), ("timestamp", L), ("kraft_controller_epoch", I), ("session", L),
        ("is_ephemeral", B), *ORIGIN,
    ),
    # /controller_epoch: 0 or 1 row. data_version is the fencing token (2.2+).
    "controller_epoch": _struct(("epoch", I), ("data_version", I), *ORIGIN),
    "cluster_id": _struct(("cluster_id", S), ("version", S), *ORIGIN),
    # /feature: features is the JSON text of the "features" object.
    "feature": _struct(("version", I), ("status", I), ("features", S), *ORIGIN),
    "migration": _struct(
        ("version", I), ("kraft_controller_id", I), ("kraft_controller_epoch", I),
        ("kraft_metadata_offset", L), ("kraft_metadata_epoch", I), ("mtime", L), *ORIGIN,
    ),
    # /config/<entity_type>/<entity_name> (and users/<u>/clients/<c>: entity_type "users/clients",
    # entity_name "<u>/<c>"). Secret values (SCRAM credentials, encrypted passwords) are redacted.
    "configs": _struct(("entity_type", S), ("entity_name", S), ("version", I), ("config", MapType(S, S)), *ORIGIN),
    # /config/changes/config_change_<seq>; format: "v0_topic_string", "v1" or "v2".
    "config_changes": _struct(
        ("seq", L), ("format", S), ("version", I), ("entity_type", S), ("entity_name", S), ("entity_path", S),
        *ORIGIN,
    ),
    # Sequential notification children of every kind, for backlog checks.
    # kind: isr_change | log_dir_event | config_change | acl_change | acl_extended_change | token_change
    "notifications": _struct(("kind", S), ("parent", S), ("name", S), ("seq", L), *ORIGIN),
    "isr_change_notifications": _struct(("seq", L), ("topic", S), ("partition", I), *ORIGIN),
    "log_dir_event_notifications": _struct(("seq", L), ("version", I), ("broker_id", I), ("event", I), *ORIGIN),
    # kind: delete_topic | reassignment | preferred_election. One row per marker entry
    # (delete_topic: topic only; the other two: topic + partition; reassignment: + replicas).
    "admin_markers": _struct(("kind", S), ("topic", S), ("partition", I), ("replicas", INTS), *ORIGIN),
    "producer_id_block": _struct(("version", I), ("broker_id", I), ("block_start", L), ("block_end", L), *ORIGIN),
    # One row per ACL entry. pattern_type: literal | prefixed.
    "acls": _struct(
        ("pattern_type", S), ("resource_type", S), ("resource_name", S), ("principal", S),
        ("permission_type", S), ("operation", S), ("host", S), *ORIGIN,
    ),
    # store: literal (/kafka-acl-changes, "Type:name") | extended (/kafka-acl-extended-changes, JSON).
    "acl_changes": _struct(
        ("store", S), ("seq", L), ("resource_type", S), ("resource_name", S), ("pattern_type", S), *ORIGIN,
    ),
    # /delegation_token/tokens/<id>: metadata only, the HMAC is never in ZooKeeper.
    "delegation_tokens": _struct(
        ("token_id", S), ("version", I), ("owner", S), ("token_requester", S), ("renewers", ArrayType(S)),
        ("issue_timestamp", L), ("max_timestamp", L), ("expiry_timestamp", L), *ORIGIN,
    ),
    # /consumers/<g>/ids/<consumer_id>. format: "kafka" (JSON v1) or "pykafka" (plain topic name).
    "consumer_registrations": _struct(
        ("group_id", S), ("consumer_id", S), ("format", S), ("version", I), ("pattern", S),
        ("subscription", MapType(S, I)), ("timestamp", L), ("session", L), *ORIGIN,
    ),
    # /consumers/<g>/owners/<t>/<p> (node_form "partition") or /<brokerId>-<p> ("broker_partition").
    # owner = the thread id in the data; owner_consumer_id = owner without its "-<n>" suffix.
    "consumer_owners": _struct(
        ("group_id", S), ("topic", S), ("partition", I), ("node_form", S), ("owner", S),
        ("owner_consumer_id", S), ("owner_thread_index", I), ("session", L), *ORIGIN,
    ),
    # /consumers/<g>/offsets/<t>/<p>: offset is null when the data is not a decimal long.
    "consumer_offsets": _struct(
        ("group_id", S), ("topic", S), ("partition", I), ("offset", L), ("raw", S), ("mtime", L), *ORIGIN,
    ),
    # A KRaft snapshot's facts ZooKeeper never held (its /kraft/... znodes, snapshot.kraft.render); empty for a
    # ZooKeeper snapshot. Every registered broker, fenced or not, with what it registered.
    "kraft_brokers": _struct(
        ("broker_id", I), ("epoch", L), ("incarnation_id", S), ("fenced", B), ("in_controlled_shutdown", B),
        ("migrating_zk_broker", B), ("rack", S), ("endpoints", ArrayType(S)), ("features", MapType(S, INTS)),
        ("log_dirs", ArrayType(S)), *ORIGIN,
    ),
    "kraft_controllers": _struct(
        ("controller_id", I), ("incarnation_id", S), ("zk_migration_ready", B), ("endpoints", ArrayType(S)),
        ("features", MapType(S, INTS)), *ORIGIN,
    ),
    # One row per partition: what only KRaft keeps (the rest is in partitions/partition_states).
    "kraft_partitions": _struct(
        ("topic", S), ("partition", I), ("topic_id", S), ("partition_epoch", I), ("leader_epoch", I),
        ("leader_recovery_state", I), ("elr", INTS), ("last_known_elr", INTS), ("directories", ArrayType(S)),
        ("reassigning_since_offset", L), ("reassigning_since", L), *ORIGIN,
    ),
    # The Raft quorum as the log shows it (the newest LeaderChange, else the quorum-state file). 0 or 1 row.
    "kraft_quorum": _struct(
        ("leader_id", I), ("epoch", I), ("voters", INTS), ("granting_voters", INTS), ("kraft_version", I), *ORIGIN,
    ),
    # The finalized features (metadata.version and the others). 0 or 1 row.
    "kraft_features": _struct(("features", MapType(S, I)), *ORIGIN),
    # The replay itself: the last offset applied and its batch time. One row per KRaft snapshot (none for ZooKeeper).
    "kraft_log": _struct(
        ("last_offset", L), ("last_time", L), ("records_applied", L), ("zk_migration_state", I), *ORIGIN,
    ),
    # Records the replay could not use as they stand: kind undecodable_record (an unknown apiKey or version),
    # epoch_regressed (topic and partition set), unknown_partition_changed, unknown_topic_removed,
    # unknown_broker_changed, log_corrupt / log_truncated (where the replay stopped). offset: the record's.
    "kraft_anomalies": _struct(
        ("kind", S), ("offset", L), ("subject", S), ("detail", S), ("topic", S), ("partition", I), *ORIGIN,
    ),
    # Anything that does not parse or matches no known version of its kind.
    "malformed_znodes": _struct(("kind", S), ("reason", S), *ORIGIN),
    # Znodes the auditor may not read (any path; kind null for containers and unknown paths).
    # reason: the snapshot's unreadable column.
    "unreadable_znodes": _struct(("kind", S), ("reason", S), *ORIGIN),
}

# The contract's findings columns, in order. ``cluster`` is the fleet name of the snapshot's cluster (as every
# table of the audit carries it, last), so findings can be queried by cluster with any engine.
FINDINGS = _struct(
    ("snapshot_id", S), ("check_id", S), ("severity", S), ("topic", S), ("partition", I), ("group_id", S),
    ("broker_id", I), ("path", S), ("detail", S), ("first_seen", S), ("status", S), ("cluster", S),
)
# What a check function returns: the findings columns a check can know by itself. explained is True
# for a row whose cause the check knows and which is no problem (e.g. the offsets of a recreated topic
# going back): it becomes an info finding with status "explained", which does not gate.
CHECK_OUTPUT = _struct(
    ("check_id", S), ("topic", S), ("partition", I), ("group_id", S), ("broker_id", I), ("path", S), ("detail", S),
    ("explained", B),
)

# ZK→KRaft migration readiness (audit/checks/readiness/): one row per condition found on a subject,
# with its level at the target version (blocker | high | warn | info, contract/readiness.py) and the remedy.
# Written per snapshot as ``tables/readiness/``; not findings: readiness never alerts and gates only when
# the settings ask for it (``migration.gate``).
READINESS = _struct(
    ("condition_id", S), ("check_id", S), ("level", S), ("topic", S), ("partition", I), ("group_id", S),
    ("broker_id", I), ("path", S), ("detail", S), ("remedy", S),
)

# Every audit table carries these columns (null where they do not apply); the Data Docs list
# them for each unexpected row, so a failure names its topic, partition, group, broker or znode.
INDEX_COLUMNS: tuple[str, ...] = ("topic", "partition", "group_id", "broker_id", "path", "evidence")

# The drift table: one row per audited snapshot with its counts (audit/drift.py); the gate's drift suite
# compares it with the row of the cluster's baseline snapshot.
# It carries the gate's index columns (INDEX_COLUMNS) like every table the gate validates.
DRIFT = _struct(
    ("topic", S), ("partition", I), ("group_id", S), ("broker_id", I), ("path", S), ("evidence", S),
    ("cluster", S), ("snapshot_id", S), ("baseline_snapshot_id", S), ("started_at", S), ("brokers", L),
    ("topics", L), ("partitions", L), ("consumer_groups", L), ("znodes", L), ("controller_epoch", I), ("zxid", L),
)
