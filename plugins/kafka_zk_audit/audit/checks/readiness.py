"""ZooKeeper → KRaft migration readiness in Spark: one pure function per readiness check id, and
``run_readiness`` that gives the READINESS rows of any number of snapshots, each at its own target Kafka version.

Each function takes keyed normalized tables (and, where no table carries the fact, the raw snapshot frame, the
snapshot ids or the manifests' znode ACLs) and returns keyed CHECK_OUTPUT rows: one per snapshot and subject where
Kafka's migration code would stall, crash or lose data (``contract/readiness.py`` and
``notes/kraft-migration-readiness.md`` cite it). Every join, aggregation and window includes the snapshot key, so
the rows of snapshots computed together are those of each computed alone. The level of a condition at a
snapshot's target comes in as data (``readiness_levels``), joined on (snapshot, check).
Secret values are never read: SCRAM users and password configs are recognised by their key names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import reduce
from typing import Any, NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.checks.common import empty_ints, int_list, say, text, to_output, with_kraft_migration
from kafka_zk_audit.audit.normalize import kinds
from kafka_zk_audit.contract.readiness import BY_CHECK_ID, READINESS_CHECK_IDS, parse_target
from kafka_zk_audit.contract.schemas import KEY, READINESS, keyed
from kafka_zk_audit.contract.secrets import FINGERPRINT_PREFIX, PASSWORD_CONFIG_NAMES

# Kafka's default reserved.broker.max.id: generated broker ids start above it.
RESERVED_BROKER_MAX_ID = 1000
# The broker registration version written from IBP 2.7-IV0 on (ZkData BrokerIdZNode.encode).
BROKER_VERSION_IBP_2_7 = 5
# FeatureZNode: status 1 = enabled (IBP >= 2.7), version 2 from IBP 3.3-IV0.
FEATURE_ENABLED, FEATURE_V2 = 1, 2
# Resource types of Kafka's ACL stores (ResourceType, as the store paths spell them) and pattern types.
ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
ACL_PATTERN_TYPES = ("literal", "prefixed")
SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# Entity types whose configs the migration reads as client quotas (ZkConfigMigrationClient.iterateClientQuotas).
QUOTA_ENTITY_TYPES = ("users", "clients", "users/clients", "ips")
DEFAULT_ENTITY = "<default>"
# What java.lang.Double.valueOf accepts (after trimming): decimal or hex floats, NaN, Infinity, a d/f suffix.
JAVA_DOUBLE = (
    r"^\s*[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)"
    r"|(0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?))\s*$"
)
# A password config (DynamicBrokerConfig.isPasswordConfig: the name ends with a PASSWORD config's name).
PASSWORD_KEY = "(" + "|".join(name.replace(".", r"\.") + "$" for name in PASSWORD_CONFIG_NAMES) + ")"
REDACTED = "[redacted]"
# The columns of a check's rows that a readiness row keeps (with the snapshot key).
CHECK_COLUMNS = ("check_id", "topic", "partition", "group_id", "broker_id", "path", "detail")
# ZooKeeper permissions the KRaft controller's dual writes need on Kafka's znodes.
WRITE_PERMISSIONS = frozenset("cdrw")
# A Kafka topic id (Uuid.toString: URL-safe base64 of 16 bytes, no padding; fromString accepts padding).
TOPIC_ID = r"^[A-Za-z0-9_-]{22}(==)?$"


# --- helpers -------------------------------------------------------------------------------------------------


def _pending_deletions(admin_markers: DataFrame) -> DataFrame:
    """Topics under /admin/delete_topics: the migration leaves them out (3.6.1+) or migrates them (R05)."""
    return admin_markers.where(F.col("kind") == "delete_topic").select(KEY, "topic").distinct()


def _migrated(rows: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """The rows of topics the migration reads (ZkTopicMigrationClient.iterateTopics: all topics minus deletions)."""
    return rows.join(_pending_deletions(admin_markers), [KEY, "topic"], "left_anti")


def _topic_of(path: Column) -> Column:
    return F.regexp_extract(path, kinds.TOPIC_PATH, 1)


def snapshot_keys(spark: SparkSession, snapshot_ids: Iterable[str]) -> DataFrame:
    """One row per snapshot (column ``snapshot_id``): the snapshots a cluster-wide condition is judged on."""
    return spark.createDataFrame([(str(sid),) for sid in snapshot_ids], StructType([StructField(KEY, StringType())]))


def _absent(snapshot_ids: DataFrame, table: DataFrame, unreadable_znodes: DataFrame, malformed_znodes: DataFrame,
            path: str) -> DataFrame:
    """One row per snapshot (columns snapshot_id, state: "absent" or "unparseable (<reason>)") when ``path`` gives no
    row of that snapshot in ``table``, unless the auditor could not read it (its content is then unknown)."""
    state = (
        snapshot_ids.select(KEY).distinct()
        .join(table.select(KEY).distinct(), KEY, "left_anti")
        .join(unreadable_znodes.where(F.col("path") == path).select(KEY).distinct(), KEY, "left_anti")
    )
    reason = malformed_znodes.where(F.col("path") == path).groupBy(KEY).agg(F.min("reason").alias("reason"))
    return state.join(reason, KEY, "left").select(
        KEY, F.coalesce(F.concat(F.lit("unparseable ("), "reason", F.lit(")")), F.lit("absent")).alias("state")
    )


# --- one function per check id -------------------------------------------------------------------------------


def kraft_migration_leftover(migration: DataFrame, controller: DataFrame) -> DataFrame:
    """R01: /migration records KRaft metadata (offset > 0) while a ZooKeeper-mode controller (ephemeral,
    kraftControllerEpoch -1) holds /controller: a reverted migration (KRaftMigrationDriver ~686-718: a new quorum
    that finds offset > 0 takes the load as done)."""
    zk_mode = controller.where(
        F.coalesce(F.col("is_ephemeral"), F.lit(False)) & (F.coalesce(F.col("kraft_controller_epoch"), F.lit(-1)) < 0)
    ).groupBy(KEY).agg(F.min("broker_id").alias("zk_controller"))
    rows = migration.where(F.col("kraft_metadata_offset") > 0).join(zk_mode, KEY)
    return to_output(
        rows, "kraft_migration_leftover", path="path",
        detail=say("/migration has kraft_metadata_offset %s (KRaft controller %s, epoch %s) but broker %s holds "
                   "/controller in ZooKeeper mode: a migration was reverted", "kraft_metadata_offset",
                   "kraft_controller_id", "kraft_controller_epoch", "zk_controller"),
    )


def kraft_replica_on_unregistered_broker(
    assignments: DataFrame, broker_ids: DataFrame, admin_markers: DataFrame, controller: DataFrame
) -> DataFrame:
    """R02: every broker named in a migrated topic's assignment is registered under /brokers/ids
    (KRaftMigrationDriver.areZkBrokersReadyForMigration waits for all of them). Not judged while a KRaft controller
    holds /controller: brokers already in KRaft mode are then absent from /brokers/ids."""
    replicas = _migrated(assignments, admin_markers).select(
        KEY, "topic", "partition", "path", F.explode("replicas").alias("broker_id")
    ).where(F.col("broker_id").isNotNull())
    unregistered = replicas.join(broker_ids.select(KEY, "broker_id").distinct(), [KEY, "broker_id"], "left_anti")
    rows = with_kraft_migration(unregistered, controller).where(~F.col("kraft_migration"))
    return to_output(
        rows, "kraft_replica_on_unregistered_broker", topic="topic", partition="partition", broker_id="broker_id",
        path="path",
        detail=say("%s-%s has a replica on broker %s, which is not registered under /brokers/ids: the migration "
                   "waits until it registers", "topic", "partition", "broker_id"),
    )


def kraft_topic_without_id(topics: DataFrame, malformed_znodes: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """R03: every migrated topic znode parses and carries a topic id (ZkTopicMigrationClient: topicIdOpt.get)."""
    without_id = topics.where(
        F.col("topic_id").isNull() | ~F.coalesce(F.col("topic_id").rlike(TOPIC_ID), F.lit(False))
    ).select(
        KEY, "topic", "path",
        F.when(F.col("topic_id").isNull(), say("topic znode (version %s) has no topic_id", "version"))
        .otherwise(say("topic_id %s is not a Kafka topic id", "topic_id")).alias("problem"),
    )
    unparsable = malformed_znodes.where(F.col("kind") == kinds.TOPIC).select(
        KEY, _topic_of(F.col("path")).alias("topic"), "path",
        say("topic znode does not parse: %s", "reason").alias("problem"),
    )
    rows = _migrated(without_id.unionByName(unparsable), admin_markers)
    return to_output(
        rows, "kraft_topic_without_id", topic="topic", path="path",
        detail=F.concat(F.col("problem"), F.lit("; the migrating controller fails on it")),
    )


def kraft_partition_state_missing(
    partitions: DataFrame, admin_markers: DataFrame, malformed_znodes: DataFrame, unreadable_znodes: DataFrame
) -> DataFrame:
    """R04: every assigned partition of a migrated topic has a state znode (ZkTopicMigrationClient ~89 otherwise
    invents leader = first replica, ISR = all replicas, leader epoch 0). A state the auditor could not read, or one
    that does not parse, is not missing."""
    state_path = F.concat(F.col("path"), F.lit("/partitions/"), F.col("partition").cast("string"), F.lit("/state"))
    missing = partitions.where(F.col("assigned") & ~F.col("has_state")).withColumn("state_path", state_path)
    seen = malformed_znodes.select(KEY, F.col("path").alias("state_path")).unionByName(
        unreadable_znodes.select(KEY, F.col("path").alias("state_path"))
    )
    hidden = unreadable_znodes.select(F.col(KEY).alias("hidden_snapshot_id"), F.col("path").alias("hidden"))
    under_hidden = (F.col(KEY) == F.col("hidden_snapshot_id")) & F.col("state_path").startswith(
        F.concat(F.col("hidden"), F.lit("/")))
    rows = (
        _migrated(missing, admin_markers)
        .join(seen, [KEY, "state_path"], "left_anti")
        .join(hidden, under_hidden, "left_anti")
    )
    return to_output(
        rows, "kraft_partition_state_missing", topic="topic", partition="partition", path="path",
        detail=say("%s-%s has no %s: KRaft would start it with leader = first replica and ISR = all replicas",
                   "topic", "partition", "state_path"),
    )


def kraft_pending_topic_deletion(admin_markers: DataFrame, topics: DataFrame, malformed_znodes: DataFrame) -> DataFrame:
    """R05: a /admin/delete_topics/<t> marker whose topic still exists (before 3.6.1 the migration copies it as a
    live topic, KAFKA-15605; from 3.6.1 it is left out and the brokers delete it afterwards)."""
    existing = topics.select(KEY, "topic").unionByName(
        malformed_znodes.where(F.col("kind") == kinds.TOPIC).select(KEY, _topic_of(F.col("path")).alias("topic"))
    ).distinct()
    rows = admin_markers.where(F.col("kind") == "delete_topic").join(existing, [KEY, "topic"])
    return to_output(
        rows, "kraft_pending_topic_deletion", topic="topic", path="path",
        detail=say("topic %s is marked for deletion but still exists", "topic"),
    )


def kraft_reassignment_in_flight(assignments: DataFrame, admin_markers: DataFrame) -> DataFrame:
    """R06: no partition is being reassigned: adding/removing replicas in the topic znode (KIP-455) or an entry of
    /admin/reassign_partitions (the migration copies the half-moved assignment)."""
    moving = assignments.where(
        (F.size(F.coalesce("adding_replicas", empty_ints())) > 0)
        | (F.size(F.coalesce("removing_replicas", empty_ints())) > 0)
    ).select(
        KEY, "topic", "partition", "path",
        F.format_string("adding %s, removing %s", int_list("adding_replicas"), int_list("removing_replicas"))
        .alias("what"),
    )
    legacy = admin_markers.where(F.col("kind") == "reassignment").select(
        KEY, "topic", "partition", "path",
        F.format_string("/admin/reassign_partitions moves it to %s", int_list("replicas")).alias("what"),
    )
    rows = moving.unionByName(legacy).groupBy(KEY, "topic", "partition").agg(
        F.min("path").alias("path"), F.array_join(F.array_sort(F.collect_set("what")), "; ").alias("what")
    )
    return to_output(
        rows, "kraft_reassignment_in_flight", topic="topic", partition="partition", path="path",
        detail=say("%s-%s is being reassigned (%s)", "topic", "partition", "what"),
    )


def kraft_scram_credentials(configs: DataFrame) -> DataFrame:
    """R07: /config/users/<u> with SCRAM credentials (key names only; 3.4 does not migrate them)."""
    mechanisms = F.array_sort(F.filter(F.map_keys("config"), lambda key: key.isin(*SCRAM_KEYS)))
    rows = configs.where(F.col("entity_type") == "users").select(
        KEY, "entity_name", "path", mechanisms.alias("mechanisms"))
    rows = rows.where(F.size("mechanisms") > 0)
    return to_output(
        rows, "kraft_scram_credentials", path="path",
        detail=say("user %s has %s credentials", "entity_name", F.array_join("mechanisms", ", ")),
    )


def _known_acl() -> Column:
    return F.col("resource_type").isin(*ACL_RESOURCE_TYPES) & F.col("pattern_type").isin(*ACL_PATTERN_TYPES)


def kraft_acls_present(acls: DataFrame) -> DataFrame:
    """R08: ACL resource znodes (one row each): an authorizer is in use, which 3.4 and 3.5.0 reject."""
    rows = acls.where(_known_acl()).groupBy(KEY, "path", "pattern_type", "resource_type", "resource_name").agg(
        F.count(F.lit(1)).alias("entries")
    )
    return to_output(
        rows, "kraft_acls_present", path="path",
        detail=say("%s ACL entries on %s %s (%s)", "entries", "resource_type", "resource_name", "pattern_type"),
    )


def kraft_acl_unknown_resource_type(acls: DataFrame) -> DataFrame:
    """R08: ACL znodes of a resource or pattern type Kafka does not know (the migration drops them)."""
    rows = acls.where(~_known_acl()).groupBy(KEY, "path", "pattern_type", "resource_type").agg(
        F.count(F.lit(1)).alias("entries")
    )
    return to_output(
        rows, "kraft_acl_unknown_resource_type", path="path",
        detail=say("%s ACL entries of unknown resource type %s (pattern %s)", "entries", "resource_type",
                   "pattern_type"),
    )


def kraft_delegation_tokens(delegation_tokens: DataFrame) -> DataFrame:
    """R09: delegation tokens (migrated only from 3.6.0, KAFKA-15219)."""
    return to_output(
        delegation_tokens, "kraft_delegation_tokens", path="path",
        detail=F.concat(F.lit("delegation token "), text("token_id"),
                        F.when(F.col("owner").isNotNull(), F.concat(F.lit(" of "), F.col("owner"))).otherwise("")),
    )


def _broker_entity_id() -> Column:
    return F.when(F.col("entity_name").rlike(r"^-?[0-9]{1,9}$"), F.col("entity_name").cast("int"))


def kraft_encrypted_passwords(configs: DataFrame) -> DataFrame:
    """R10: dynamic broker password configs (DynamicBrokerConfig.isPasswordConfig by key name), stored encrypted
    with password.encoder.secret; the controllers decrypt them while migrating (KAFKA-14801)."""
    keys = F.array_sort(F.filter(F.map_keys("config"), lambda key: key.rlike(PASSWORD_KEY)))
    rows = configs.where(F.col("entity_type") == "brokers").select(KEY, "entity_name", "path", keys.alias("keys"))
    rows = rows.where(F.size("keys") > 0)
    return to_output(
        rows, "kraft_encrypted_passwords", broker_id=_broker_entity_id(), path="path",
        detail=say("broker %s has encrypted password configs %s", "entity_name", F.array_join("keys", ", ")),
    )


def kraft_default_broker_config(configs: DataFrame) -> DataFrame:
    """R11: a non-empty /config/brokers/<default> (3.5.0 and 3.5.1 mishandle the cluster-default entity)."""
    rows = configs.where(
        (F.col("entity_type") == "brokers") & (F.col("entity_name") == DEFAULT_ENTITY) & (F.size("config") > 0)
    )
    return to_output(
        rows, "kraft_default_broker_config", path="path",
        detail=say("cluster-default dynamic broker configs: %s",
                   F.array_join(F.array_sort(F.map_keys("config")), ", ")),
    )


def _quotas(configs: DataFrame) -> DataFrame:
    return configs.where(F.col("entity_type").isin(*QUOTA_ENTITY_TYPES) & F.col("config").isNotNull())


def kraft_quota_invalid(configs: DataFrame) -> DataFrame:
    """R12: every value of a quota entity (users without their SCRAM keys, clients, users/<u>/clients/<c>, ips)
    parses as a Java double (ZkAdminManager.clientQuotaPropsToDoubleMap throws otherwise). Secret values (a
    fingerprint or ``[redacted]``) are unknown and not judged."""

    def bad(key: Column, value: Column) -> Column:
        secret = value.startswith(FINGERPRINT_PREFIX) | (value == REDACTED)
        return ~key.isin(*SCRAM_KEYS) & ~secret & ~F.coalesce(value.rlike(JAVA_DOUBLE), F.lit(False))

    invalid = F.filter(F.map_keys("config"), lambda key: bad(key, F.col("config")[key]))
    rows = _quotas(configs).select(KEY, "entity_type", "entity_name", "path", "config",
                                   F.array_sort(invalid).alias("invalid"))
    rows = rows.where(F.size("invalid") > 0)
    values = F.transform("invalid", lambda key: F.concat(key, F.lit("="), F.coalesce(F.col("config")[key], F.lit(""))))
    return to_output(
        rows, "kraft_quota_invalid", path="path",
        detail=say("%s %s has quota values that are not numbers: %s", "entity_type", "entity_name",
                   F.array_join(values, ", ")),
    )


def kraft_quota_odd_entity_name(configs: DataFrame) -> DataFrame:
    """R12: quota entities named <default> or with %-sanitized characters, which releases before 3.6.2 and 3.7.0
    migrate under the wrong name (KAFKA-16222, KAFKA-16411). Entities without quota values are left out."""
    names = F.split("entity_name", "/")
    odd = F.exists(names, lambda name: (name == DEFAULT_ENTITY) | name.contains("%"))
    quota_keys = F.filter(F.map_keys("config"), lambda key: ~key.isin(*SCRAM_KEYS))
    rows = _quotas(configs).where(odd & (F.size(quota_keys) > 0))
    return to_output(
        rows, "kraft_quota_odd_entity_name", path="path",
        detail=say("quota entity %s %s has a <default> or sanitized name", "entity_type", "entity_name"),
    )


def kraft_no_common_listener(brokers: DataFrame) -> DataFrame:
    """R13: some listener name is advertised by every registered broker (the KRaft controller reaches all brokers
    through one, KAFKA-16468). One cluster-wide row, path /brokers/ids."""
    listeners = brokers.select(
        KEY, "broker_id", F.array_distinct(F.transform(F.coalesce("endpoints", F.array()), lambda e: e["listener"]))
        .alias("listeners")
    )
    rows = listeners.groupBy(KEY).agg(
        F.count(F.lit(1)).alias("brokers"),
        F.reduce(F.collect_list("listeners"), F.lit(None).cast("array<string>"),
                 lambda acc, x: F.when(acc.isNull(), x).otherwise(F.array_intersect(acc, x))).alias("common"),
        F.array_sort(F.collect_list(F.format_string("%s: %s", F.col("broker_id").cast("string"),
                                                    F.array_join(F.array_sort("listeners"), ", ")))).alias("each"),
    ).where((F.col("brokers") > 0) & (F.size(F.coalesce("common", F.array())) == 0))
    return to_output(
        rows, "kraft_no_common_listener", path=F.lit("/brokers/ids"),
        detail=say("no listener is shared by all %s brokers (%s)", "brokers", F.array_join("each", "; ")),
    )


def kraft_generated_broker_ids(brokers: DataFrame, snapshot: DataFrame) -> DataFrame:
    """R15: broker ids above reserved.broker.max.id (default 1000) and a used /brokers/seqid (stat version > 0):
    generated broker ids, which 3.9 rejects in migration (KAFKA-17543)."""
    generated = brokers.where(F.col("broker_id") > RESERVED_BROKER_MAX_ID).select(
        KEY, "broker_id", "path",
        say("broker id %s is above reserved.broker.max.id (default %s): a generated id", "broker_id",
            F.lit(RESERVED_BROKER_MAX_ID)).alias("what"),
    )
    seqid = snapshot.where((F.col("path") == "/brokers/seqid") & (F.col("version") > 0)).select(
        KEY, F.lit(None).cast("int").alias("broker_id"), "path",
        say("/brokers/seqid has handed out %s generated broker ids", "version").alias("what"),
    )
    return to_output(generated.unionByName(seqid), "kraft_generated_broker_ids", broker_id="broker_id", path="path",
                     detail=F.col("what"))


def kraft_ibp_too_low(
    snapshot_ids: DataFrame, brokers: DataFrame, feature: DataFrame, malformed_znodes: DataFrame,
    unreadable_znodes: DataFrame,
) -> DataFrame:
    """R16: lower bounds of inter.broker.protocol.version the tree proves (the migration needs >= 3.4): a broker
    registration below v5 (ZkData BrokerIdZNode: v5 from IBP 2.7-IV0); /feature absent or disabled (the controller
    enables it from IBP 2.7); /feature v1 (v2 from IBP 3.3-IV0). A /feature that does not parse or cannot be read
    proves nothing. ``snapshot_ids`` (one row per snapshot, ``snapshot_keys``) are the snapshots judged for an
    absent /feature."""
    old_brokers = brokers.where(F.col("version") < BROKER_VERSION_IBP_2_7).select(
        KEY, "broker_id", "path",
        say("broker %s registered with version %s: its inter.broker.protocol.version is below 2.7", "broker_id",
            "version").alias("what"),
    )
    feature_rows = feature.where(
        (F.col("status") != FEATURE_ENABLED) | (F.col("version") < FEATURE_V2)
    ).select(
        KEY, F.lit(None).cast("int").alias("broker_id"), "path",
        F.when(F.col("status") != FEATURE_ENABLED,
               F.lit("/feature is disabled: the controller's inter.broker.protocol.version is below 2.7"))
        .otherwise(F.lit("/feature is version 1: the controller's inter.broker.protocol.version is below 3.3-IV0"))
        .alias("what"),
    )
    absent = _absent(snapshot_ids, feature, unreadable_znodes, malformed_znodes, "/feature").where(
        F.col("state") == "absent"
    ).select(
        KEY, F.lit(None).cast("int").alias("broker_id"), F.lit("/feature").alias("path"),
        F.lit("/feature is absent: no controller with inter.broker.protocol.version >= 2.7 has run").alias("what"),
    )
    rows = old_brokers.unionByName(feature_rows).unionByName(absent)
    return to_output(rows, "kraft_ibp_too_low", broker_id="broker_id", path="path", detail=F.col("what"))


def kraft_cluster_id_missing(
    snapshot_ids: DataFrame, cluster_id: DataFrame, malformed_znodes: DataFrame, unreadable_znodes: DataFrame
) -> DataFrame:
    """R17: /cluster/id exists with an id (the controllers are formatted with it), judged on each of
    ``snapshot_ids``."""
    with_id = cluster_id.where(F.coalesce(F.col("cluster_id"), F.lit("")) != "")
    rows = _absent(snapshot_ids, with_id, unreadable_znodes, malformed_znodes, "/cluster/id")
    return to_output(rows, "kraft_cluster_id_missing", path=F.lit("/cluster/id"),
                     detail=say("/cluster/id is %s: no cluster id to format the KRaft controllers with", "state"))


def kraft_controller_epoch_missing(
    snapshot_ids: DataFrame, controller_epoch: DataFrame, malformed_znodes: DataFrame, unreadable_znodes: DataFrame
) -> DataFrame:
    """R18: /controller_epoch exists and parses (the KRaft controller's conditional setData needs it, KafkaZkClient
    ~194), judged on each of ``snapshot_ids``."""
    rows = _absent(snapshot_ids, controller_epoch, unreadable_znodes, malformed_znodes, "/controller_epoch")
    return to_output(rows, "kraft_controller_epoch_missing", path=F.lit("/controller_epoch"),
                     detail=say("/controller_epoch is %s: the KRaft controller cannot claim /controller", "state"))


def kraft_producer_id_block_invalid(malformed_znodes: DataFrame) -> DataFrame:
    """R19: /latest_producer_id_block parses (ZkMigrationClient.migrateProducerId). Empty data (no block yet) is
    fine."""
    rows = malformed_znodes.where(F.col("kind") == kinds.PRODUCER_ID_BLOCK)
    return to_output(rows, "kraft_producer_id_block_invalid", path="path",
                     detail=say("/latest_producer_id_block does not parse: %s", "reason"))


def _shown_acl(acl: str) -> str:
    """An ACL for a detail sentence: a digest id loses its password hash (``digest:kafka:cdrwa``)."""
    scheme, _, rest = acl.partition(":")
    identity, _, permissions = rest.rpartition(":")
    if scheme == "digest":
        identity = identity.split(":", 1)[0]
    return f"{scheme}:{identity}:{permissions}"


def secured_znodes(znode_acls: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, shown ACLs) of the znodes no world:anyone entry lets create, delete, read and write."""
    secured = []
    for path, acls in sorted(znode_acls.items()):
        entries = [str(acl) for acl in (acls or [])]
        open_to_all = any(
            acl.startswith("world:anyone:") and WRITE_PERMISSIONS <= set(acl.rpartition(":")[2]) for acl in entries
        )
        if entries and not open_to_all:
            secured.append((str(path), ", ".join(_shown_acl(acl) for acl in entries)))
    return secured


