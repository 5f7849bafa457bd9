"""KRaft checks: the invariants Kafka's quorum controller keeps that ZooKeeper never held, on the ``kraft_*`` tables.

A ZooKeeper snapshot has empty ``kraft_*`` tables, so these find nothing there. Each cites the controller code that
keeps the invariant (apache/kafka metadata/src/main/java/org/apache/kafka/controller/, 3.7–4.2).

Each check is a declaration (``engine.check``): the checks of one frame (a ``kraft_*`` table, ``partitions``, the
replicas' directories) are evaluated together in one select, with the facts they name joined once. A partition's
state (its isr and replicas) is derived once per audit for the ELR check and the directories view.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    check,
    duration,
    empty_ints,
    instant,
    int_list,
    partition_finds,
    say,
)
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.audit.params import Params
from kafka_zk_audit.contract.schemas import KEY

# DirectoryId.UNASSIGNED, LOST and MIGRATING (server-common/.../common/DirectoryId.java): not a real directory.
RESERVED_DIRECTORIES = ("AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg")
METADATA_VERSION = "metadata.version"
REPLAY_ANOMALIES = ("unknown_partition_changed", "unknown_topic_removed", "unknown_broker_changed")
PARTITION = (KEY, "topic", "partition")


@fact(on=(KEY, "leader"), defaults={"leader_is_fenced": "false"})
def kraft_fenced_leaders(kraft_brokers: DataFrame) -> DataFrame:
    """(snapshot_id, leader, leader_is_fenced): the fenced brokers, as a partition's leader would name them."""
    return (kraft_brokers.where(F.col("fenced"))
            .select(KEY, F.col("broker_id").alias("leader"), F.lit(True).alias("leader_is_fenced")).distinct())


@check("partitions", facts=(kraft_fenced_leaders,))
def leader_fenced() -> Finds:
    """A partition's leader (when >= 0) is not a fenced broker: the controller elects only active brokers and moves
    leadership off a broker it fences (ReplicationControlManager.handleBrokerFenced, PartitionChangeBuilder with
    isAcceptableLeader = BrokerHeartbeatManager.isActive). An unregistered leader is leader_not_alive's."""
    return partition_finds(F.col("has_state") & (F.col("leader") >= 0) & F.col("leader_is_fenced"),
                            say("leader %s is fenced", "leader"))


@fact(on=PARTITION)
def kraft_partition_state(partitions: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, partition_isr, partition_replicas): each partition's isr and replicas (empty
    arrays for none; both null for a partition the partitions table does not hold)."""
    return partitions.select(*PARTITION, F.coalesce("isr", empty_ints()).alias("partition_isr"),
                             F.coalesce("replicas", empty_ints()).alias("partition_replicas"))


@check("kraft_partitions", facts=(kraft_partition_state,))
def elr_invalid() -> Finds:
    """The eligible leader replicas are replicas and none of them is in the ISR (KIP-966; PartitionChangeBuilder
    .maybePopulateTargetElr keeps ELR = replicas that left the ISR while it was at min.insync.replicas)."""
    in_isr = F.array_intersect("elr", "partition_isr")
    strangers = F.array_except("elr", "partition_replicas")
    where = ((F.size(F.coalesce("elr", empty_ints())) > 0) & F.col("partition_replicas").isNotNull()
             & ((F.size(in_isr) > 0) | (F.size(strangers) > 0)))
    detail = F.when(F.size(in_isr) > 0, say("elr %s overlaps isr %s (in both: %s)", int_list("elr"),
                                            int_list("partition_isr"), int_list(in_isr))).otherwise(
        say("elr members %s are not replicas %s", int_list(strangers), int_list("partition_replicas")))
    return partition_finds(where, detail)


@view
def kraft_replica_directories(kraft_partitions: DataFrame, kraft_partition_state: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, path, broker_id, directory): each replica of a partition with directories
    beside the log directory assigned to it (null past the end of either list)."""
    return (kraft_partitions.where(F.size(F.coalesce("directories", F.array())) > 0)
            .join(kraft_partition_state, list(PARTITION))
            .select(*PARTITION, "path",
                    F.posexplode(F.arrays_zip("partition_replicas", "directories")).alias("position", "pair"))
            .select(*PARTITION, "path", F.col("pair.partition_replicas").alias("broker_id"),
                    F.col("pair.directories").alias("directory")))


