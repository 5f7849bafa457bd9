"""Plant one problem of the check catalogue into a simulated cluster, on a subject of its own.

Every plant of a topic writes a new topic ``planted-<check_id>`` that is healthy apart from the
problem (assignment, states whose leader is alive and in the isr, ``/config/topics/<t>``); every
plant of a group writes a group ``planted-<check_id>`` on its own topic; every plant of a broker
uses new broker ids (1001 up, never reused). So plants coexist without touching each other.

``Planted.path`` is the path of the audit's finding: the state znode for a state problem; the topic
znode for an assignment problem (unknown or duplicate replica, inconsistent RF) and for a missing
state or config; the owner node's path, existing or not, for owner problems (``…/owners/<t>/0`` for
a multiply owned partition 0, the first of its claims); the queue's parent for a backlog.

``implied`` lists the other checks a plant cannot help triggering on the same subject:

* leader_not_in_isr (partition 0: the preferred replica leads, the isr holds the other replicas):
  under_replicated.
* leader_not_alive (partition 0: the leader, first replica and isr member is an unregistered
  broker): replica_on_unknown_broker.
* reassignment_invalid (an entry whose target names an unregistered broker): reassignment_stuck,
  once the znode is older than its SLA.
* owner_not_registered (partition 1's owner node names a consumer whose ids node is gone):
  owner_assignment_mismatch, since no registered thread can be the range assignment's owner.
* controller_epoch_regressed (/controller_epoch lowered by one): partition_epoch_ahead_of_controller
  on other subjects, only when a partition state already carries the current epoch (after
  ``advance()`` or ``recreate_topic()``).

Everything else implies nothing. This assumes owner_assignment_mismatch compares existing
``owners/<t>/<p>`` nodes with the range assignment (a missing owner is partition_unowned, a
pykafka-style ``<broker>-<p>`` node is left to partition_multiply_owned), and that leader -1 counts
as "no leader" for the leader checks (``offline_partition`` keeps a full isr).

Global znodes make some plants exclusive:

* ``controller_missing``, ``controller_not_alive`` and ``controller_session_mismatch`` all rewrite
  /controller: one at a time. A later one replaces the earlier (whose problem is then gone and
  which leaves ``Simulator.planted``). While one is planted, ``advance()`` does not move the
  controller.
* ``reassignment_stuck`` and ``reassignment_invalid`` add entries to the one
  /admin/reassign_partitions znode; they combine, and its ctime is that of the first.
* ``controller_epoch_regressed`` lowers /controller_epoch for the whole cluster;
  ``partition_epoch_ahead_of_controller`` keeps its state one epoch ahead of /controller_epoch
  through ``advance()``.

History plants (``leader_epoch_regressed``, ``offset_regressed``, ``controller_epoch_regressed``)
lower a value that the caller's previous snapshot must already hold, so they act on the base
cluster: the first topic's partition with a leader epoch above 0, the first group's first offset,
and /controller_epoch. Snapshot before ``plant()`` and after.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kazoo.client import KazooClient
from kazoo.security import CREATOR_ALL_ACL

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit_testing.range_assignment import range_assign
from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.encodings import PartitionState
from kafka_zk_audit_testing.simulator.model import Consumer, Group, consumer_id, make_broker, random_uuid
from kafka_zk_audit_testing.simulator.writer import BatchWriter

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planted:
    """Where a plant put its problem: the subject and ``path`` (relative to the chroot) of the finding
    the audit reports for it. ``broker_id`` is set only where the finding's subject is a broker."""

    check_id: str
    topic: str | None = None
    partition: int | None = None
    group_id: str | None = None
    broker_id: int | None = None
    path: str = ""
    implied: tuple[str, ...] = ()


Planter = Callable[["Simulator", str], Planted]
PLANTERS: dict[str, Planter] = {}
EPOCH_AHEAD = "partition_epoch_ahead_of_controller"
CONTROLLER_PLANTS = frozenset({"controller_missing", "controller_not_alive", "controller_session_mismatch"})
REASSIGN_PATH = "/admin/reassign_partitions"


