"""The check catalogue in Spark: one pure function per check id, and ``run_checks`` that wires them.

Every check function takes DataFrames (and, where needed, the snapshot time and limits) and returns
rows in the CHECK_OUTPUT shape: one row per violation, with the subject, the znode that shows it and a
sentence of evidence. History checks also take the previous snapshot's tables and return nothing when
there is no previous snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame

from kafka_zk_audit.audit.checks import admin, brokers_topics, consumers, controller, migration, partitions, znodes
from kafka_zk_audit.audit.params import Params
from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, TABLES, keyed

CHECK_FUNCTIONS: dict[str, Callable[..., DataFrame]] = {
    # Partitions and replicas
    "leader_not_in_isr": partitions.leader_not_in_isr,
    "isr_not_subset_of_replicas": partitions.isr_not_subset_of_replicas,
    "leader_not_alive": partitions.leader_not_alive,
    "offline_partition": partitions.offline_partition,
    "under_replicated": partitions.under_replicated,
    "preferred_leader_not_leader": partitions.preferred_leader_not_leader,
    "replica_on_unknown_broker": partitions.replica_on_unknown_broker,
    "duplicate_replica": partitions.duplicate_replica,
    "replication_factor_inconsistent": partitions.replication_factor_inconsistent,
    "partition_state_missing": partitions.partition_state_missing,
    "partition_state_orphaned": partitions.partition_state_orphaned,
    "partition_epoch_ahead_of_controller": partitions.partition_epoch_ahead_of_controller,
    "leader_epoch_regressed": partitions.leader_epoch_regressed,
    # Controller
    "controller_missing": controller.controller_missing,
    "controller_not_alive": controller.controller_not_alive,
    "controller_session_mismatch": controller.controller_session_mismatch,
    "controller_epoch_regressed": controller.controller_epoch_regressed,
    # Migration in flight
    "migration_dual_write_stalled": migration.migration_dual_write_stalled,
    "migration_stuck": migration.migration_stuck,
    "migration_crash_loop": migration.migration_crash_loop,
    "migration_rolled_back": migration.migration_rolled_back,
    "migration_offset_regressed": migration.migration_offset_regressed,
    # Brokers and topics
    "broker_registration_not_ephemeral": brokers_topics.broker_registration_not_ephemeral,
    "broker_endpoint_conflict": brokers_topics.broker_endpoint_conflict,
    "topic_config_missing": brokers_topics.topic_config_missing,
    "deleted_topic_remnants": brokers_topics.deleted_topic_remnants,
    # Admin operations
    "delete_topic_stuck": admin.delete_topic_stuck,
    "delete_marker_orphaned": admin.delete_marker_orphaned,
    "reassignment_stuck": admin.reassignment_stuck,
    "reassignment_invalid": admin.reassignment_invalid,
    "preferred_election_stuck": admin.preferred_election_stuck,
    "notification_backlog": admin.notification_backlog,
    # Old consumer groups
    "owner_not_registered": consumers.owner_not_registered,
    "partition_unowned": consumers.partition_unowned,
    "partition_multiply_owned": consumers.partition_multiply_owned,
    "owner_assignment_mismatch": consumers.owner_assignment_mismatch,
    "offset_invalid": consumers.offset_invalid,
    "offset_for_unknown_partition": consumers.offset_for_unknown_partition,
    "offset_regressed": consumers.offset_regressed,
    # Any znode
    "malformed_znode": znodes.malformed_znode,
    "unreadable_znode": znodes.unreadable_znode,
}


@dataclass(frozen=True)
class CheckInputs:
    """Everything a check may need, keyed by snapshot: the tables, their baselines' tables (keyed by the snapshot
    they are the baseline of; None when no snapshot has one) and each snapshot's parameters (audit.params)."""

    tables: Mapping[str, DataFrame]
    previous: Mapping[str, DataFrame] | None
    params: Params

    def before(self, table: str) -> DataFrame | None:
        """The previous snapshot's table, or None without a baseline (or without that table)."""
        return None if self.previous is None else self.previous.get(table)