def kraft_secured_znodes(spark: SparkSession, znode_acls: Mapping[str, Mapping[str, Any] | None]) -> DataFrame:
    """R20: Kafka's znodes are open to world:anyone (cdrw); otherwise the controllers' ZooKeeper client must log in
    as their creator (ZkMigrationClient.wrapZkException: NoAuth). ``znode_acls`` maps each snapshot id to its
    manifest's {path: ["scheme:id:perms", ...]}; None (an older snapshot) gives no row."""
    schema = StructType([StructField(KEY, StringType()), StructField("path", StringType()),
                         StructField("acls", StringType())])
    secured = [(str(sid), path, shown) for sid, acls in sorted(znode_acls.items())
               for path, shown in secured_znodes(acls or {})]
    rows = spark.createDataFrame(secured, schema)
    return to_output(rows, "kraft_secured_znodes", path="path",
                     detail=say("ZooKeeper ACL %s: only that principal may write it", "acls"))


# --- wiring -------------------------------------------------------------------------------------------------


def registered_broker_ids(snapshot: DataFrame, brokers: DataFrame) -> DataFrame:
    """broker_id of every child of /brokers/ids (KafkaZkClient.getSortedBrokerList reads the children's names,
    whatever their data), plus the brokers table's."""
    from_paths = snapshot.select(
        KEY, F.regexp_extract("path", r"^/brokers/ids/(-?[0-9]{1,9})$", 1).alias("name")
    ).where(F.col("name") != "").select(KEY, F.col("name").cast("int").alias("broker_id"))
    return from_paths.unionByName(brokers.select(KEY, "broker_id")).distinct()