@fact(on=(KEY, "broker_id"))
def kraft_broker_log_dirs(kraft_brokers: DataFrame) -> DataFrame:
    """(snapshot_id, broker_id, log_dirs): the directories each broker that registered any registered."""
    return kraft_brokers.select(KEY, "broker_id", "log_dirs").where(F.size(F.coalesce("log_dirs", F.array())) > 0)


@check(kraft_replica_directories, facts=(kraft_broker_log_dirs,))
def directory_unregistered() -> Finds:
    """Each replica's log directory is one its broker registered (KIP-858; ReplicationControlManager checks
    BrokerRegistration.hasOnlineDir for every assignment). UNASSIGNED, LOST and MIGRATING are not directories."""
    where = (F.col("directory").isNotNull() & ~F.col("directory").isin(*RESERVED_DIRECTORIES)
             & F.col("log_dirs").isNotNull() & ~F.array_contains("log_dirs", F.col("directory")))
    detail = say("replica %s's directory %s is not one of the directories broker %s registered: %s", "broker_id",
                 "directory", "broker_id", F.array_join("log_dirs", ", "))
    return Finds(where=where, detail=detail, topic="topic", partition="partition", broker_id="broker_id", path="path")


@fact(defaults={"quorum_has_leader": "false"})
def kraft_quorum_leader(kraft_quorum: DataFrame) -> DataFrame:
    """(snapshot_id, quorum_has_leader): the snapshots whose metadata log names a quorum leader."""
    return kraft_quorum.where(F.col("leader_id") >= 0).select(KEY, F.lit(True).alias("quorum_has_leader")).distinct()


@check("kraft_log", facts=(kraft_quorum_leader,))
def quorum_leader_missing() -> Finds:
    """The metadata log names a quorum leader (a LeaderChange record, else the controller's quorum-state file):
    without one the cluster cannot change its metadata."""
    return Finds(where=~F.col("quorum_has_leader"), path=F.lit("/kraft/quorum"),
                 detail=say("no quorum leader is known at offset %s", "last_offset"))


@fact()
def kraft_registered_controllers(kraft_controllers: DataFrame) -> DataFrame:
    """(snapshot_id, registered_controllers): the ids of the controllers registered in each log that has any."""
    return kraft_controllers.groupBy(KEY).agg(F.collect_set("controller_id").alias("registered_controllers"))


@check("kraft_quorum", facts=(kraft_registered_controllers,))
def voter_not_controller() -> Finds:
    """Every voter of the quorum is a registered controller, once controllers register (metadata.version 3.7-IV0+,
    KIP-919; ClusterControlManager.replay(RegisterControllerRecord)). Logs without any controller registration
    (older metadata versions) are not judged."""
    strangers = F.array_except(F.coalesce("voters", empty_ints()), "registered_controllers")
    return Finds(where=F.col("registered_controllers").isNotNull() & (F.size(strangers) > 0), path="path",
                 detail=say("voters %s are not registered controllers %s", int_list(strangers),
                            int_list("registered_controllers")))


@fact()
def kraft_metadata_version(kraft_features: DataFrame) -> DataFrame:
    """(snapshot_id, metadata_version_level): the finalized metadata.version of each log that has one (its
    features row: at most one per snapshot)."""
    level = F.element_at("features", F.lit(METADATA_VERSION)).alias("metadata_version_level")
    return kraft_features.select(KEY, level).where(F.col("metadata_version_level").isNotNull())


@check("kraft_brokers", facts=(kraft_metadata_version,))
def metadata_version_unsupported() -> Finds:
    """Every registered broker supports the finalized metadata.version (ClusterControlManager
    .processRegistrationFeature refuses a broker that does not; FeatureControlManager refuses a level a
    registered broker does not support). A broker that registered no range for it is not judged."""
    supported = F.try_element_at("features", F.lit(METADATA_VERSION))
    level = F.col("metadata_version_level")
    where = supported.isNotNull() & level.isNotNull() & ((level < supported[0]) | (level > supported[1]))
    detail = say("metadata.version %s is outside the range %s broker %s supports", level, int_list(supported),
                 "broker_id")
    return Finds(where=where, detail=detail, broker_id="broker_id", path="path")


