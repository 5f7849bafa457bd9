"""KRaft checks: the invariants Kafka's quorum controller keeps that ZooKeeper never held, on the ``kraft_*`` tables.

A ZooKeeper snapshot has empty ``kraft_*`` tables, so these find nothing there. Each cites the controller code that
keeps the invariant (apache/kafka metadata/src/main/java/org/apache/kafka/controller/, 3.7–4.2).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import duration, empty_ints, instant, int_list, say, to_output
from kafka_zk_audit.audit.params import Params, with_params
from kafka_zk_audit.contract.schemas import KEY

# DirectoryId.UNASSIGNED, LOST and MIGRATING (server-common/.../common/DirectoryId.java): not a real directory.
RESERVED_DIRECTORIES = ("AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg")
METADATA_VERSION = "metadata.version"
REPLAY_ANOMALIES = ("unknown_partition_changed", "unknown_topic_removed", "unknown_broker_changed")


def _kraft_partition_path() -> Column:
    return F.concat(F.lit("/kraft/partitions/"), F.col("topic"), F.lit("/"), F.col("partition").cast("string"))


def leader_fenced(partitions: DataFrame, kraft_brokers: DataFrame) -> DataFrame:
    """A partition's leader (when >= 0) is not a fenced broker: the controller elects only active brokers and moves
    leadership off a broker it fences (ReplicationControlManager.handleBrokerFenced, PartitionChangeBuilder with
    isAcceptableLeader = BrokerHeartbeatManager.isActive). An unregistered leader is leader_not_alive's."""
    fenced = kraft_brokers.where(F.col("fenced")).select(KEY, F.col("broker_id").alias("leader"))
    rows = partitions.where(F.col("has_state") & (F.col("leader") >= 0)).join(fenced, [KEY, "leader"])
    detail = say("leader %s is fenced", "leader")
    return to_output(rows, "leader_fenced", topic="topic", partition="partition", path="path", detail=detail)


def elr_invalid(kraft_partitions: DataFrame, partitions: DataFrame) -> DataFrame:
    """The eligible leader replicas are replicas and none of them is in the ISR (KIP-966; PartitionChangeBuilder
    .maybePopulateTargetElr keeps ELR = replicas that left the ISR while it was at min.insync.replicas)."""
    state = partitions.select(KEY, "topic", "partition", F.coalesce("isr", empty_ints()).alias("isr"),
                              F.coalesce("replicas", empty_ints()).alias("replicas"))
    rows = (kraft_partitions.where(F.size(F.coalesce("elr", empty_ints())) > 0)
            .join(state, [KEY, "topic", "partition"])
            .withColumn("in_isr", F.array_intersect("elr", "isr"))
            .withColumn("strangers", F.array_except("elr", "replicas"))
            .where((F.size("in_isr") > 0) | (F.size("strangers") > 0)))
    detail = F.when(F.size("in_isr") > 0, say("elr %s overlaps isr %s (in both: %s)", int_list("elr"),
                                               int_list("isr"), int_list("in_isr"))).otherwise(
        say("elr members %s are not replicas %s", int_list("strangers"), int_list("replicas")))
    return to_output(rows, "elr_invalid", topic="topic", partition="partition", path="path", detail=detail)