def node_ids(tables: Mapping[str, DataFrame]) -> DataFrame:
    """R14: the node ids the KRaft controllers must not reuse: registered brokers, replicas of every assignment
    (adding and removing ones too) and /config/brokers/<id> entities; one (snapshot_id, broker_id) row each, sorted
    by snapshot and id."""
    assignments = tables["assignments"]
    replica_ids = assignments.select(
        KEY, F.explode(F.concat(F.coalesce("replicas", empty_ints()), F.coalesce("adding_replicas", empty_ints()),
                           F.coalesce("removing_replicas", empty_ints()))).alias("broker_id")
    )
    config_ids = tables["configs"].where(F.col("entity_type") == "brokers").select(
        KEY, _broker_entity_id().alias("broker_id")
    )
    ids = tables["brokers"].select(KEY, "broker_id").unionByName(replica_ids).unionByName(config_ids)
    return ids.where(F.col("broker_id") >= 0).select(KEY, F.col("broker_id").cast(IntegerType())).distinct().orderBy(
        KEY, "broker_id"
    )


class ReadinessTarget(NamedTuple):
    """What ``run_readiness`` needs of a snapshot besides its rows: its manifest (``znode_acls`` for R20) and the
    Kafka version it plans the migration with ("3.4".."3.9", optional patch)."""

    manifest: Mapping[str, Any]
    target_version: str


