"""The catalogue's plants on the cluster's own znodes: /controller and /controller_epoch, broker registrations,
topic configs, the /admin requests and the notification queues, and a znode the auditor may not read."""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING

from kazoo.client import KazooClient
from kazoo.security import CREATOR_ALL_ACL

from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.model import make_broker
from kafka_zk_audit_testing.simulator.partition_plants import EPOCH_AHEAD
from kafka_zk_audit_testing.simulator.planting import (
    REASSIGN_PATH,
    Planted,
    add_reassignment,
    healthy_assignment,
    live_brokers,
    now_ms,
    spare_broker,
    subject_name,
    write_topic,
)
from kafka_zk_audit_testing.simulator.registry import PLANTERS

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

planter = PLANTERS.register  # the /controller plants register with holds_controller=True

log = logging.getLogger(__name__)


# -- controller ----------------------------------------------------------------------------
def _replace_controller(sim: Simulator, check_id: str) -> None:
    """Remove /controller; a /controller plant made earlier is replaced (its problem is gone)."""
    for earlier in PLANTERS.controller_holders & set(sim.planted):
        log.warning("%s replaces the earlier %s plant (both own /controller)", check_id, earlier)
        del sim.planted[earlier]
    if sim.admin.exists("/controller"):
        sim.admin.delete("/controller")
        sim.counts.deletes += 1


@planter("controller_missing", holds_controller=True)
def _controller_missing(sim: Simulator, check_id: str) -> Planted:
    _replace_controller(sim, check_id)
    return Planted(check_id, path="/controller")


@planter("controller_not_alive", holds_controller=True)
def _controller_not_alive(sim: Simulator, check_id: str) -> Planted:
    gone = sim.allocate_broker_id()
    _replace_controller(sim, check_id)
    session = sim.new_session(f"controller {gone}")
    sim.other_sessions.append(session)
    session.create("/controller", sim.encoder.controller(gone, now_ms()), ephemeral=True)
    sim.counts.creates += 1
    return Planted(check_id, broker_id=gone, path="/controller")


@planter("controller_session_mismatch", holds_controller=True)
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


@planter("reassignment_stuck")
def _reassignment_stuck(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    assignment = healthy_assignment(sim, 2)
    write_topic(sim, name, assignment)
    target = assignment[0][:-1] + (spare_broker(sim, assignment[0]),)
    add_reassignment(sim, (name, 0, target))
    return Planted(check_id, topic=name, partition=0, path=REASSIGN_PATH)


@planter("reassignment_invalid")
def _reassignment_invalid(sim: Simulator, check_id: str) -> Planted:
    name = subject_name(check_id)
    assignment = healthy_assignment(sim, 2)
    write_topic(sim, name, assignment)
    gone = sim.allocate_broker_id()
    add_reassignment(sim, (name, 0, assignment[0][:-1] + (gone,)))
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
