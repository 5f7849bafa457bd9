"""The check catalogue of the contract: the one registry of the audit's checks.

Each ``Check`` is the whole spec of a check: its id, default severity, entity (audit table) and meaning, and its
inputs: the normalized tables it reads, the tables of the baseline snapshot it compares with (a history check)
and whether it takes the snapshot's parameters (clock and limits). Everything else derives from it: the ids
(``CHECK_IDS``), the docs (``scripts/generate_docs.py``), the suites and audit tables, and the dispatch in Spark
(``audit/checks``: the function named like the check, in its family module, called with these inputs by name).

Pure Python (no Spark): the gate, the reports and the Airflow DAG file read it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_zk_audit.contract.migration_checks import DIVERGENCES

SEVERITIES = ("critical", "error", "warning", "info")
# Severities that fail the gate; warnings and info are validated and shown but do not gate.
GATING_SEVERITIES = frozenset({"critical", "error"})
# What a check reports on: the columns naming a finding's subject (null where they do not apply). A finding's
# identity is its check and subject, nulls equal: the audit follows a finding from run to run by it, and the alerts
# derive their stable dedup key from it and the cluster.
FINDING_SUBJECT: tuple[str, ...] = ("topic", "partition", "group_id", "broker_id", "path")
FINDING_IDENTITY: tuple[str, ...] = ("check_id", *FINDING_SUBJECT)


@dataclass(frozen=True)
class Check:
    """One check: what it finds and where it goes (severity, entity, meaning) and what it reads.

    ``tables`` are the normalized tables (``contract.schemas.TABLES``) the check function takes, in its order and
    under their own names; ``baselines`` the tables of the baseline snapshot it takes after them, as
    ``previous_<table>`` (None without a baseline); ``params`` whether it takes the parameters last, as ``params``.
    """

    check_id: str
    severity: str
    entity: str
    meaning: str
    tables: tuple[str, ...] = ()
    baselines: tuple[str, ...] = ()
    params: bool = False
    source: str = ""  # where Kafka keeps the invariant (apache/kafka paths), for the KRaft checks
    paired: bool = False  # the migration diff's: found by comparing a cluster with its KRaft log, not by a function

    @property
    def history(self) -> bool:
        """A history check: it compares with the baseline snapshot (and reports nothing without one)."""
        return bool(self.baselines)

    @property
    def arguments(self) -> tuple[str, ...]:
        """The check function's parameter names, in order: the tables, ``previous_<table>`` of each baseline
        table, then ``params`` if it takes them."""
        return (*self.tables, *(f"previous_{table}" for table in self.baselines), *(("params",) if self.params else ()))


CHECKS: tuple[Check, ...] = (
    # Partitions and replicas
    Check("leader_not_in_isr", "error", "partitions", "the state's leader is not in its isr",
          tables=("partitions",)),
    Check("isr_not_subset_of_replicas", "error", "partitions", "an isr member is not an assigned replica",
          tables=("partitions",)),
    Check("leader_not_alive", "error", "partitions", "leader >= 0 but not registered under /brokers/ids",
          tables=("partitions", "brokers", "controller")),
    Check("offline_partition", "critical", "partitions", "leader is -1, or no isr member is alive",
          tables=("partitions", "brokers", "controller")),
    Check("under_replicated", "warning", "partitions", "fewer isr members than assigned replicas",
          tables=("partitions", "assignments")),
    Check("preferred_leader_not_leader", "info", "partitions", "leader is not the first assigned replica",
          tables=("partitions", "assignments", "admin_markers")),
    Check("replica_on_unknown_broker", "warning", "partitions", "an assigned replica's broker is not registered",
          tables=("assignments", "brokers", "controller")),
    Check("duplicate_replica", "error", "partitions", "a broker appears twice in one partition's assignment",
          tables=("assignments",)),
    Check("replication_factor_inconsistent", "warning", "topics", "partitions of one topic have different RF",
          tables=("assignments",)),
    Check("partition_state_missing", "error", "partitions", "assigned partition has no .../partitions/<p>/state",
          tables=("partitions",)),
    Check("partition_state_orphaned", "warning", "partitions", "a state znode for a partition not in the assignment",
          tables=("partitions",)),
    Check("partition_epoch_ahead_of_controller", "error", "partitions", "state controller_epoch > /controller_epoch",
          tables=("partitions", "controller_epoch", "controller", "migration")),
    Check("leader_epoch_regressed", "error", "partitions", "leader_epoch lower than in the previous snapshot",
          tables=("partitions", "topics"), baselines=("partitions", "topics")),
    # Controller
    Check("controller_missing", "critical", "controller", "no /controller znode",
          tables=("controller", "kraft_log"), params=True),
    Check("controller_not_alive", "critical", "controller", "/controller's brokerid is not registered",
          tables=("controller", "brokers")),
    Check("controller_session_mismatch", "error", "controller",
          "/controller's ephemeralOwner differs from that broker's registration session",
          tables=("controller", "brokers")),
    Check("controller_epoch_regressed", "critical", "controller",
          "/controller_epoch lower than in the previous snapshot",
          tables=("controller_epoch",), baselines=("controller_epoch",)),
    # ZooKeeper -> KRaft migration in flight (only ever raised during a migration)
    Check("migration_dual_write_stalled", "error", "controller",
          "dual writes stopped: /migration unchanged for longer than its limit while a KRaft controller holds "
          "/controller",
          tables=("migration", "controller"), params=True),
    Check("migration_stuck", "warning", "controller",
          "a migration waiting for brokers or loading (offset -1) for longer than its limit",
          tables=("migration", "controller"), params=True),
    Check("migration_crash_loop", "error", "controller",
          "the initial load restarted under a new KRaft leader without completing",
          tables=("migration", "controller"), baselines=("migration", "controller")),
    Check("migration_rolled_back", "critical", "controller",
          "a ZooKeeper-mode controller took /controller back during dual writes (rollback or split brain)",
          tables=("migration", "controller"), baselines=("migration", "controller")),
    Check("migration_offset_regressed", "critical", "controller",
          "the KRaft metadata offset in /migration lower than in the previous snapshot",
          tables=("migration",), baselines=("migration",)),
    # Brokers and topics
    Check("broker_registration_not_ephemeral", "error", "brokers", "a /brokers/ids/<id> znode with ephemeralOwner 0",
          tables=("brokers",)),
    Check("broker_endpoint_conflict", "error", "brokers", "two brokers advertise the same endpoint",
          tables=("brokers",)),
    Check("topic_config_missing", "warning", "topics", "a topic without /config/topics/<t>",
          tables=("topics", "configs")),
    Check("deleted_topic_remnants", "warning", "topics",
          "config, partition, owner or offset znodes of a topic that has no /brokers/topics/<t>",
          tables=("topics", "configs", "partition_states", "consumer_owners", "consumer_offsets")),
    # Admin operations
    Check("delete_topic_stuck", "error", "admin",
          "/admin/delete_topics/<t> older than its SLA while the topic still exists",
          tables=("admin_markers", "topics"), params=True),
    Check("delete_marker_orphaned", "warning", "admin", "/admin/delete_topics/<t> for a topic that no longer exists",
          tables=("admin_markers", "topics")),
    Check("reassignment_stuck", "error", "admin", "/admin/reassign_partitions older than its SLA",
          tables=("admin_markers",), params=True),
    Check("reassignment_invalid", "error", "admin",
          "a reassignment entry names a missing topic/partition or an unregistered broker",
          tables=("admin_markers", "assignments", "brokers", "controller")),
    Check("preferred_election_stuck", "warning", "admin", "/admin/preferred_replica_election older than its SLA",
          tables=("admin_markers",), params=True),
    Check("notification_backlog", "warning", "admin",
          "too many or too old children under /isr_change_notification, /log_dir_event_notification or /config/changes",
          tables=("notifications",), params=True),
    # Old (ZooKeeper-based) consumer groups
    Check("owner_not_registered", "error", "consumer_owners",
          "an owner znode names a consumer id absent from /consumers/<g>/ids",
          tables=("consumer_owners", "consumer_registrations")),
    Check("partition_unowned", "warning", "consumer_owners",
          "a group with live consumers subscribed to a topic leaves a partition without owner",
          tables=("consumer_registrations", "consumer_owners", "assignments", "topics")),
    Check("partition_multiply_owned", "error", "consumer_owners",
          "one (group, topic, partition) is claimed by more than one owner znode or thread",
          tables=("consumer_owners",)),
    Check("owner_assignment_mismatch", "warning", "consumer_owners",
          "owners differ from the range assignment the group's consumers should compute",
          tables=("consumer_registrations", "consumer_owners", "assignments", "topics")),
    Check("offset_invalid", "error", "offsets", "an offset znode that is not a non-negative integer",
          tables=("consumer_offsets",)),
    Check("offset_for_unknown_partition", "warning", "offsets", "an offset for a topic/partition that does not exist",
          tables=("consumer_offsets", "assignments", "topics")),
    Check("offset_regressed", "error", "offsets", "a committed offset lower than in the previous snapshot",
          tables=("consumer_offsets", "topics"), baselines=("consumer_offsets", "topics")),
    # KRaft clusters (their metadata log; nothing to find in a ZooKeeper snapshot)
    Check("leader_fenced", "error", "partitions", "a partition's leader is a fenced broker",
          tables=("partitions", "kraft_brokers"),
          source=(
                  "the quorum controller never elects a fenced broker and moves leadership off a broker it fences: "
                  "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java "
                  "(handleBrokerFenced, generateLeaderAndIsrUpdates) and PartitionChangeBuilder.java "
                  "(isAcceptableLeader)")),
    Check("elr_invalid", "error", "partitions",
          "the eligible leader replicas overlap the ISR or name a broker that is not a replica",
          tables=("kraft_partitions", "partitions"),
          source=(
                  "KIP-966: metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java "
                  "(maybePopulateTargetElr: ELR members leave the ISR and stay replicas)")),
    Check("directory_unregistered", "warning", "partitions",
          "a replica's log directory is not one its broker registered",
          tables=("kraft_partitions", "partitions", "kraft_brokers"),
          source=(
                  "KIP-858: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java "
                  "(assignments checked with BrokerRegistration.hasOnlineDir); DirectoryId.UNASSIGNED, LOST and "
                  "MIGRATING are not directories")),
    Check("partition_reassignment_stuck", "error", "partitions",
          "a partition has had adding or removing replicas for longer than the reassignment SLA, by the log's clock",
          tables=("kraft_partitions", "assignments"), params=True,
          source=(
                  "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java "
                  "(alterPartitionReassignments; PartitionReassignmentReplicas completes when the adding replicas "
                  "are in the ISR)")),
    Check("log_epoch_regressed", "error", "partitions",
          "a partition's leader or partition epoch went back within the metadata log",
          tables=("kraft_anomalies",),
          source=(
                  "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java (merge: every change"
                  " bumps the partition epoch, a leader change the leader epoch)")),
    Check("quorum_leader_missing", "critical", "controller", "the metadata log names no quorum leader",
          tables=("kraft_log", "kraft_quorum"),
          source=(
                  "raft/src/main/java/org/apache/kafka/raft/LeaderState.java (a new leader appends a LeaderChange "
                  "control record) and FileQuorumStateStore.java (quorum-state)")),
    Check("voter_not_controller", "warning", "controller", "a voter of the quorum is not a registered controller",
          tables=("kraft_quorum", "kraft_controllers"),
          source=(
                  "KIP-919: metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java (replay "
                  "of RegisterControllerRecord, metadata.version 3.7-IV0+)")),
    Check("metadata_version_unsupported", "error", "brokers",
          "a registered broker does not support the finalized metadata.version",
          tables=("kraft_brokers", "kraft_features"),
          source=(
                  "metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java "
                  "(processRegistrationFeature) and FeatureControlManager.java (a level every registered broker "
                  "supports)")),
    Check("log_replay_inconsistent", "error", "znodes",
          "a record changes a partition, topic or broker the log never created",
          tables=("kraft_anomalies",),
          source=(
                  "metadata/src/main/java/org/apache/kafka/image/TopicsDelta.java and ClusterDelta.java (a change "
                  "to an unknown partition, topic or broker fails the replay)")),
    Check("log_corrupt", "error", "znodes",
          "a batch of the metadata log is corrupt (CRC, magic or framing); the image stops before it",
          tables=("kraft_anomalies",),
          source=(
                  "storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java (recover: truncates"
                  " at the first invalid batch); "
                  "clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java (isValid: magic 2, "
                  "CRC-32C)")),
    Check("log_truncated", "warning", "znodes",
          "a segment of the metadata log ends inside a batch; the image stops before it",
          tables=("kraft_anomalies",),
          source=(
                  "storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java (recover drops a "
                  "partial last batch)")),
    Check("record_undecodable", "warning", "znodes",
          "a record of an unknown type or version, reported with its offset and left out of the image",
          tables=("kraft_anomalies",),
          source=(
                  "metadata/src/main/java/org/apache/kafka/metadata/MetadataRecordSerde.java (apiKey and version "
                  "from the generated MetadataRecordType; the value must be consumed exactly)")),
    # Any znode
    Check("malformed_znode", "error", "znodes",
          "data that does not parse, or does not match any known version of its kind",
          tables=("malformed_znodes",)),
    Check("unreadable_znode", "info", "znodes",
          "a znode the auditor may not read (no READ permission); checks that need it skip it",
          tables=("unreadable_znodes",)),
)

# The migration diff's findings (contract.migration_checks): raised only for a cluster whose settings pair its
# ZooKeeper with the KRaft log its migration wrote (``clusters[].migration``), by comparing the two
# (snapshot.migration), never by a check function over one snapshot's tables.
CHECKS += tuple(Check(d.check_id, d.severity, "znodes", d.meaning, source=d.source, paired=True)
                for d in DIVERGENCES)

BY_ID: dict[str, Check] = {check.check_id: check for check in CHECKS}
CHECK_IDS: tuple[str, ...] = tuple(BY_ID)
ENTITIES: tuple[str, ...] = tuple(dict.fromkeys(check.entity for check in CHECKS))
# The checks a function runs over every snapshot's tables (all but the paired ones).
SNAPSHOT_CHECK_IDS: tuple[str, ...] = tuple(check.check_id for check in CHECKS if not check.paired)
PAIRED_CHECK_IDS: tuple[str, ...] = tuple(check.check_id for check in CHECKS if check.paired)
# The checks that judge a KRaft metadata log (its kraft_* tables): a ZooKeeper snapshot never has anything for them.
KRAFT_CHECK_IDS: tuple[str, ...] = (
    "leader_fenced", "elr_invalid", "directory_unregistered", "partition_reassignment_stuck", "log_epoch_regressed",
    "quorum_leader_missing", "voter_not_controller", "metadata_version_unsupported", "log_replay_inconsistent",
    "record_undecodable", "log_corrupt", "log_truncated",
)