class _Snapshots(NamedTuple):
    """The snapshots of one run_readiness call: one row per snapshot id, and each one's manifest znode ACLs."""

    ids: DataFrame
    znode_acls: Mapping[str, Mapping[str, Any] | None]


ReadinessCall = Callable[[Mapping[str, DataFrame], DataFrame, _Snapshots], DataFrame]

_CALLS: dict[str, ReadinessCall] = {
    "kraft_migration_leftover": lambda t, s, k: kraft_migration_leftover(t["migration"], t["controller"]),
    "kraft_replica_on_unregistered_broker": lambda t, s, k: kraft_replica_on_unregistered_broker(
        t["assignments"], registered_broker_ids(s, t["brokers"]), t["admin_markers"], t["controller"]
    ),
    "kraft_topic_without_id": lambda t, s, k: kraft_topic_without_id(
        t["topics"], t["malformed_znodes"], t["admin_markers"]
    ),
    "kraft_partition_state_missing": lambda t, s, k: kraft_partition_state_missing(
        t["partitions"], t["admin_markers"], t["malformed_znodes"], t["unreadable_znodes"]
    ),
    "kraft_pending_topic_deletion": lambda t, s, k: kraft_pending_topic_deletion(
        t["admin_markers"], t["topics"], t["malformed_znodes"]
    ),
    "kraft_reassignment_in_flight": lambda t, s, k: kraft_reassignment_in_flight(t["assignments"], t["admin_markers"]),
    "kraft_scram_credentials": lambda t, s, k: kraft_scram_credentials(t["configs"]),
    "kraft_acls_present": lambda t, s, k: kraft_acls_present(t["acls"]),
    "kraft_acl_unknown_resource_type": lambda t, s, k: kraft_acl_unknown_resource_type(t["acls"]),
    "kraft_delegation_tokens": lambda t, s, k: kraft_delegation_tokens(t["delegation_tokens"]),
    "kraft_encrypted_passwords": lambda t, s, k: kraft_encrypted_passwords(t["configs"]),
    "kraft_default_broker_config": lambda t, s, k: kraft_default_broker_config(t["configs"]),
    "kraft_quota_invalid": lambda t, s, k: kraft_quota_invalid(t["configs"]),
    "kraft_quota_odd_entity_name": lambda t, s, k: kraft_quota_odd_entity_name(t["configs"]),
    "kraft_no_common_listener": lambda t, s, k: kraft_no_common_listener(t["brokers"]),
    "kraft_generated_broker_ids": lambda t, s, k: kraft_generated_broker_ids(t["brokers"], s),
    "kraft_ibp_too_low": lambda t, s, k: kraft_ibp_too_low(
        k.ids, t["brokers"], t["feature"], t["malformed_znodes"], t["unreadable_znodes"]
    ),
    "kraft_cluster_id_missing": lambda t, s, k: kraft_cluster_id_missing(
        k.ids, t["cluster_id"], t["malformed_znodes"], t["unreadable_znodes"]
    ),
    "kraft_controller_epoch_missing": lambda t, s, k: kraft_controller_epoch_missing(
        k.ids, t["controller_epoch"], t["malformed_znodes"], t["unreadable_znodes"]
    ),
    "kraft_producer_id_block_invalid": lambda t, s, k: kraft_producer_id_block_invalid(t["malformed_znodes"]),
    "kraft_secured_znodes": lambda t, s, k: kraft_secured_znodes(s.sparkSession, k.znode_acls),
}

