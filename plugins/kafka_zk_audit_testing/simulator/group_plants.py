"""The catalogue's plants on old consumer groups: a group of its own on a topic of its own whose owners or offsets
break one rule, and the history plant that lowers a committed offset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_zk_audit_testing.range_assignment import range_assign
from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.model import Consumer, Group, consumer_id
from kafka_zk_audit_testing.simulator.planting import (
    Planted,
    healthy_assignment,
    now_ms,
    subject_name,
    write_topic,
)
from kafka_zk_audit_testing.simulator.registry import PLANTERS

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

planter = PLANTERS.register


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

