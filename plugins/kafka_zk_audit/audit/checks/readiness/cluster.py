"""Readiness of the cluster as a whole (R01, R13-R20): a reverted migration, the brokers' listeners, ids and
protocol version, /cluster/id, /controller_epoch, the producer-id block and the znodes' ACLs; and the node ids the
KRaft controllers must not reuse (R14).

Each check is a declaration (``engine.check``). Some conditions are judged on every snapshot, whether or not a table
has a row for it (``snapshot_keys``, the frame ``readiness_snapshots``, with facts of what the snapshot holds); R20
reads the manifests' znode ACLs. Every frame is keyed by ``snapshot_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from kafka_zk_audit.audit.checks import engine
from kafka_zk_audit.audit.checks.common import empty_ints, say
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.audit.checks.readiness.configs import broker_entity_id
from kafka_zk_audit.audit.keyed_io import rows_frame
from kafka_zk_audit.audit.normalize import kinds
from kafka_zk_audit.audit.unions import union_all
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
    return rows_frame(spark, [(str(sid),) for sid in snapshot_ids], StructType([StructField(KEY, StringType())]))


@view
def readiness_snapshots(snapshot_ids: DataFrame) -> DataFrame:
    """(snapshot_id): each snapshot judged once (``snapshot_ids``, one row per snapshot, ``snapshot_keys``)."""
    return snapshot_ids.select(KEY).distinct()


@fact(defaults={"malformed_reasons": "CAST(map() AS map<string,string>)",
                "unreadable_paths": "CAST(array() AS array<string>)"})
def readiness_znode_problems(malformed_znodes: DataFrame, unreadable_znodes: DataFrame) -> DataFrame:
    """(snapshot_id, malformed_reasons, unreadable_paths): each snapshot's znodes that do not parse (path -> the
    least of their reasons) and those the auditor could not read (their paths): their content is unknown."""
    problems = malformed_znodes.select(KEY, "path", "reason", F.lit(False).alias("unreadable")).unionByName(
        unreadable_znodes.select(KEY, "path", F.lit(None).cast("string").alias("reason"),
                                 F.lit(True).alias("unreadable"))
    )
    by_path = problems.groupBy(KEY, "path").agg(
        F.min(F.when(~F.col("unreadable"), F.col("reason"))).alias("reason"),
        F.bool_or(~F.col("unreadable")).alias("malformed"), F.bool_or("unreadable").alias("unreadable"),
    )
    return by_path.groupBy(KEY).agg(
        F.map_from_entries(F.collect_list(F.when(F.col("malformed") & F.col("path").isNotNull(),
                                                 F.struct("path", "reason"))))
        .alias("malformed_reasons"),
        F.collect_list(F.when(F.col("unreadable"), F.col("path"))).alias("unreadable_paths"),
    )


def _absent(present: str, path: str) -> tuple[Column, Column]:
    """On a snapshot's row with the fact ``present`` (the table has a row of it) and readiness_znode_problems:
    whether ``path`` is missing (no row, and the auditor could read it: otherwise its content is unknown), and its
    state: "absent" or "unparseable (<reason>)"."""
    unreadable = F.coalesce(F.array_contains("unreadable_paths", F.lit(path)), F.lit(False))
    reason = F.element_at("malformed_reasons", F.lit(path))
    state = F.coalesce(F.concat(F.lit("unparseable ("), reason, F.lit(")")), F.lit("absent"))
    return ~F.col(present) & ~unreadable, state


@fact(defaults={"zk_mode_controller": "false"})
def readiness_zk_controller(controller: DataFrame) -> DataFrame:
    """(snapshot_id, zk_controller, zk_mode_controller): the least broker id of the ZooKeeper-mode controllers
    (ephemeral, kraftControllerEpoch -1) holding /controller, and whether there is one."""
    return controller.where(
        F.coalesce(F.col("is_ephemeral"), F.lit(False)) & (F.coalesce(F.col("kraft_controller_epoch"), F.lit(-1)) < 0)
    ).groupBy(KEY).agg(F.min("broker_id").alias("zk_controller"), F.lit(True).alias("zk_mode_controller"))


@engine.check("migration", facts=(readiness_zk_controller,), arguments=("migration", "controller"))
def kraft_migration_leftover() -> Finds:
    """R01: /migration records KRaft metadata (offset > 0) while a ZooKeeper-mode controller (ephemeral,
    kraftControllerEpoch -1) holds /controller: a reverted migration (KRaftMigrationDriver ~686-718: a new quorum
    that finds offset > 0 takes the load as done)."""
    return Finds(
        where=(F.col("kraft_metadata_offset") > 0) & F.col("zk_mode_controller"), path="path",
        detail=say("/migration has kraft_metadata_offset %s (KRaft controller %s, epoch %s) but broker %s holds "
                   "/controller in ZooKeeper mode: a migration was reverted", "kraft_metadata_offset",
                   "kraft_controller_id", "kraft_controller_epoch", "zk_controller"),
    )


@view
def readiness_listeners(brokers: DataFrame) -> DataFrame:
    """(snapshot_id, brokers, common, each): per snapshot with brokers, their number, the listener names all of them
    advertise and each broker's listeners ("<id>: <names>")."""
    listeners = brokers.select(
        KEY, "broker_id", F.array_distinct(F.transform(F.coalesce("endpoints", F.array()), lambda e: e["listener"]))
        .alias("listeners")
    )
    return listeners.groupBy(KEY).agg(
        F.count(F.lit(1)).alias("brokers"),
        F.reduce(F.collect_list("listeners"), F.lit(None).cast("array<string>"),
                 lambda acc, x: F.when(acc.isNull(), x).otherwise(F.array_intersect(acc, x))).alias("common"),
        F.array_sort(F.collect_list(F.format_string("%s: %s", F.col("broker_id").cast("string"),
                                                    F.array_join(F.array_sort("listeners"), ", ")))).alias("each"),
    )