if set(_CALLS) != set(READINESS_CHECK_IDS):
    raise RuntimeError("the readiness registry must cover exactly the readiness check ids")

def level_rows(targets: Mapping[str, str]) -> list[tuple[str, str, str, str, str]]:
    """(snapshot_id, check_id, condition_id, level, remedy) of every condition that is a problem at each snapshot's
    target version (``targets``: snapshot id -> target); ValueError for a target that is no migrating release."""
    rows = []
    for snapshot_id, target_version in sorted(targets.items()):
        target = parse_target(target_version)
        for check_id in READINESS_CHECK_IDS:
            condition = BY_CHECK_ID[check_id]
            level = condition.level_at(target)
            if level is not None:
                rows.append((str(snapshot_id), check_id, condition.condition_id, level, condition.remedy))
    return rows


def run_readiness(
    tables: Mapping[str, DataFrame], snapshot: DataFrame, snapshots: Mapping[str, ReadinessTarget | tuple[Any, str]]
) -> DataFrame:
    """Every readiness condition of the given snapshots, each at its own target version, as ``keyed(READINESS)``
    rows in one frame (level and remedy filled in).

    ``tables`` and ``snapshot`` are keyed frames (they may hold other snapshots too: only those of ``snapshots``
    give rows); ``snapshots`` maps each snapshot id to its ``ReadinessTarget`` (manifest, target version), or the
    plain (manifest, target version) pair. A condition that is no problem at a snapshot's target gives no row
    for that snapshot, and one that is no problem at any target is not computed.
    """
    spark = snapshot.sparkSession
    targets = {sid: str(target[1]) for sid, target in snapshots.items()}
    levels = level_rows(targets)  # the level table: joined, so one plan serves every target
    wanted = {check_id for _, check_id, *_ in levels}
    keys = _Snapshots(snapshot_keys(spark, snapshots),
                      {sid: (target[0] or {}).get("znode_acls") for sid, target in snapshots.items()})
    outputs = [_CALLS[check_id](tables, snapshot, keys) for check_id in READINESS_CHECK_IDS if check_id in wanted]
    columns = [F.col(KEY)] + [F.col(field.name).cast(field.dataType).alias(field.name) for field in READINESS.fields]
    if not outputs:
        return spark.createDataFrame([], keyed(READINESS))
    found = reduce(DataFrame.unionByName, [rows.select(KEY, *CHECK_COLUMNS) for rows in outputs])
    # the level table as a lookup by (target version, check) in the plan: no join, no broadcast job
    by_target = {(targets[sid], check_id): (condition_id, level, remedy)
                 for sid, check_id, condition_id, level, remedy in levels}
    lookup = F.create_map(*[item for (target, check_id), (condition_id, level, remedy) in by_target.items()
                            for item in (
        F.lit(f"{target}\x00{check_id}"),
        F.struct(F.lit(condition_id).alias("condition_id"), F.lit(level).alias("level"), F.lit(remedy).alias("remedy")),
    )])
    target_of = F.create_map(*[item for sid, target in targets.items() for item in (F.lit(sid), F.lit(target))])
    key = F.concat(F.element_at(target_of, F.col(KEY)), F.lit("\x00"), F.col("check_id"))
    leveled = found.withColumn("_level", F.element_at(lookup, key))
    return leveled.where(F.col("_level").isNotNull()).select(
        KEY, *[c for c in found.columns if c != KEY], "_level.condition_id", "_level.level", "_level.remedy",
    ).select(*columns)
