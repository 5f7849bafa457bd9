"""The health of a ZooKeeper → KRaft migration in flight (KIP-866), from /migration and /controller.

What the tree shows (apache/kafka 3.4–3.9): a migration-enabled controller creates ``/migration`` with
every value −1; the active KRaft controller claims ``/controller`` (persistent, its Raft epoch in
``kraftControllerEpoch``); the initial load ends with ``kraft_metadata_offset`` > 0; from then on every
metadata batch the KRaft quorum commits, no-op records included (one every
``metadata.max.idle.interval.ms``, 500 ms by default), is written to ZooKeeper and ends with a setData on
``/migration`` (KRaftMigrationDriver.MetadataChangeEvent → setMigrationRecoveryState), so its mtime is the
last dual write. These checks return nothing on a cluster that is not migrating.

Every frame is keyed by ``snapshot_id``; the clock and the limits come from ``params`` (audit.params). Each check
is a declaration (``engine.check``): the checks on /migration, and the history checks on /migration beside its
baseline's (``migration_history``, derived once per audit), are evaluated together in one select per frame, with
the controller state of the snapshot (and of its baseline) joined once.

``migration_phase`` names the phase (``contract.readiness.PHASES``) for the readiness report (pure Python over the
two rows of a snapshot; ``migration_phases`` does it for each snapshot of collected keyed rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import check, kraft_controller, previous_snapshot, say
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.audit.params import Params
from kafka_zk_audit.contract.readiness import (
    DUAL_WRITE,
    INITIAL_LOAD,
    NOT_STARTED,
    REVERTED,
    UNKNOWN_PHASE,
    WAITING_FOR_BROKERS,
)
from kafka_zk_audit.contract.schemas import KEY

MIGRATION_PATH = "/migration"


def _duration(ms: Column) -> Column:
    """Milliseconds as e.g. '2h 05m 10s' for detail sentences."""
    seconds = (ms / 1000).cast("long")
    return F.format_string("%dh %02dm %02ds", (seconds / 3600).cast("long"), ((seconds % 3600) / 60).cast("long"),
                           seconds % 60)


def _instant(ms: Column) -> Column:
    return F.date_format(F.timestamp_millis(ms), "yyyy-MM-dd HH:mm:ss 'UTC'")


@fact(defaults={"kraft_holds_controller": "false", "zk_holds_controller": "false"})
def migration_controller_state(controller: DataFrame) -> DataFrame:
    """(snapshot_id, kraft_holds_controller, zk_holds_controller, controller_id): whether a KRaft controller holds
    /controller, whether a ZooKeeper-mode one does, and its id (False, False and null for a snapshot without
    /controller)."""
    return controller.groupBy(KEY).agg(
        F.max(kraft_controller()).alias("kraft_holds_controller"),
        F.max(~kraft_controller()).alias("zk_holds_controller"),
        F.max("broker_id").alias("controller_id"),
    )


@fact(defaults={"previous_kraft_holds_controller": "false"})
def migration_previous_controller_state(controller: DataFrame, previous_controller: DataFrame | None) -> DataFrame:
    """(snapshot_id, previous_kraft_holds_controller): whether a KRaft controller held /controller in the baseline
    (False without /controller there, or without a baseline /controller table)."""
    before = controller.where(F.lit(False)) if previous_controller is None else previous_controller
    return before.groupBy(KEY).agg(F.max(kraft_controller()).alias("previous_kraft_holds_controller"))


def _age_ms(params: Params) -> Column:
    """/migration's age at the snapshot's start."""
    return params.column("now_ms") - F.col("mtime")


@check("migration", facts=(migration_controller_state,))
def migration_dual_write_stalled(params: Params) -> Finds:
    """During dual writes (offset > 0, a KRaft controller on /controller) /migration changes at least every
    ``dual_write_stale_after_ms``: every committed KRaft batch, no-op records included, ends with a write to it."""
    where = ((F.col("kraft_metadata_offset") > 0) & F.col("kraft_holds_controller") & F.col("mtime").isNotNull()
             & (_age_ms(params) > params.column("dual_write_stale_after_ms")))
    return Finds(
        where=where, path="path", broker_id="kraft_controller_id",
        detail=say("dual writes stopped: /migration (offset %s) last changed at %s, %s before the snapshot, while "
                   "KRaft controller %s holds /controller", "kraft_metadata_offset", _instant(F.col("mtime")),
                   _duration(_age_ms(params)), "kraft_controller_id"),
    )


@check("migration", facts=(migration_controller_state,))
def migration_stuck(params: Params) -> Finds:
    """A migration that has not finished its initial load (offset −1) moves on within ``load_stuck_after_ms``:
    waiting for the brokers (a ZooKeeper-mode controller still on /controller) or loading (a KRaft one)."""
    where = ((F.coalesce(F.col("kraft_metadata_offset"), F.lit(-1)) < 0) & F.col("mtime").isNotNull()
             & (_age_ms(params) > params.column("load_stuck_after_ms")))
    phase = F.when(F.col("kraft_holds_controller"), F.lit("the initial metadata load")).otherwise(
        F.lit("waiting for every ZooKeeper broker to register with the migration enabled"))
    return Finds(
        where=where, path="path",
        detail=say("the migration has been in %s since %s (%s before the snapshot); /migration offset is still -1",
                   phase, _instant(F.col("mtime")), _duration(_age_ms(params))),
    )


@view
def migration_history(migration: DataFrame, previous_migration: DataFrame | None) -> DataFrame | None:
    """This snapshot's /migration beside its baseline's (previous_offset, previous_kraft_epoch, previous_ctime,
    previous_snapshot), when /migration is the same znode (same ctime: a new attempt recreates it); None without
    a baseline (the previous tables are keyed by the snapshot they are the baseline of)."""
    if previous_migration is None:
        return None
    before = previous_migration.select(
        KEY,
        F.col("kraft_metadata_offset").alias("previous_offset"),
        F.col("kraft_controller_epoch").alias("previous_kraft_epoch"),
        F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_migration).alias("previous_snapshot"),
    )
    return migration.join(before, KEY).where(F.col("ctime") == F.col("previous_ctime"))


@check(migration_history, facts=(migration_controller_state, migration_previous_controller_state))
def migration_crash_loop() -> Finds:
    """The initial load restarts under a new KRaft leader without completing: a KRaft controller held
    /controller in the previous snapshot and holds it now, the offset is still −1, and the KRaft controller
    epoch in /migration rose (each new leader claims /controller and starts the load over; the first claim,
    after waiting for the brokers, is no restart)."""
    where = (F.col("kraft_holds_controller") & F.col("previous_kraft_holds_controller")
             & (F.coalesce(F.col("kraft_metadata_offset"), F.lit(-1)) < 0)
             & (F.coalesce(F.col("previous_offset"), F.lit(-1)) < 0)
             & (F.col("kraft_controller_epoch") > F.col("previous_kraft_epoch")))
    return Finds(
        where=where, path="path", broker_id="kraft_controller_id",
        detail=say("the initial load restarted without completing: KRaft controller epoch %s -> %s since the "
                   "previous snapshot%s, /migration offset still -1", "previous_kraft_epoch",
                   "kraft_controller_epoch", "previous_snapshot"),
    )


@check(migration_history, facts=(migration_controller_state, migration_previous_controller_state))
def migration_rolled_back() -> Finds:
    """A ZooKeeper-mode controller took /controller back while /migration shows completed dual writes
    (offset > 0), after the previous snapshot saw a KRaft controller there: a rollback, or two controllers
    writing (split brain)."""
    where = (F.col("zk_holds_controller") & (F.col("kraft_metadata_offset") > 0)
             & F.col("previous_kraft_holds_controller"))
    return Finds(
        where=where, path=F.lit("/controller"), broker_id="controller_id",
        detail=say("ZooKeeper-mode broker %s holds /controller while /migration records dual writes up to offset %s; "
                   "the previous snapshot%s had a KRaft controller there", "controller_id",
                   "kraft_metadata_offset", "previous_snapshot"),
    )


@check(migration_history)
def migration_offset_regressed() -> Finds:
    """The KRaft metadata offset in /migration only grows while the znode lives (KRaft offsets never go back)."""
    return Finds(
        where=(F.col("previous_offset") > 0) & (F.col("kraft_metadata_offset") < F.col("previous_offset")),
        path="path",
        detail=say("/migration offset %s < %s in the previous snapshot%s", "kraft_metadata_offset",
                   "previous_offset", "previous_snapshot"),
    )


def migration_phase(migration: Mapping[str, Any] | None, controller: Mapping[str, Any] | None) -> dict[str, str]:
    """The phase of a ZK → KRaft migration from the /migration row and the /controller row (either may be None).

    ``not_started`` (no /migration), ``waiting_for_brokers`` (offset −1, a ZooKeeper-mode controller),
    ``initial_load`` (offset −1, a KRaft controller), ``dual_write`` (offset > 0, a KRaft controller),
    ``reverted`` (offset > 0, a ZooKeeper-mode controller: a reverted attempt left /migration, or a rollback),
    ``unknown`` (anything else).
    """
    if migration is None:
        return {"phase": NOT_STARTED, "detail": "no /migration znode"}
    offset = migration.get("kraft_metadata_offset")
    offset = -1 if offset is None else int(offset)
    kraft = bool(controller) and controller.get("is_ephemeral") is False and (
        controller.get("kraft_controller_epoch") is not None and controller["kraft_controller_epoch"] >= 0)
    who = "no controller" if not controller else (
        f"KRaft controller {controller.get('broker_id')} (epoch {controller.get('kraft_controller_epoch')})" if kraft
        else f"ZooKeeper-mode controller {controller.get('broker_id')}")
    if offset < 0 and controller and not kraft:
        return {"phase": WAITING_FOR_BROKERS, "detail": f"/migration offset -1; {who} holds /controller"}
    if offset < 0 and kraft:
        return {"phase": INITIAL_LOAD, "detail": f"/migration offset -1; {who} holds /controller"}
    if offset > 0 and kraft:
        return {"phase": DUAL_WRITE, "detail": f"/migration offset {offset}; {who} holds /controller"}
    if offset > 0 and controller:
        return {"phase": REVERTED, "detail": f"/migration offset {offset}; {who} holds /controller"}
    return {"phase": UNKNOWN_PHASE, "detail": f"/migration offset {offset}; {who}"}


def migration_phases(
    snapshot_ids: Iterable[str], migration: Iterable[Mapping[str, Any]], controller: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, str]]:
    """``migration_phase`` of each snapshot, from the collected keyed /migration and /controller rows (the
    first row of each snapshot, as ``migration_phase`` takes one; none when it has no row)."""
    def first(rows: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        out: dict[str, Mapping[str, Any]] = {}
        for row in rows:
            out.setdefault(row[KEY], row)
        return out

    migrations, controllers = first(migration), first(controller)
    return {snapshot_id: migration_phase(migrations.get(snapshot_id), controllers.get(snapshot_id))
            for snapshot_id in snapshot_ids}