_CALLS: dict[str, Callable[[CheckInputs], DataFrame]] = {
    "leader_not_in_isr": lambda i: partitions.leader_not_in_isr(i.tables["partitions"]),
    "isr_not_subset_of_replicas": lambda i: partitions.isr_not_subset_of_replicas(i.tables["partitions"]),
    "leader_not_alive": lambda i: partitions.leader_not_alive(
        i.tables["partitions"], i.tables["brokers"], i.tables["controller"]
    ),
    "offline_partition": lambda i: partitions.offline_partition(
        i.tables["partitions"], i.tables["brokers"], i.tables["controller"]
    ),
    "under_replicated": lambda i: partitions.under_replicated(i.tables["partitions"], i.tables["assignments"]),
    "preferred_leader_not_leader": lambda i: partitions.preferred_leader_not_leader(
        i.tables["partitions"], i.tables["assignments"], i.tables["admin_markers"]
    ),
    "replica_on_unknown_broker": lambda i: partitions.replica_on_unknown_broker(
        i.tables["assignments"], i.tables["brokers"], i.tables["controller"]
    ),
    "duplicate_replica": lambda i: partitions.duplicate_replica(i.tables["assignments"]),
    "replication_factor_inconsistent": lambda i: partitions.replication_factor_inconsistent(i.tables["assignments"]),
    "partition_state_missing": lambda i: partitions.partition_state_missing(i.tables["partitions"]),
    "partition_state_orphaned": lambda i: partitions.partition_state_orphaned(i.tables["partitions"]),
    "partition_epoch_ahead_of_controller": lambda i: partitions.partition_epoch_ahead_of_controller(
        i.tables["partitions"], i.tables["controller_epoch"], i.tables["controller"], i.tables["migration"]
    ),
    "leader_epoch_regressed": lambda i: partitions.leader_epoch_regressed(
        i.tables["partitions"], i.tables["topics"], i.before("partitions"), i.before("topics")
    ),
    "controller_missing": lambda i: controller.controller_missing(i.tables["controller"], i.params),
    "controller_not_alive": lambda i: controller.controller_not_alive(i.tables["controller"], i.tables["brokers"]),
    "controller_session_mismatch": lambda i: controller.controller_session_mismatch(
        i.tables["controller"], i.tables["brokers"]
    ),
    "controller_epoch_regressed": lambda i: controller.controller_epoch_regressed(
        i.tables["controller_epoch"], i.before("controller_epoch")
    ),
    "migration_dual_write_stalled": lambda i: migration.migration_dual_write_stalled(
        i.tables["migration"], i.tables["controller"], i.params
    ),
    "migration_stuck": lambda i: migration.migration_stuck(i.tables["migration"], i.tables["controller"], i.params),
    "migration_crash_loop": lambda i: migration.migration_crash_loop(
        i.tables["migration"], i.tables["controller"], i.before("migration"), i.before("controller")
    ),
    "migration_rolled_back": lambda i: migration.migration_rolled_back(
        i.tables["migration"], i.tables["controller"], i.before("migration"), i.before("controller")
    ),
    "migration_offset_regressed": lambda i: migration.migration_offset_regressed(
        i.tables["migration"], i.before("migration")
    ),
    "broker_registration_not_ephemeral": lambda i: brokers_topics.broker_registration_not_ephemeral(
        i.tables["brokers"]
    ),
    "broker_endpoint_conflict": lambda i: brokers_topics.broker_endpoint_conflict(i.tables["brokers"]),
    "topic_config_missing": lambda i: brokers_topics.topic_config_missing(i.tables["topics"], i.tables["configs"]),
    "deleted_topic_remnants": lambda i: brokers_topics.deleted_topic_remnants(
        i.tables["topics"], i.tables["configs"], i.tables["partition_states"], i.tables["consumer_owners"],
        i.tables["consumer_offsets"],
    ),
    "delete_topic_stuck": lambda i: admin.delete_topic_stuck(i.tables["admin_markers"], i.tables["topics"], i.params),
    "delete_marker_orphaned": lambda i: admin.delete_marker_orphaned(i.tables["admin_markers"], i.tables["topics"]),
    "reassignment_stuck": lambda i: admin.reassignment_stuck(i.tables["admin_markers"], i.params),
    "reassignment_invalid": lambda i: admin.reassignment_invalid(
        i.tables["admin_markers"], i.tables["assignments"], i.tables["brokers"], i.tables["controller"]
    ),
    "preferred_election_stuck": lambda i: admin.preferred_election_stuck(i.tables["admin_markers"], i.params),
    "notification_backlog": lambda i: admin.notification_backlog(i.tables["notifications"], i.params),
    "owner_not_registered": lambda i: consumers.owner_not_registered(
        i.tables["consumer_owners"], i.tables["consumer_registrations"]
    ),
    "partition_unowned": lambda i: consumers.partition_unowned(
        i.tables["consumer_registrations"], i.tables["consumer_owners"], i.tables["assignments"], i.tables["topics"]
    ),
    "partition_multiply_owned": lambda i: consumers.partition_multiply_owned(i.tables["consumer_owners"]),
    "owner_assignment_mismatch": lambda i: consumers.owner_assignment_mismatch(
        i.tables["consumer_registrations"], i.tables["consumer_owners"], i.tables["assignments"], i.tables["topics"]
    ),
    "offset_invalid": lambda i: consumers.offset_invalid(i.tables["consumer_offsets"]),
    "offset_for_unknown_partition": lambda i: consumers.offset_for_unknown_partition(
        i.tables["consumer_offsets"], i.tables["assignments"], i.tables["topics"]
    ),
    "offset_regressed": lambda i: consumers.offset_regressed(
        i.tables["consumer_offsets"], i.tables["topics"], i.before("consumer_offsets"), i.before("topics")
    ),
    "malformed_znode": lambda i: znodes.malformed_znode(i.tables["malformed_znodes"]),
    "unreadable_znode": lambda i: znodes.unreadable_znode(i.tables["unreadable_znodes"]),
}

if not set(CHECK_FUNCTIONS) == set(CHECK_IDS) == set(_CALLS):
    raise RuntimeError("the check registry must cover exactly the catalogue's check ids")


def run_check(check_id: str, inputs: CheckInputs) -> DataFrame:
    """The rows of one check for these inputs."""
    return _CALLS[check_id](inputs)


def run_checks(
    tables: Mapping[str, DataFrame],
    previous: Mapping[str, DataFrame] | None,
    params: Params,
    check_ids: tuple[str, ...] = CHECK_IDS,
) -> DataFrame:
    """Every check (or the given ids) over every snapshot of the tables, as one keyed CHECK_OUTPUT DataFrame."""
    missing = [name for name in TABLES if name not in tables]
    if missing:
        raise ValueError(f"run_checks needs every normalized table; missing: {', '.join(missing)}")
    inputs = CheckInputs(tables=tables, previous=previous, params=params)
    columns = keyed(CHECK_OUTPUT).names
    outputs = [run_check(check_id, inputs).select(*columns) for check_id in check_ids]
    return reduce(DataFrame.unionByName, outputs)
