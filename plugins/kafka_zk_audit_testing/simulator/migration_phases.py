"""Move a ``3.x-migration`` cluster through the phases of a ZooKeeper → KRaft migration: ``waiting_for_brokers``,
``initial_load``, ``advance_dual_write``, ``reverted_migration`` write /controller, /controller_epoch and /migration
as the KRaft controller and the ZooKeeper-mode controllers do during a KIP-866 migration (kafka-zk-layout.md §2.1,
§2.6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_zk_audit_testing.simulator.cluster import KRAFT_CONTROLLER_ID
from kafka_zk_audit_testing.simulator.planting import Planted, now_ms
from kafka_zk_audit_testing.simulator.readiness_writes import read_json

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator


def _require_migration_era(sim: Simulator) -> None:
    if sim.model is None:
        raise RuntimeError("write() a cluster first")
    if sim.model.era.controller_version < 2:
        raise ValueError("a ZK→KRaft migration needs Kafka 3.4+ (eras 3.x, 3.x-migration, 3.9)")


def _migration_state(sim: Simulator) -> dict[str, int]:
    if sim.admin.exists("/migration"):
        return read_json(sim, "/migration")
    return {"version": 0, "kraft_controller_id": -1, "kraft_controller_epoch": -1, "kraft_metadata_offset": -1,
            "kraft_metadata_epoch": -1}


def _write_migration(sim: Simulator, state: dict[str, int]) -> None:
    """/migration as ``MigrationZNode.encode`` writes it; an update is conditional on its version."""
    data = sim.encoder.migration(state["kraft_controller_id"], state["kraft_controller_epoch"],
                                 state["kraft_metadata_offset"], state["kraft_metadata_epoch"])
    stat = sim.admin.exists("/migration")
    if stat is None:
        sim.admin.create("/migration", data)
        sim.counts.creates += 1
    else:
        sim.admin.set("/migration", data, version=stat.version)
        sim.counts.sets += 1


def _drop_controller(sim: Simulator) -> None:
    """Remove /controller, through the session that owns it when it is ephemeral."""
    stat = sim.admin.exists("/controller")
    if stat is None:
        return
    owner = next((s for s in sim.broker_sessions.values() if s.client_id and s.client_id[0] == stat.ephemeralOwner),
                 None) if stat.ephemeralOwner else None
    (owner or sim.admin).delete("/controller")
    sim.counts.deletes += 1


def _zk_controller_elected(sim: Simulator) -> None:
    """A ZooKeeper-mode broker wins the election: ephemeral /controller v2 with kraftControllerEpoch -1."""
    _drop_controller(sim)
    broker = sim.model.broker_ids[0] if sim.controller_id not in sim.model.broker_ids else sim.controller_id
    sim.elect_controller(broker, now_ms())


def _kraft_controller_claims(sim: Simulator, kraft_epoch: int) -> None:
    """``tryRegisterKRaftControllerAsActiveController``: persistent /controller with the KRaft leader's id and
    epoch, /controller_epoch + 1."""
    _drop_controller(sim)
    sim.controller_epoch += 1
    sim.kraft_controller_epoch = kraft_epoch
    with sim.writer(sim.admin, "kraft controller") as writer:
        writer.create("/controller", sim.encoder.controller(KRAFT_CONTROLLER_ID, now_ms(), kraft_epoch))
        writer.set_data("/controller_epoch", sim.encoder.controller_epoch(sim.controller_epoch))
    sim.controller_id = KRAFT_CONTROLLER_ID


def waiting_for_brokers(sim: Simulator) -> None:
    """The KRaft quorum created /migration (all -1) and waits for every ZooKeeper broker to register with
    it; a ZooKeeper-mode controller still holds /controller."""
    _require_migration_era(sim)
    _zk_controller_elected(sim)
    _write_migration(sim, {"version": 0, "kraft_controller_id": -1, "kraft_controller_epoch": -1,
                           "kraft_metadata_offset": -1, "kraft_metadata_epoch": -1})


def initial_load(sim: Simulator, kraft_epoch: int) -> None:
    """The KRaft leader of ``kraft_epoch`` claimed /controller and copies the metadata (offset still -1)."""
    _require_migration_era(sim)
    if kraft_epoch < 1:
        raise ValueError("a KRaft leader epoch is at least 1")
    _kraft_controller_claims(sim, kraft_epoch)
    state = _migration_state(sim)
    state.update(kraft_controller_id=KRAFT_CONTROLLER_ID, kraft_controller_epoch=kraft_epoch,
                 kraft_metadata_offset=-1, kraft_metadata_epoch=-1)
    _write_migration(sim, state)


def advance_dual_write(sim: Simulator, offset: int) -> None:
    """A dual write up to KRaft offset ``offset``: one multi-op checking /controller_epoch's version and
    setting /migration conditionally (a KRaft controller must hold /controller)."""
    _require_migration_era(sim)
    controller = read_json(sim, "/controller") if sim.admin.exists("/controller") else {}
    if controller.get("kraftControllerEpoch", -1) < 0:
        raise ValueError("dual writes need a KRaft controller on /controller (initial_load first)")
    state = _migration_state(sim)
    state.update(kraft_controller_id=controller["brokerid"], kraft_controller_epoch=controller["kraftControllerEpoch"],
                 kraft_metadata_offset=offset, kraft_metadata_epoch=controller["kraftControllerEpoch"])
    epoch_version = sim.admin.exists("/controller_epoch").version
    migration_version = sim.admin.exists("/migration").version
    transaction = sim.admin.transaction()
    transaction.check("/controller_epoch", epoch_version)
    transaction.set_data("/migration", sim.encoder.migration(
        state["kraft_controller_id"], state["kraft_controller_epoch"], offset, state["kraft_metadata_epoch"],
    ), migration_version)
    results = transaction.commit()
    failures = [result for result in results if isinstance(result, Exception)]
    if failures:
        raise RuntimeError(f"dual write failed: {failures[0]!r}")
    sim.counts.sets += 1


def reverted_migration(sim: Simulator) -> Planted:
    """The operator reverted after dual writes: the KRaft controllers are gone, a ZooKeeper-mode broker took
    /controller back, and /migration still holds the last offset (R01, ``kraft_migration_leftover``)."""
    _require_migration_era(sim)
    state = _migration_state(sim)
    if state.get("kraft_metadata_offset", -1) <= 0:
        raise ValueError("revert after dual writes: /migration has no offset > 0 yet (advance_dual_write first)")
    _zk_controller_elected(sim)
    return Planted("kraft_migration_leftover", path="/migration")