@fact(on=PARTITION)
def kraft_reassignment_replicas(assignments: DataFrame) -> DataFrame:
    """(snapshot_id, topic, partition, reassignment_adding, reassignment_removing): the replicas a reassignment is
    adding and removing (empty arrays for none; both null for a partition without an assignment)."""
    return assignments.select(*PARTITION,
                              F.coalesce("adding_replicas", empty_ints()).alias("reassignment_adding"),
                              F.coalesce("removing_replicas", empty_ints()).alias("reassignment_removing"))


@check("kraft_partitions", facts=(kraft_reassignment_replicas,))
def partition_reassignment_stuck(params: Params) -> Finds:
    """A partition's reassignment (adding or removing replicas, ReplicationControlManager.alterPartitionReassignments)
    completes within ``reassignment_sla_ms``, its age measured from the record that began it to the last record
    of the log."""
    age_ms = params.column("now_ms") - F.col("reassigning_since")
    where = F.col("reassigning_since").isNotNull() & (age_ms > params.column("reassignment_sla_ms"))
    detail = say("adding %s, removing %s since offset %s (%s), pending for %s", int_list("reassignment_adding"),
                 int_list("reassignment_removing"), "reassigning_since_offset", instant("reassigning_since"),
                 duration(age_ms))
    return partition_finds(where, detail)


def _kind(kind: str) -> Column:
    return F.col("kind") == kind


@check("kraft_anomalies")
def log_epoch_regressed() -> Finds:
    """A partition's leader epoch and partition epoch never go back within the log: a change only bumps them
    (PartitionRegistration.merge); a PartitionRecord that replaces a partition with lower epochs breaks fencing."""
    return partition_finds(_kind("epoch_regressed"),
                            say("a PartitionRecord at offset %s sets %s of %s", "offset", "detail", "subject"))


@fact()
def kraft_first_undecodable(kraft_anomalies: DataFrame) -> DataFrame:
    """(snapshot_id, first_undecodable): the offset of the first record of each log that could not be decoded."""
    return (kraft_anomalies.where(_kind("undecodable_record")).groupBy(KEY)
            .agg(F.min("offset").alias("first_undecodable")))


@check("kraft_anomalies", facts=(kraft_first_undecodable,))
def log_replay_inconsistent() -> Finds:
    """The log never changes what it has not created: Kafka's MetadataDelta fails on a change to an unknown
    partition, topic or broker, so such a record means a lost or foreign part of the log. After a record that could
    not be decoded (record_undecodable) such changes are its consequence: explained, not a problem of their own."""
    after_undecodable = F.coalesce(F.col("first_undecodable") < F.col("offset"), F.lit(False))
    detail = F.concat(say("%s at offset %s: %s (%s)", "kind", "offset", "detail", "subject"),
                      F.when(after_undecodable,
                             say("; the undecodable record at offset %s would have created it",
                                 "first_undecodable")).otherwise(F.lit("")))
    return Finds(where=F.col("kind").isin(*REPLAY_ANOMALIES), path="path", detail=detail,
                 explained=after_undecodable)


@check("kraft_anomalies")
def record_undecodable() -> Finds:
    """Every record of the log is one released Kafka wrote (a known apiKey and version, consumed exactly); an
    unknown one is reported with its offset and left out of the image, never guessed."""
    return Finds(where=_kind("undecodable_record"), path="path",
                 detail=say("record at offset %s could not be decoded: %s", "offset", "detail"))


@check("kraft_anomalies")
def log_corrupt() -> Finds:
    """Every batch of the metadata log is intact (magic 2, CRC-32C, records that fill it exactly): Kafka's log
    recovery truncates a segment at its first invalid batch, losing what follows; the image is what precedes it."""
    return Finds(where=_kind("log_corrupt"), path="path", detail=say("%s (offset %s)", "detail", "offset"))


@check("kraft_anomalies")
def log_truncated() -> Finds:
    """No segment ends inside a batch: a torn last batch (a crash, or a copy taken while the controller wrote) is
    dropped by Kafka's recovery, and the image is what precedes it."""
    return Finds(where=_kind("log_truncated"), path="path", detail=say("%s (offset %s)", "detail", "offset"))
