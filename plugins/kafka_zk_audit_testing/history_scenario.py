"""A run of Kafka-like changes between two moments, written to a real ZooKeeper, with the zxids that are its oracle.

``run_scenario(hosts_with_chroot)`` writes a small healthy cluster with the simulator, then makes the changes
Kafka's controller, brokers and old consumers make (kazoo writes, one at a time), and returns what a history of
those logs must find: every expected interval with the start and end zxid ZooKeeper itself reported for the
writes (``ZnodeStat.mzxid``/``czxid`` of each write, or the parent's ``pzxid`` right after a delete). Broken
states that must be listed last ``hold_s`` (above a 1 s floor); the short ones are written back to back.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator, layout


@dataclass
class Expected:
    """One interval a history must list: check, subject and the zxids that bound it (end None: still open)."""

    check_id: str
    start_zxid: int
    end_zxid: int | None
    topic: str | None = None
    partition: int | None = None
    group_id: str | None = None


@dataclass
class Scenario:
    """What was written: the window's first zxid, the listed intervals, the short ones per check, the subjects
    whose changes were healthy, and the base zxid's cluster shape."""

    first_zxid: int
    last_zxid: int = 0
    expected: list[Expected] = field(default_factory=list)
    short: dict[str, int] = field(default_factory=dict)
    healthy_partitions: list[tuple[str, int]] = field(default_factory=list)
    controller_ids: list[int] = field(default_factory=list)


def _pzxid(client: KazooClient, parent: str) -> int:
    return client.exists(parent).pzxid


def _set_state(client: KazooClient, topic: str, partition: int, **changes: object) -> int:
    path = layout.state_path(topic, partition)
    data, _ = client.get(path)
    state = json.loads(data)
    state.update(changes)
    return client.set(path, json.dumps(state, separators=(",", ":")).encode()).mzxid


def _failover(sim: Simulator, successor: int, hold_s: float) -> tuple[int, int]:
    """The controller resigns (deletes /controller), ``successor`` wins after ``hold_s``: (delete, create) zxids."""
    sim.broker_sessions[sim.controller_id].delete("/controller")
    deleted = _pzxid(sim.admin, "/")
    time.sleep(hold_s)
    sim.elect_controller(successor, int(time.time() * 1000))
    return deleted, sim.admin.exists("/controller").czxid


def run_scenario(hosts: str, hold_s: float = 1.3) -> tuple[Simulator, Scenario]:
    """Write the cluster, then the changes; returns the simulator (sessions open: close it) and the oracle."""
    sim = Simulator(hosts)
    sim.write(ClusterSpec(era="3.x", brokers=3, racks=1, topics=2, partitions=2, replication_factor=3, groups=1,
                          consumers_per_group=1, threads_per_consumer=1, topics_per_group=1, topic_configs=False,
                          seed=3))
    admin = sim.admin
    first = admin.create("/history-marker", b"").split("/")[-1] and admin.exists("/history-marker").czxid + 1
    scenario = Scenario(first_zxid=first)
    topics = sorted(sim.model.topics)
    t0, t1 = topics[0], topics[1]
    replicas = sim.model.topics[t0].replicas[0]

    # A healthy leader change: the new leader is in the isr, the isr stays full.
    _set_state(admin, t0, 1, leader=sim.model.topics[t0].replicas[1][1], leader_epoch=5)
    scenario.healthy_partitions.append((t0, 1))

    # The isr shrinks to two of three with the leader outside it, then recovers.
    start = _set_state(admin, t0, 0, leader=replicas[0], isr=sorted(replicas[1:]), leader_epoch=7)
    time.sleep(hold_s)
    end = _set_state(admin, t0, 0, isr=sorted(replicas), leader_epoch=8)
    scenario.expected += [Expected("interval_leader_not_in_isr", start, end, t0, 0),
                          Expected("interval_under_replicated", start, end, t0, 0)]

    # No leader for a while.
    start = _set_state(admin, t1, 0, leader=-1)
    time.sleep(hold_s)
    end = _set_state(admin, t1, 0, leader=sim.model.topics[t1].replicas[0][0])
    scenario.expected.append(Expected("interval_offline_partition", start, end, t1, 0))

    # A slow controller failover (listed), then a quick one (counted, not listed).
    others = [b for b in sim.model.broker_ids if b != sim.controller_id]
    start, end = _failover(sim, others[0], hold_s)
    scenario.expected.append(Expected("interval_controller_missing", start, end))
    _failover(sim, others[1], 0.0)
    scenario.short["interval_controller_missing"] = 1
    scenario.controller_ids = [others[0], others[1]]

    # An old consumer's offset goes back, then forward again past where it was.
    group = sim.model.groups[0]
    base = layout.group_path(group.group_id)
    (topic, partition), value = sorted(group.offsets.items())[0]
    offset_path = f"{base}/offsets/{topic}/{partition}"
    start = admin.set(offset_path, str(max(0, value - 1000)).encode()).mzxid
    time.sleep(hold_s)
    end = admin.set(offset_path, str(value + 10).encode()).mzxid
    scenario.expected.append(Expected("interval_offset_regressed", start, end, topic, partition, group.group_id))

    # An owner znode deleted and recreated by its consumer (a rebalance that takes a while).
    consumer = group.consumers[0]
    session = sim.consumer_sessions[consumer.consumer_id]
    owners_dir = f"{base}/owners/{topic}"
    owner_path = f"{owners_dir}/{partition}"
    thread, _ = session.get(owner_path)
    session.delete(owner_path)
    start = _pzxid(session, owners_dir)
    time.sleep(hold_s)
    session.create(owner_path, thread, ephemeral=True)
    end = session.exists(owner_path).czxid
    scenario.expected.append(Expected("interval_partition_unowned", start, end, topic, partition, group.group_id))

    scenario.last_zxid = admin.create("/history-end", b"") and admin.exists("/history-end").czxid
    return sim, scenario
