"""What every plant stands on: the ``Planted`` record and registries of planters (from ``registry``), and the healthy
topics, partition states and broker choices that a plant then changes one thing of (catalogue and readiness plants
alike)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.encodings import PartitionState
from kafka_zk_audit_testing.simulator.model import random_uuid
from kafka_zk_audit_testing.simulator.registry import Planted as Planted
from kafka_zk_audit_testing.simulator.registry import Planter as Planter
from kafka_zk_audit_testing.simulator.registry import Planters as Planters

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

REASSIGN_PATH = "/admin/reassign_partitions"


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


def with_changes(state: PartitionState, **changes: object) -> PartitionState:
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


def add_reassignment(sim: Simulator, entry: tuple[str, int, tuple[int, ...]]) -> None:
    entries = sim.plant_notes.setdefault(REASSIGN_PATH, [])
    entries.append(entry)
    data = sim.encoder.reassignment(entries)
    with sim.writer(sim.admin, "reassignment") as writer:
        if len(entries) == 1:
            writer.create(REASSIGN_PATH, data)
        else:
            writer.set_data(REASSIGN_PATH, data)
