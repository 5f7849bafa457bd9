"""The catalogue's partition plants: a topic of its own whose assignment or partition states break one rule, and
the history plant that lowers a leader epoch."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.encodings import PartitionState
from kafka_zk_audit_testing.simulator.planting import (
    Planted,
    healthy_assignment,
    healthy_state,
    spare_broker,
    subject_name,
    with_changes,
    write_topic,
)
from kafka_zk_audit_testing.simulator.registry import PLANTERS, on_advance
from kafka_zk_audit_testing.simulator.writer import BatchWriter

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

planter = PLANTERS.register
EPOCH_AHEAD = "partition_epoch_ahead_of_controller"


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


@planter("leader_not_in_isr")
def _leader_not_in_isr(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = with_changes(states[0], isr=assignment[0][1:])

    return topic_planted(sim, check_id, 2, change, implied=("under_replicated",))


@planter("isr_not_subset_of_replicas")
def _isr_not_subset(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = with_changes(states[0], isr=assignment[0] + (spare_broker(sim, assignment[0]),))

    return topic_planted(sim, check_id, 2, change)


@planter("leader_not_alive")
def _leader_not_alive(sim: Simulator, check_id: str) -> Planted:
    gone = sim.allocate_broker_id()

    def change(assignment: dict, states: dict) -> None:
        assignment[0] = (gone,) + assignment[0][1:]
        states[0] = with_changes(states[0], leader=gone, isr=assignment[0])

    return topic_planted(sim, check_id, 2, change, implied=("replica_on_unknown_broker",))


@planter("offline_partition")
def _offline_partition(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = with_changes(states[0], leader=-1, leader_epoch=1)

    return topic_planted(sim, check_id, 2, change)


@planter("under_replicated")
def _under_replicated(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = with_changes(states[0], isr=assignment[0][:-1])

    return topic_planted(sim, check_id, 2, change)


@planter("preferred_leader_not_leader")
def _preferred_leader(sim: Simulator, check_id: str) -> Planted:
    def change(assignment: dict, states: dict) -> None:
        states[0] = with_changes(states[0], leader=assignment[0][1], leader_epoch=1)

    return topic_planted(sim, check_id, 2, change)


@planter("replica_on_unknown_broker")
def _replica_on_unknown_broker(sim: Simulator, check_id: str) -> Planted:
    gone = sim.allocate_broker_id()

    def change(assignment: dict, states: dict) -> None:
        # The broker has just gone: its replica is still in the isr, the leader is alive.
        assignment[0] = assignment[0][:-1] + (gone,)
        states[0] = with_changes(states[0], isr=assignment[0])

    # An assignment problem: it shows in the topic znode.
    return topic_planted(sim, check_id, 2, change, path=layout.topic_path(subject_name(check_id)))


@planter("duplicate_replica")
def _duplicate_replica(sim: Simulator, check_id: str) -> Planted:
    """One partition only, so that no replication factor can look inconsistent."""

    def change(assignment: dict, states: dict) -> None:
        assignment[0] = (assignment[0][0],) + assignment[0][:-1]
        states[0] = with_changes(states[0], isr=assignment[0])  # the controller keeps the duplicate in the isr

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
        states[0] = with_changes(states[0], controller_epoch=sim.controller_epoch + 1)

    planted = topic_planted(sim, check_id, 2, change)
    sim.plant_notes[EPOCH_AHEAD] = (planted.path, healthy_assignment(sim, 2)[0])
    return planted


@on_advance
def keep_epoch_ahead(sim: Simulator, writer: BatchWriter) -> None:
    """After /controller_epoch moved on, keep the planted state one epoch ahead of it."""
    if EPOCH_AHEAD not in sim.planted:
        return
    path, replicas = sim.plant_notes[EPOCH_AHEAD]
    state = with_changes(healthy_state(sim, replicas), controller_epoch=sim.controller_epoch + 1)
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
