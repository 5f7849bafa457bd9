"""The check catalogue of the contract: id, default severity, entity (audit table) and meaning."""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("critical", "error", "warning", "info")
# Severities that fail the gate; warnings and info are validated and shown but do not gate.
GATING_SEVERITIES = frozenset({"critical", "error"})


@dataclass(frozen=True)
class Check:
    check_id: str
    severity: str
    entity: str
    meaning: str
    history: bool = False


CHECKS: tuple[Check, ...] = (
    # Partitions and replicas
    Check("leader_not_in_isr", "error", "partitions", "the state's leader is not in its isr"),
    Check("isr_not_subset_of_replicas", "error", "partitions", "an isr member is not an assigned replica"),
    Check("leader_not_alive", "error", "partitions", "leader >= 0 but not registered under /brokers/ids"),
    Check("offline_partition", "critical", "partitions", "leader is -1, or no isr member is alive"),
    Check("under_replicated", "warning", "partitions", "fewer isr members than assigned replicas"),
    Check("preferred_leader_not_leader", "info", "partitions", "leader is not the first assigned replica"),
    Check("replica_on_unknown_broker", "warning", "partitions", "an assigned replica's broker is not registered"),
    Check("duplicate_replica", "error", "partitions", "a broker appears twice in one partition's assignment"),
    Check("replication_factor_inconsistent", "warning", "topics", "partitions of one topic have different RF"),
    Check("partition_state_missing", "error", "partitions", "assigned partition has no .../partitions/<p>/state"),
    Check("partition_state_orphaned", "warning", "partitions", "a state znode for a partition not in the assignment"),
    Check(
        "partition_epoch_ahead_of_controller",
        "error",
        "partitions",
        "state controller_epoch > /controller_epoch",
    ),
    Check(
        "leader_epoch_regressed",
        "error",
        "partitions",
        "leader_epoch lower than in the previous snapshot",
        history=True,
    ),
    # Controller
    Check("controller_missing", "critical", "controller", "no /controller znode"),
    Check("controller_not_alive", "critical", "controller", "/controller's brokerid is not registered"),
    Check(
        "controller_session_mismatch",
        "error",
        "controller",
        "/controller's ephemeralOwner differs from that broker's registration session",
    ),
    Check(
        "controller_epoch_regressed",
        "critical",
        "controller",
        "/controller_epoch lower than in the previous snapshot",
        history=True,
    ),
    # ZooKeeper -> KRaft migration in flight (only ever raised during a migration)
    Check(
        "migration_dual_write_stalled",
        "error",
        "controller",
        "dual writes stopped: /migration unchanged for longer than its limit while a KRaft controller holds "
        "/controller",
    ),
    Check(
        "migration_stuck",
        "warning",
        "controller",
        "a migration waiting for brokers or loading (offset -1) for longer than its limit",
    ),
    Check(
        "migration_crash_loop",
        "error",
        "controller",
        "the initial load restarted under a new KRaft leader without completing",
        history=True,
    ),
    Check(
        "migration_rolled_back",
        "critical",
        "controller",
        "a ZooKeeper-mode controller took /controller back during dual writes (rollback or split brain)",
        history=True,
    ),
    Check(
        "migration_offset_regressed",
        "critical",
        "controller",
        "the KRaft metadata offset in /migration lower than in the previous snapshot",
        history=True,
    ),
    # Brokers and topics
    Check(
        "broker_registration_not_ephemeral",
        "error",
        "brokers",
        "a /brokers/ids/<id> znode with ephemeralOwner 0",
    ),
    Check("broker_endpoint_conflict", "error", "brokers", "two brokers advertise the same endpoint"),
    Check("topic_config_missing", "warning", "topics", "a topic without /config/topics/<t>"),
    Check(
        "deleted_topic_remnants",
        "warning",
        "topics",
        "config, partition, owner or offset znodes of a topic that has no /brokers/topics/<t>",
    ),
    # Admin operations
    Check(
        "delete_topic_stuck",
        "error",
        "admin",
        "/admin/delete_topics/<t> older than its SLA while the topic still exists",
    ),
    Check("delete_marker_orphaned", "warning", "admin", "/admin/delete_topics/<t> for a topic that no longer exists"),
    Check("reassignment_stuck", "error", "admin", "/admin/reassign_partitions older than its SLA"),
    Check(
        "reassignment_invalid",
        "error",
        "admin",
        "a reassignment entry names a missing topic/partition or an unregistered broker",
    ),
    Check("preferred_election_stuck", "warning", "admin", "/admin/preferred_replica_election older than its SLA"),
    Check(
        "notification_backlog",
        "warning",
        "admin",
        "too many or too old children under /isr_change_notification, /log_dir_event_notification or /config/changes",
    ),
    # Old (ZooKeeper-based) consumer groups
    Check(
        "owner_not_registered",
        "error",
        "consumer_owners",
        "an owner znode names a consumer id absent from /consumers/<g>/ids",
    ),
    Check(
        "partition_unowned",
        "warning",
        "consumer_owners",
        "a group with live consumers subscribed to a topic leaves a partition without owner",
    ),
    Check(
        "partition_multiply_owned",
        "error",
        "consumer_owners",
        "one (group, topic, partition) is claimed by more than one owner znode or thread",
    ),
    Check(
        "owner_assignment_mismatch",
        "warning",
        "consumer_owners",
        "owners differ from the range assignment the group's consumers should compute",
    ),
    Check("offset_invalid", "error", "offsets", "an offset znode that is not a non-negative integer"),
    Check("offset_for_unknown_partition", "warning", "offsets", "an offset for a topic/partition that does not exist"),
    Check(
        "offset_regressed",
        "error",
        "offsets",
        "a committed offset lower than in the previous snapshot",
        history=True,
    ),
    # Any znode
    Check(
        "malformed_znode",
        "error",
        "znodes",
        "data that does not parse, or does not match any known version of its kind",
    ),
    Check(
        "unreadable_znode",
        "info",
        "znodes",
        "a znode the auditor may not read (no READ permission); checks that need it skip it",
    ),
)

BY_ID: dict[str, Check] = {check.check_id: check for check in CHECKS}
CHECK_IDS: tuple[str, ...] = tuple(BY_ID)
ENTITIES: tuple[str, ...] = tuple(dict.fromkeys(check.entity for check in CHECKS))