@engine.check(readiness_listeners, arguments=("brokers",))
def kraft_no_common_listener() -> Finds:
    """R13: some listener name is advertised by every registered broker (the KRaft controller reaches all brokers
    through one, KAFKA-16468). One cluster-wide row, path /brokers/ids."""
    return Finds(
        where=(F.col("brokers") > 0) & (F.size(F.coalesce("common", F.array())) == 0), path=F.lit("/brokers/ids"),
        detail=say("no listener is shared by all %s brokers (%s)", "brokers", F.array_join("each", "; ")),
    )


@view
def readiness_generated_ids(brokers: DataFrame, snapshot: DataFrame) -> DataFrame:
    """(snapshot_id, broker_id, path, what): broker ids above reserved.broker.max.id, and a used /brokers/seqid."""
    generated = brokers.where(F.col("broker_id") > RESERVED_BROKER_MAX_ID).select(
        KEY, "broker_id", "path",
        say("broker id %s is above reserved.broker.max.id (default %s): a generated id", "broker_id",
            F.lit(RESERVED_BROKER_MAX_ID)).alias("what"),
    )
    seqid = snapshot.where((F.col("path") == "/brokers/seqid") & (F.col("version") > 0)).select(
        KEY, F.lit(None).cast("int").alias("broker_id"), "path",
        say("/brokers/seqid has handed out %s generated broker ids", "version").alias("what"),
    )
    return generated.unionByName(seqid)


@engine.check(readiness_generated_ids, arguments=("brokers", "snapshot"))
def kraft_generated_broker_ids() -> Finds:
    """R15: broker ids above reserved.broker.max.id (default 1000) and a used /brokers/seqid (stat version > 0):
    generated broker ids, which 3.9 rejects in migration (KAFKA-17543)."""
    return Finds(where=F.lit(True), broker_id="broker_id", path="path", detail=F.col("what"))


@view
def readiness_ibp_evidence(readiness_snapshots: DataFrame, brokers: DataFrame, feature: DataFrame) -> DataFrame:
    """(snapshot_id, source, broker_id, path, version, status): what shows a lower bound of a snapshot's
    inter.broker.protocol.version: each broker registration (source "broker"), each /feature row ("feature") and
    the snapshot itself ("snapshot", path /feature: its /feature may be absent)."""
    return union_all([
        brokers.select(KEY, F.lit("broker").alias("source"), "broker_id", "path", "version",
                       F.lit(None).cast("int").alias("status")),
        feature.select(KEY, F.lit("feature").alias("source"), F.lit(None).cast("int").alias("broker_id"), "path",
                       "version", "status"),
        readiness_snapshots.select(KEY, F.lit("snapshot").alias("source"), F.lit(None).cast("int").alias("broker_id"),
                                   F.lit("/feature").alias("path"), F.lit(None).cast("int").alias("version"),
                                   F.lit(None).cast("int").alias("status")),
    ])


@fact(defaults={"feature_present": "false"})
def readiness_feature_present(feature: DataFrame) -> DataFrame:
    """(snapshot_id, feature_present): the snapshots with a /feature row."""
    return feature.groupBy(KEY).agg(F.lit(True).alias("feature_present"))


@fact(defaults={"cluster_id_present": "false"})
def readiness_cluster_id_present(cluster_id: DataFrame) -> DataFrame:
    """(snapshot_id, cluster_id_present): the snapshots whose /cluster/id carries an id."""
    return (cluster_id.where(F.coalesce(F.col("cluster_id"), F.lit("")) != "")
            .groupBy(KEY).agg(F.lit(True).alias("cluster_id_present")))