def directory_unregistered(kraft_partitions: DataFrame, partitions: DataFrame,
                                 kraft_brokers: DataFrame) -> DataFrame:
    """Each replica's log directory is one its broker registered (KIP-858; ReplicationControlManager checks
    BrokerRegistration.hasOnlineDir for every assignment). UNASSIGNED, LOST and MIGRATING are not directories."""
    replicas = partitions.select(KEY, "topic", "partition", "replicas")
    pairs = (kraft_partitions.where(F.size(F.coalesce("directories", F.array())) > 0)
             .join(replicas, [KEY, "topic", "partition"])
             .select(KEY, "topic", "partition", "path",
                     F.posexplode(F.arrays_zip("replicas", "directories")).alias("position", "pair"))
             .select(KEY, "topic", "partition", "path", F.col("pair.replicas").alias("broker_id"),
                     F.col("pair.directories").alias("directory")))
    registered = kraft_brokers.select(KEY, "broker_id", "log_dirs").where(F.size(F.coalesce("log_dirs",
                                                                                            F.array())) > 0)
    rows = (pairs.where(F.col("directory").isNotNull() & ~F.col("directory").isin(*RESERVED_DIRECTORIES))
            .join(registered, [KEY, "broker_id"])
            .where(~F.array_contains("log_dirs", F.col("directory"))))
    detail = say("replica %s's directory %s is not one of the directories broker %s registered: %s", "broker_id",
                 "directory", "broker_id", F.array_join("log_dirs", ", "))
    return to_output(rows, "directory_unregistered", topic="topic", partition="partition", broker_id="broker_id",
                     path="path", detail=detail)


def quorum_leader_missing(kraft_log: DataFrame, kraft_quorum: DataFrame) -> DataFrame:
    """The metadata log names a quorum leader (a LeaderChange record, else the controller's quorum-state file):
    without one the cluster cannot change its metadata."""
    leaders = kraft_quorum.where(F.col("leader_id") >= 0).select(KEY)
    rows = kraft_log.join(leaders, KEY, "left_anti")
    return to_output(rows, "quorum_leader_missing", path=F.lit("/kraft/quorum"),
                     detail=say("no quorum leader is known at offset %s", "last_offset"))


def voter_not_controller(kraft_quorum: DataFrame, kraft_controllers: DataFrame) -> DataFrame:
    """Every voter of the quorum is a registered controller, once controllers register (metadata.version 3.7-IV0+,
    KIP-919; ClusterControlManager.replay(RegisterControllerRecord)). Logs without any controller registration
    (older metadata versions) are not judged."""
    known = kraft_controllers.groupBy(KEY).agg(F.collect_set("controller_id").alias("controllers"))
    rows = (kraft_quorum.join(known, KEY)
            .withColumn("strangers", F.array_except(F.coalesce("voters", empty_ints()), "controllers"))
            .where(F.size("strangers") > 0))
    detail = say("voters %s are not registered controllers %s", int_list("strangers"), int_list("controllers"))
    return to_output(rows, "voter_not_controller", path="path", detail=detail)


def metadata_version_unsupported(kraft_brokers: DataFrame, kraft_features: DataFrame) -> DataFrame:
    """Every registered broker supports the finalized metadata.version (ClusterControlManager
    .processRegistrationFeature refuses a broker that does not; FeatureControlManager refuses a level a
    registered broker does not support). A broker that registered no range for it is not judged."""
    levels = kraft_features.select(KEY, F.element_at("features", F.lit(METADATA_VERSION)).alias("level"))
    rows = (kraft_brokers.withColumn("range", F.try_element_at("features", F.lit(METADATA_VERSION)))
            .where(F.col("range").isNotNull())
            .join(levels.where(F.col("level").isNotNull()), KEY)
            .where((F.col("level") < F.col("range")[0]) | (F.col("level") > F.col("range")[1])))
    detail = say("metadata.version %s is outside the range %s broker %s supports", "level", int_list("range"),
                 "broker_id")
    return to_output(rows, "metadata_version_unsupported", broker_id="broker_id", path="path", detail=detail)