def planter(*check_ids: str) -> Callable[[Planter], Planter]:
    def register(function: Planter) -> Planter:
        for check_id in check_ids:
            PLANTERS[check_id] = function
        return function

    return register


def plant(sim: Simulator, check_id: str) -> Planted:
    """Dispatch to the planter of ``check_id``."""
    if check_id not in CHECK_IDS:
        raise ValueError(f"unknown check id {check_id!r}")
    return PLANTERS[check_id](sim, check_id)


def subject_name(check_id: str) -> str:
    return f"planted-{check_id}"


def now_ms() -> int:
    return int(time.time() * 1000)


# -- healthy building blocks ---------------------------------------------------------------
def live_brokers(sim: Simulator) -> list[int]:
    brokers = sim.model.broker_ids
    if len(brokers) < 3:
        raise ValueError("plants need a cluster of at least 3 brokers")
    return brokers


def plant_rf(sim: Simulator) -> int:
    """Replication factor of planted topics: up to 3, leaving at least one spare broker."""
    return min(3, len(live_brokers(sim)) - 1)


def healthy_assignment(sim: Simulator, partitions: int) -> dict[int, tuple[int, ...]]:
    brokers, rf = live_brokers(sim), plant_rf(sim)
    return {p: tuple(brokers[(p + j) % len(brokers)] for j in range(rf)) for p in range(partitions)}


def spare_broker(sim: Simulator, replicas: tuple[int, ...]) -> int:
    return next(b for b in live_brokers(sim) if b not in replicas)


def quiet_controller_epoch(sim: Simulator) -> int:
    """The epoch planted states carry: below /controller_epoch, as if written by an earlier controller."""
    return max(1, sim.controller_epoch - 1)


def healthy_state(sim: Simulator, replicas: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader=replicas[0], leader_epoch=0, controller_epoch=quiet_controller_epoch(sim),
                          isr=replicas)


def write_topic(
    sim: Simulator,
    name: str,
    assignment: Mapping[int, tuple[int, ...]],
    states: Mapping[int, PartitionState] | None = None,
    config: Mapping[str, str] | None = None,
    with_config: bool = True,
) -> None:
    """Write a planted topic; states default to healthy ones for every assigned partition."""
    if states is None:
        states = {p: healthy_state(sim, replicas) for p, replicas in assignment.items()}
    topic_id = random_uuid(sim.rng) if sim.model.era.topic_version >= 3 else None
    with sim.writer(sim.admin, f"plant {name}") as writer:
        layout.write_topic(
            writer, sim.encoder, name, assignment, states, (dict(config or {}) if with_config else None), topic_id
        )


def topic_planted(
    sim: Simulator,
    check_id: str,
    partitions: int,
    change: Callable[[dict[int, tuple[int, ...]], dict[int, PartitionState]], None],
    partition: int | None = 0,
    path: str | None = None,
    implied: tuple[str, ...] = (),
) -> Planted:
    """A planted topic whose assignment/states ``change`` edits in place before they are written."""
    name = subject_name(check_id)
    assignment = healthy_assignment(sim, partitions)
    states = {p: healthy_state(sim, replicas) for p, replicas in assignment.items()}
    change(assignment, states)
    write_topic(sim, name, assignment, states)
    return Planted(
        check_id, topic=name, partition=partition,
        path=path or (layout.state_path(name, partition) if partition is not None else layout.topic_path(name)),
        implied=implied,
    )