@fact(defaults={"controller_epoch_present": "false"})
def readiness_controller_epoch_present(controller_epoch: DataFrame) -> DataFrame:
    """(snapshot_id, controller_epoch_present): the snapshots with a /controller_epoch row."""
    return controller_epoch.groupBy(KEY).agg(F.lit(True).alias("controller_epoch_present"))


@engine.check(readiness_ibp_evidence, facts=(readiness_feature_present, readiness_znode_problems),
              arguments=("snapshot_ids", "brokers", "feature", "malformed_znodes", "unreadable_znodes"))
def kraft_ibp_too_low() -> Finds:
    """R16: lower bounds of inter.broker.protocol.version the tree proves (the migration needs >= 3.4): a broker
    registration below v5 (ZkData BrokerIdZNode: v5 from IBP 2.7-IV0); /feature absent or disabled (the controller
    enables it from IBP 2.7); /feature v1 (v2 from IBP 3.3-IV0). A /feature that does not parse or cannot be read
    proves nothing. ``snapshot_ids`` (one row per snapshot, ``snapshot_keys``) are the snapshots judged for an
    absent /feature."""
    source = F.col("source")
    feature_missing, state = _absent("feature_present", "/feature")
    where = (
        F.when(source == "broker", F.col("version") < BROKER_VERSION_IBP_2_7)
        .when(source == "feature", (F.col("status") != FEATURE_ENABLED) | (F.col("version") < FEATURE_V2))
        .otherwise(feature_missing & (state == "absent"))
    )
    detail = (
        F.when(source == "broker",
               say("broker %s registered with version %s: its inter.broker.protocol.version is below 2.7",
                   "broker_id", "version"))
        .when(source == "feature",
              F.when(F.col("status") != FEATURE_ENABLED,
                     F.lit("/feature is disabled: the controller's inter.broker.protocol.version is below 2.7"))
              .otherwise(F.lit("/feature is version 1: the controller's inter.broker.protocol.version is below "
                               "3.3-IV0")))
        .otherwise(F.lit("/feature is absent: no controller with inter.broker.protocol.version >= 2.7 has run"))
    )
    return Finds(where=where, broker_id="broker_id", path="path", detail=detail)


@engine.check(readiness_snapshots, facts=(readiness_cluster_id_present, readiness_znode_problems),
              arguments=("snapshot_ids", "cluster_id", "malformed_znodes", "unreadable_znodes"))
def kraft_cluster_id_missing() -> Finds:
    """R17: /cluster/id exists with an id (the controllers are formatted with it), judged on each of
    ``snapshot_ids``."""
    missing, state = _absent("cluster_id_present", "/cluster/id")
    return Finds(where=missing, path=F.lit("/cluster/id"),
                 detail=say("/cluster/id is %s: no cluster id to format the KRaft controllers with", state))


@engine.check(readiness_snapshots, facts=(readiness_controller_epoch_present, readiness_znode_problems),
              arguments=("snapshot_ids", "controller_epoch", "malformed_znodes", "unreadable_znodes"))
def kraft_controller_epoch_missing() -> Finds:
    """R18: /controller_epoch exists and parses (the KRaft controller's conditional setData needs it, KafkaZkClient
    ~194), judged on each of ``snapshot_ids``."""
    missing, state = _absent("controller_epoch_present", "/controller_epoch")
    return Finds(where=missing, path=F.lit("/controller_epoch"),
                 detail=say("/controller_epoch is %s: the KRaft controller cannot claim /controller", state))


@engine.check("malformed_znodes", arguments=("malformed_znodes",))
def kraft_producer_id_block_invalid() -> Finds:
    """R19: /latest_producer_id_block parses (ZkMigrationClient.migrateProducerId). Empty data (no block yet) is
    fine."""
    return Finds(where=F.col("kind") == kinds.PRODUCER_ID_BLOCK, path="path",
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


@view
def readiness_secured_znodes(spark: SparkSession, znode_acls: Mapping[str, Mapping[str, Any] | None]) -> DataFrame:
    """(snapshot_id, path, acls): each snapshot's secured znodes (``secured_znodes`` of its manifest's znode ACLs;
    None, an older snapshot, gives none)."""
    schema = StructType([StructField(KEY, StringType()), StructField("path", StringType()),
                         StructField("acls", StringType())])
    secured = [(str(sid), path, shown) for sid, acls in sorted(znode_acls.items())
               for path, shown in secured_znodes(acls or {})]
    return rows_frame(spark, secured, schema)


@engine.check(readiness_secured_znodes, arguments=("spark", "znode_acls"))
def kraft_secured_znodes() -> Finds:
    """R20: Kafka's znodes are open to world:anyone (cdrw); otherwise the controllers' ZooKeeper client must log in
    as their creator (ZkMigrationClient.wrapZkException: NoAuth). ``znode_acls`` maps each snapshot id to its
    manifest's {path: ["scheme:id:perms", ...]}; None (an older snapshot) gives no row."""
    return Finds(where=F.lit(True), path="path",
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

