"""Readiness of the cluster as a whole (R01, R13-R20): a reverted migration, the brokers' listeners, ids and
protocol version, /cluster/id, /controller_epoch, the producer-id block and the znodes' ACLs; and the node ids the
KRaft controllers must not reuse (R14).

Some conditions are judged on every snapshot, whether or not a table has a row for it (``snapshot_keys``); R20
reads the manifests' znode ACLs. Every frame is keyed by ``snapshot_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.checks.common import empty_ints, say, to_output
from kafka_zk_audit.audit.checks.readiness.configs import broker_entity_id
from kafka_zk_audit.audit.normalize import kinds
from kafka_zk_audit.contract.schemas import KEY

# Kafka's default reserved.broker.max.id: generated broker ids start above it.
RESERVED_BROKER_MAX_ID = 1000
# The broker registration version written from IBP 2.7-IV0 on (ZkData BrokerIdZNode.encode).
BROKER_VERSION_IBP_2_7 = 5
# FeatureZNode: status 1 = enabled (IBP >= 2.7), version 2 from IBP 3.3-IV0.
FEATURE_ENABLED, FEATURE_V2 = 1, 2
# ZooKeeper permissions the KRaft controller's dual writes need on Kafka's znodes.
WRITE_PERMISSIONS = frozenset("cdrw")


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
        KEY, broker_entity_id().alias("broker_id")
    )
    ids = tables["brokers"].select(KEY, "broker_id").unionByName(replica_ids).unionByName(config_ids)
    return ids.where(F.col("broker_id") >= 0).select(KEY, F.col("broker_id").cast(IntegerType())).distinct().orderBy(
        KEY, "broker_id"
    )