def partition_reassignment_stuck(kraft_partitions: DataFrame, assignments: DataFrame, params: Params) -> DataFrame:
    """A partition's reassignment (adding or removing replicas, ReplicationControlManager.alterPartitionReassignments)
    completes within ``reassignment_sla_ms``, its age measured from the record that began it to the last record
    of the log."""
    targets = assignments.select(KEY, "topic", "partition", F.coalesce("adding_replicas", empty_ints()).alias("adding"),
                                 F.coalesce("removing_replicas", empty_ints()).alias("removing"))
    rows = (with_params(kraft_partitions.where(F.col("reassigning_since").isNotNull()), params, "now_ms",
                        "reassignment_sla_ms")
            .withColumn("age_ms", F.col("now_ms") - F.col("reassigning_since"))
            .where(F.col("age_ms") > F.col("reassignment_sla_ms"))
            .join(targets, [KEY, "topic", "partition"], "left"))
    detail = say("adding %s, removing %s since offset %s (%s), pending for %s", int_list("adding"),
                 int_list("removing"), "reassigning_since_offset", instant("reassigning_since"), duration("age_ms"))
    return to_output(rows, "partition_reassignment_stuck", topic="topic", partition="partition", path="path",
                     detail=detail)


def log_epoch_regressed(kraft_anomalies: DataFrame) -> DataFrame:
    """A partition's leader epoch and partition epoch never go back within the log: a change only bumps them
    (PartitionRegistration.merge); a PartitionRecord that replaces a partition with lower epochs breaks fencing."""
    rows = kraft_anomalies.where(F.col("kind") == "epoch_regressed")
    detail = say("a PartitionRecord at offset %s sets %s of %s", "offset", "detail", "subject")
    return to_output(rows, "log_epoch_regressed", topic="topic", partition="partition", path="path", detail=detail)


def log_replay_inconsistent(kraft_anomalies: DataFrame) -> DataFrame:
    """The log never changes what it has not created: Kafka's MetadataDelta fails on a change to an unknown
    partition, topic or broker, so such a record means a lost or foreign part of the log. After a record that could
    not be decoded (record_undecodable) such changes are its consequence: explained, not a problem of their own."""
    undecodable = (kraft_anomalies.where(F.col("kind") == "undecodable_record").groupBy(KEY)
                   .agg(F.min("offset").alias("first_undecodable")))
    rows = (kraft_anomalies.where(F.col("kind").isin(*REPLAY_ANOMALIES)).join(undecodable, KEY, "left")
            .withColumn("after_undecodable", F.coalesce(F.col("first_undecodable") < F.col("offset"), F.lit(False))))
    detail = F.concat(say("%s at offset %s: %s (%s)", "kind", "offset", "detail", "subject"),
                      F.when(F.col("after_undecodable"),
                             say("; the undecodable record at offset %s would have created it",
                                 "first_undecodable")).otherwise(F.lit("")))
    return to_output(rows, "log_replay_inconsistent", path="path", detail=detail, explained=F.col("after_undecodable"))


def record_undecodable(kraft_anomalies: DataFrame) -> DataFrame:
    """Every record of the log is one released Kafka wrote (a known apiKey and version, consumed exactly); an
    unknown one is reported with its offset and left out of the image, never guessed."""
    rows = kraft_anomalies.where(F.col("kind") == "undecodable_record")
    detail = say("record at offset %s could not be decoded: %s", "offset", "detail")
    return to_output(rows, "record_undecodable", path="path", detail=detail)


def log_corrupt(kraft_anomalies: DataFrame) -> DataFrame:
    """Every batch of the metadata log is intact (magic 2, CRC-32C, records that fill it exactly): Kafka's log
    recovery truncates a segment at its first invalid batch, losing what follows; the image is what precedes it."""
    rows = kraft_anomalies.where(F.col("kind") == "log_corrupt")
    return to_output(rows, "log_corrupt", path="path", detail=say("%s (offset %s)", "detail", "offset"))


def log_truncated(kraft_anomalies: DataFrame) -> DataFrame:
    """No segment ends inside a batch: a torn last batch (a crash, or a copy taken while the controller wrote) is
    dropped by Kafka's recovery, and the image is what precedes it."""
    rows = kraft_anomalies.where(F.col("kind") == "log_truncated")
    return to_output(rows, "log_truncated", path="path", detail=say("%s (offset %s)", "detail", "offset"))