# -- partitions ----------------------------------------------------------------------------
@planter("leader_not_in_isr")
def _leader_not_in_isr(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = _with(states[0], isr=assignment[0][1:])

    return topic_planted(sim, check_id, 2, change, implied=("under_replicated",))


@planter("isr_not_subset_of_replicas")
def _isr_not_subset(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = _with(states[0], isr=assignment[0] + (spare_broker(sim, assignment[0]),))

    return topic_planted(sim, check_id, 2, change)


@planter("leader_not_alive")
def _leader_not_alive(sim: Simulator, check_id: str) -> Planted:
    gone = sim.allocate_broker_id()

    def change(assignment: dict, states: dict) -> None:
        assignment[0] = (gone,) + assignment[0][1:]
        states[0] = _with(states[0], leader=gone, isr=assignment[0])

    return topic_planted(sim, check_id, 2, change, implied=("replica_on_unknown_broker",))


@planter("offline_partition")
def _offline_partition(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = _with(states[0], leader=-1, leader_epoch=1)

    return topic_planted(sim, check_id, 2, change)


@planter("under_replicated")
def _under_replicated(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = _with(states[0], isr=assignment[0][:-1])

    return topic_planted(sim, check_id, 2, change)


@planter("preferred_leader_not_leader")
def _preferred_leader(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = _with(states[0], leader=assignment[0][1], leader_epoch=1)

    return topic_planted(sim, check_id, 2, change)


@planter("replica_on_unknown_broker")
def _replica_on_unknown_broker(sim: Simulator, check_id: str) -> Planted:
    gone = sim.allocate_broker_id()

    def change(assignment: dict, states: dict) -> None:
        # The broker has just gone: its replica is still in the isr, the leader is alive.
        assignment[0] = assignment[0][:-1] + (gone,)
        states[0] = _with(states[0], isr=assignment[0])

    # An assignment problem: it shows in the topic znode.
    return topic_planted(sim, check_id, 2, change, path=layout.topic_path(subject_name(check_id)))


@planter("duplicate_replica")
def _duplicate_replica(sim: Simulator, check_id: str) -> Planted:
    """One partition only, so that no replication factor can look inconsistent."""

    def change(assignment: dict, states: dict) -> None:
        assignment[0] = (assignment[0][0],) + assignment[0][:-1]
        states[0] = _with(states[0], isr=assignment[0])  # the controller keeps the duplicate in the isr

    return topic_planted(sim, check_id, 1, change, path=layout.topic_path(subject_name(check_id)))


@planter("replication_factor_inconsistent")
def _rf_inconsistent(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        assignment[2] = assignment[2][:-1]
        states[2] = healthy_state(sim, assignment[2])

    return topic_planted(sim, check_id, 3, change, partition=None)


@planter("partition_state_missing")
def _state_missing(sim: Simulator, check_id: str) -> Planted:
    """A partition was added to the assignment; the controller never created its state."""
    name = subject_name(check_id)

    def change(assignment: dict, states: dict) -> None:
        del states[2]

    planted = topic_planted(sim, check_id, 3, change, partition=2, path=layout.topic_path(name))
    return planted


@planter("partition_state_orphaned")
def _state_orphaned(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[2] = healthy_state(sim, healthy_assignment(sim, 3)[2])

    return topic_planted(sim, check_id, 2, change, partition=2)


@planter(EPOCH_AHEAD)
def _epoch_ahead(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = _with(states[0], controller_epoch=sim.controller_epoch + 1)

    planted = topic_planted(sim, check_id, 2, change)
    sim.plant_notes[EPOCH_AHEAD] = (planted.path, healthy_assignment(sim, 2)[0])
    return planted


def keep_epoch_ahead(sim: Simulator, writer: BatchWriter) -> None:
    """After /controller_epoch moved on, keep the planted state one epoch ahead of it."""
    if EPOCH_AHEAD not in sim.planted:
        return
    path, replicas = sim.plant_notes[EPOCH_AHEAD]
    state = _with(healthy_state(sim, replicas), controller_epoch=sim.controller_epoch + 1)
    writer.set_data(path, sim.encoder.state(state))


@planter("leader_epoch_regressed")
def _leader_epoch_regressed(sim: Simulator, check_id: str) -> Planted:
    for topic in sim.model.topics.values():
        for partition, epoch in enumerate(topic.leader_epochs):
            if epoch > 0:
                topic.leader_epochs[partition] = epoch - 1
                path = layout.state_path(topic.name, partition)
                sim.admin.set(path, sim.encoder.state(topic.state(partition)))
                sim.counts.sets += 1
                return Planted(check_id, topic=topic.name, partition=partition, path=path)
    raise ValueError("no partition of the cluster has a leader epoch above 0 to lower")


# -- controller ----------------------------------------------------------------------------
def _replace_controller(sim: Simulator, check_id: str) -> None:
    """Remove /controller; a /controller plant made earlier is replaced (its problem is gone)."""
    for earlier in CONTROLLER_PLANTS & set(sim.planted):
        log.warning("%s replaces the earlier %s plant (both own /controller)", check_id, earlier)
        del sim.planted[earlier]
    if sim.admin.exists("/controller"):
        sim.admin.delete("/controller")
        sim.counts.deletes += 1


@planter("controller_missing")
def _controller_missing(sim: Simulator, check_id: str) -> Planted:
    _replace_controller(sim, check_id)
    return Planted(check_id, path="/controller")


@planter("controller_not_alive")
def _controller_not_alive(sim: Simulator, check_id: str) -> Planted:
    gone = sim.allocate_broker_id()
    _replace_controller(sim, check_id)
    session = sim.new_session(f"controller {gone}")
    sim.other_sessions.append(session)
    session.create("/controller", sim.encoder.controller(gone, now_ms()), ephemeral=True)
    sim.counts.creates += 1
    return Planted(check_id, broker_id=gone, path="/controller")


@planter("controller_session_mismatch")
def _controller_session_mismatch(sim: Simulator, check_id: str) -> Planted:
    brokers = live_brokers(sim)
    owner = sim.controller_id if sim.controller_id in brokers else brokers[0]
    named = next(b for b in brokers if b != owner)
    _replace_controller(sim, check_id)
    sim.broker_sessions[owner].create("/controller", sim.encoder.controller(named, now_ms()), ephemeral=True)
    sim.counts.creates += 1
    return Planted(check_id, broker_id=named, path="/controller")


@planter("controller_epoch_regressed")
def _controller_epoch_regressed(sim: Simulator, check_id: str) -> Planted:
    lowered = sim.controller_epoch - 1
    sim.admin.set("/controller_epoch", sim.encoder.controller_epoch(lowered))
    sim.counts.sets += 1
    sim.controller_epoch = lowered
    implied = (EPOCH_AHEAD,) if sim.model.max_state_controller_epoch() > lowered else ()
    return Planted(check_id, path="/controller_epoch", implied=implied)


# -- brokers and topics --------------------------------------------------------------------
def _new_broker(sim: Simulator, broker_id: int, host: str | None = None):  # noqa: ANN202
    rack = sim.model.brokers[0].rack
    return make_broker(sim.model.era, broker_id, now_ms(), rack, host)


@planter("broker_registration_not_ephemeral")
def _broker_not_ephemeral(sim: Simulator, check_id: str) -> Planted:
    broker_id = sim.allocate_broker_id()
    path = f"/brokers/ids/{broker_id}"
    with sim.writer(sim.admin, check_id) as writer:
        writer.create(path, sim.encoder.broker(_new_broker(sim, broker_id)))
    return Planted(check_id, broker_id=broker_id, path=path)


@planter("broker_endpoint_conflict")
def _broker_endpoint_conflict(sim: Simulator, check_id: str) -> Planted:
    """Two new brokers advertise the same endpoints; the subject is the one that registered second."""
    first, second = sim.allocate_broker_id(), sim.allocate_broker_id()
    host = f"hadoop{first}"
    sim.register_broker(_new_broker(sim, first, host))
    sim.register_broker(_new_broker(sim, second, host))
    return Planted(check_id, broker_id=second, path=f"/brokers/ids/{second}")


@planter("malformed_znode")
def _malformed_znode(sim: Simulator, check_id: str) -> Planted:
    """A live broker whose registration is not JSON."""
    broker_id = sim.allocate_broker_id()
    sim.register_broker(_new_broker(sim, broker_id), data=f"hadoop{broker_id}:9092".encode())
    return Planted(check_id, path=f"/brokers/ids/{broker_id}")


@planter("topic_config_missing")
def _topic_config_missing(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    write_topic(sim, name, healthy_assignment(sim, 2), with_config=False)
    return Planted(check_id, topic=name, path=layout.topic_path(name))


@planter("deleted_topic_remnants")
def _deleted_topic_remnants(sim: Simulator, check_id: str) -> Planted:
    """Deletion stopped after the topic subtree: its config is left behind."""
    name = subject_name(check_id)
    path = f"/config/topics/{name}"
    with sim.writer(sim.admin, check_id) as writer:
        writer.create(path, sim.encoder.config({"retention.ms": "172800000"}))
    return Planted(check_id, topic=name, path=path)


# -- admin ---------------------------------------------------------------------------------
@planter("delete_topic_stuck")
def _delete_topic_stuck(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    write_topic(sim, name, healthy_assignment(sim, 2))
    return _delete_marker(sim, check_id, name)


@planter("delete_marker_orphaned")
def _delete_marker_orphaned(sim: Simulator, check_id: str) -> Planted:
    return _delete_marker(sim, check_id, subject_name(check_id))


def _delete_marker(sim: Simulator, check_id: str, name: str) -> Planted:
    path = f"/admin/delete_topics/{name}"
    with sim.writer(sim.admin, check_id) as writer:
        writer.create(path, sim.encoder.delete_marker())
    return Planted(check_id, topic=name, path=path)


def _add_reassignment(sim: Simulator, entry: tuple[str, int, tuple[int, ...]]) -> None:
    entries = sim.plant_notes.setdefault(REASSIGN_PATH, [])
    entries.append(entry)
    data = sim.encoder.reassignment(entries)
    with sim.writer(sim.admin, "reassignment") as writer:
        if len(entries) == 1:
            writer.create(REASSIGN_PATH, data)
        else:
            writer.set_data(REASSIGN_PATH, data)


@planter("reassignment_stuck")
def _reassignment_stuck(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    assignment = healthy_assignment(sim, 2)
    write_topic(sim, name, assignment)
    target = assignment[0][:-1] + (spare_broker(sim, assignment[0]),)
    _add_reassignment(sim, (name, 0, target))
    return Planted(check_id, topic=name, partition=0, path=REASSIGN_PATH)


@planter("reassignment_invalid")
def _reassignment_invalid(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    assignment = healthy_assignment(sim, 2)
    write_topic(sim, name, assignment)
    gone = sim.allocate_broker_id()
    _add_reassignment(sim, (name, 0, assignment[0][:-1] + (gone,)))
    return Planted(check_id, topic=name, partition=0, path=REASSIGN_PATH,
                   implied=("reassignment_stuck",))


@planter("preferred_election_stuck")
def _preferred_election_stuck(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    write_topic(sim, name, healthy_assignment(sim, 2))
    path = "/admin/preferred_replica_election"
    with sim.writer(sim.admin, check_id) as writer:
        writer.create(path, sim.encoder.preferred_election([(name, 0)]))
    return Planted(check_id, topic=name, partition=0, path=path)


@planter("notification_backlog")
def _notification_backlog(sim: Simulator, check_id: str, count: int = 120) -> Planted:
    """120 ISR change notifications nobody processes (config changes in 0.8, which has no ISR ones).

    They name the partitions of a healthy topic of their own; the subject is the queue, not the topic.
    """
    name = subject_name(check_id)
    partitions = 3
    write_topic(sim, name, healthy_assignment(sim, partitions))
    era = sim.model.era
    parent = "/isr_change_notification" if era.at_least(0, 9, 0) else "/config/changes"
    with sim.writer(sim.admin, check_id) as writer:
        for index in range(count):
            if parent == "/isr_change_notification":
                data = sim.encoder.isr_change([(name, index % partitions)])
                writer.create(f"{parent}/isr_change_", data, sequence=True)
            else:
                writer.create(f"{parent}/config_change_", sim.encoder.config_change("topics", name), sequence=True)
    return Planted(check_id, path=parent)


# -- old consumer groups -------------------------------------------------------------------
@dataclass
class GroupPlan:
    """A planted group on its own topic, before it is written: owner node name -> thread id."""

    group: Group
    topic: str
    owners: dict[str, str]
    offsets: dict[tuple[str, int], int | str]

    @property
    def base(self) -> str:
        return layout.group_path(self.group.group_id)

    def owner_path(self, node: str | int) -> str:
        return f"{self.base}/owners/{self.topic}/{node}"

    def offset_path(self, partition: int) -> str:
        return f"{self.base}/offsets/{self.topic}/{partition}"

    def write(self, sim: Simulator) -> None:
        sim.write_group(self.group, {self.topic: self.owners}, self.offsets)


def plan_group(sim: Simulator, check_id: str, partitions: int, consumers: int) -> GroupPlan:
    """A healthy planted group: ``consumers`` live consumers of one stream each on a new topic."""
    name = subject_name(check_id)
    write_topic(sim, name, healthy_assignment(sim, partitions))
    members = []
    for number in range(consumers):
        host = f"node{number + 1}"
        started = now_ms() - sim.rng.randint(60_000, 3_600_000)
        members.append(Consumer(consumer_id(name, host, started, sim.rng), host, {name: 1}, started))
    group = Group(name, members, [name])
    threads = [thread for member in members for thread in member.threads(name)]
    owners = {str(p): thread for p, thread in range_assign(list(range(partitions)), threads).items()}
    offsets: dict[tuple[str, int], int | str] = {(name, p): sim.rng.randint(1_000, 100_000) for p in range(partitions)}
    return GroupPlan(group, name, owners, offsets)


@planter("owner_not_registered")
def _owner_not_registered(sim: Simulator, check_id: str) -> Planted:
    """Partition 1 is owned by a consumer whose ids node is gone (its session still holds the owner)."""
    plan = plan_group(sim, check_id, partitions=2, consumers=1)
    del plan.owners["1"]
    plan.write(sim)
    ghost = consumer_id(plan.group.group_id, "node9", now_ms(), sim.rng)
    session = sim.new_session(f"consumer {ghost}")
    sim.consumer_sessions[ghost] = session
    with sim.writer(session, check_id) as writer:
        registration = sim.encoder.consumer_registration({plan.topic: 1}, now_ms())
        writer.create(f"{plan.base}/ids/{ghost}", registration, ephemeral=True)
        writer.create(plan.owner_path(1), f"{ghost}-0".encode(), ephemeral=True)
    with sim.writer(session, check_id) as writer:
        writer.delete(f"{plan.base}/ids/{ghost}")
    return Planted(check_id, topic=plan.topic, partition=1, group_id=plan.group.group_id,
                   path=plan.owner_path(1), implied=("owner_assignment_mismatch",))


@planter("partition_unowned")
def _partition_unowned(sim: Simulator, check_id: str) -> Planted:
    """The last partition has no owner node (path: where its owner node would be)."""
    plan = plan_group(sim, check_id, partitions=3, consumers=2)
    del plan.owners["2"]
    plan.write(sim)
    return Planted(check_id, topic=plan.topic, partition=2, group_id=plan.group.group_id, path=plan.owner_path(2))


@planter("partition_multiply_owned")
def _partition_multiply_owned(sim: Simulator, check_id: str) -> Planted:
    """Partition 0 is also claimed, by the other consumer, through a pykafka-style ``<broker>-0`` node.

    The path is that of the partition's own owner node ``…/0``, which sorts first of the two.
    """
    plan = plan_group(sim, check_id, partitions=2, consumers=2)
    leader = healthy_assignment(sim, 2)[0][0]
    plan.owners[f"{leader}-0"] = plan.owners["1"]
    plan.write(sim)
    return Planted(check_id, topic=plan.topic, partition=0, group_id=plan.group.group_id, path=plan.owner_path(0))


@planter("owner_assignment_mismatch")
def _owner_assignment_mismatch(sim: Simulator, check_id: str) -> Planted:
    """Range gives partitions 0,1 to the first thread and 2 to the second; partition 1 went to the second."""
    plan = plan_group(sim, check_id, partitions=3, consumers=2)
    plan.owners["1"] = plan.owners["2"]
    plan.write(sim)
    return Planted(check_id, topic=plan.topic, partition=1, group_id=plan.group.group_id, path=plan.owner_path(1))


def _inactive_group(sim: Simulator, check_id: str, partitions: int) -> GroupPlan:
    """A group with committed offsets and no live consumer (so no owner check applies)."""
    return plan_group(sim, check_id, partitions=partitions, consumers=0)


@planter("offset_invalid")
def _offset_invalid(sim: Simulator, check_id: str) -> Planted:
    plan = _inactive_group(sim, check_id, partitions=2)
    plan.offsets[(plan.topic, 0)] = "-5"
    plan.write(sim)
    return Planted(check_id, topic=plan.topic, partition=0, group_id=plan.group.group_id, path=plan.offset_path(0))


@planter("offset_for_unknown_partition")
def _offset_for_unknown_partition(sim: Simulator, check_id: str) -> Planted:
    plan = _inactive_group(sim, check_id, partitions=2)
    plan.offsets[(plan.topic, 2)] = 4_242
    plan.write(sim)
    return Planted(check_id, topic=plan.topic, partition=2, group_id=plan.group.group_id, path=plan.offset_path(2))


@planter("offset_regressed")
def _offset_regressed(sim: Simulator, check_id: str) -> Planted:
    for group in sim.model.groups:
        for (topic, partition), value in group.offsets.items():
            if value > 0:
                group.offsets[(topic, partition)] = value // 2
                path = f"{layout.group_path(group.group_id)}/offsets/{topic}/{partition}"
                sim.admin.set(path, sim.encoder.offset(value // 2))
                sim.counts.sets += 1
                return Planted(check_id, topic=topic, partition=partition, group_id=group.group_id, path=path)
    raise ValueError("the cluster has no committed offset above 0 to lower (no consumer groups?)")


# -- any znode -------------------------------------------------------------------------------
@planter("unreadable_znode")
def _unreadable_znode(sim: Simulator, check_id: str) -> Planted:
    """A SCRAM credential znode that only its creator may read, as Kafka writes it in secure mode.

    It is created with the simulator's own digest identity (``sim.auth``, or a fresh one), so an
    auditor with another identity, or none, sees its stat but may not read it.
    """
    path = f"/config/users/{subject_name(check_id)}"
    identity = sim.auth or ("digest", f"kafka-zk-audit-simulator:{secrets.token_hex(16)}")
    sim.admin.ensure_path("/config/users")
    creator = KazooClient(hosts=sim.hosts, auth_data=[identity], timeout=sim.timeout)
    creator.start(timeout=sim.timeout)
    try:
        credential = f"salt={secrets.token_hex(8)},stored_key={secrets.token_hex(16)},server_key=x,iterations=4096"
        creator.create(path, sim.encoder.config({"SCRAM-SHA-256": credential}), acl=CREATOR_ALL_ACL)
    finally:
        creator.stop()
        creator.close()
    return Planted(check_id, path=path)


def _with(state: PartitionState, **changes: object) -> PartitionState:
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


# The health checks of a ZK -> KRaft migration in flight need the cluster in a migration phase, not a plant on a
# healthy cluster: readiness_plants' scenario helpers (waiting, initial load, dual writes, reverted) make those.
MIGRATION_HEALTH_CHECKS = frozenset(check_id for check_id in CHECK_IDS if check_id.startswith("migration_"))
missing = set(CHECK_IDS) - set(PLANTERS) - MIGRATION_HEALTH_CHECKS
if missing:  # pragma: no cover - a catalogue change without a plant
    raise RuntimeError(f"no plant for: {', '.join(sorted(missing))}")
