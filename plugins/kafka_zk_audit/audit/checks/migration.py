"""The health of a ZooKeeper → KRaft migration in flight (KIP-866), from /migration and /controller.

What the tree shows (apache/kafka 3.4–3.9): a migration-enabled controller creates ``/migration`` with
every value −1; the active KRaft controller claims ``/controller`` (persistent, its Raft epoch in
``kraftControllerEpoch``); the initial load ends with ``kraft_metadata_offset`` > 0; from then on every
metadata batch the KRaft quorum commits, no-op records included (one every
``metadata.max.idle.interval.ms``, 500 ms by default), is written to ZooKeeper and ends with a setData on
``/migration`` (KRaftMigrationDriver.MetadataChangeEvent → setMigrationRecoveryState), so its mtime is the
last dual write. These checks return nothing on a cluster that is not migrating.

Every frame is keyed by ``snapshot_id``; the clock and the limits come from ``params`` (audit.params).

``migration_phase`` names the phase (``contract.readiness.PHASES``) for the readiness report (pure Python over the
two rows of a snapshot; ``migration_phases`` does it for each snapshot of collected keyed rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import empty_output, kraft_controller, previous_snapshot, say, to_output
from kafka_zk_audit.audit.params import Params, with_params
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


def _with_controller_state(rows: DataFrame, controller: DataFrame, prefix: str = "") -> DataFrame:
    """The rows with their snapshot's controller state: whether a KRaft controller holds /controller
    (``kraft_holds_controller``), whether a ZooKeeper-mode one does (``zk_holds_controller``) and its id
    (``controller_id``); False, False and null for a snapshot without /controller. ``prefix`` goes before
    each name."""
    state = controller.groupBy(KEY).agg(
        F.max(kraft_controller()).alias("kraft_holds_controller"),
        F.max(~kraft_controller()).alias("zk_holds_controller"),
        F.max("broker_id").alias("controller_id"),
    )
    return rows.join(state, KEY, "left").select(
        *[F.col(name) for name in rows.columns],
        F.coalesce(F.col("kraft_holds_controller"), F.lit(False)).alias(f"{prefix}kraft_holds_controller"),
        F.coalesce(F.col("zk_holds_controller"), F.lit(False)).alias(f"{prefix}zk_holds_controller"),
        F.col("controller_id").alias(f"{prefix}controller_id"),
    )


def _age_ms() -> Column:
    """/migration's age at the snapshot's start (rows with the ``now_ms`` parameter)."""
    return F.col("now_ms") - F.col("mtime")


def migration_dual_write_stalled(migration: DataFrame, controller: DataFrame, params: Params) -> DataFrame:
    """During dual writes (offset > 0, a KRaft controller on /controller) /migration changes at least every
    ``dual_write_stale_after_ms``: every committed KRaft batch, no-op records included, ends with a write to it."""
    rows = (
        with_params(_with_controller_state(migration, controller), params, "now_ms", "dual_write_stale_after_ms")
        .where((F.col("kraft_metadata_offset") > 0) & F.col("kraft_holds_controller"))
        .where(F.col("mtime").isNotNull() & (_age_ms() > F.col("dual_write_stale_after_ms")))
    )
    return to_output(
        rows, "migration_dual_write_stalled", path="path", broker_id="kraft_controller_id",
        detail=say("dual writes stopped: /migration (offset %s) last changed at %s, %s before the snapshot, while "
                   "KRaft controller %s holds /controller", "kraft_metadata_offset", _instant(F.col("mtime")),
                   _duration(_age_ms()), "kraft_controller_id"),
    )


def migration_stuck(migration: DataFrame, controller: DataFrame, params: Params) -> DataFrame:
    """A migration that has not finished its initial load (offset −1) moves on within ``load_stuck_after_ms``:
    waiting for the brokers (a ZooKeeper-mode controller still on /controller) or loading (a KRaft one)."""
    rows = (
        with_params(_with_controller_state(migration, controller), params, "now_ms", "load_stuck_after_ms")
        .where(F.coalesce(F.col("kraft_metadata_offset"), F.lit(-1)) < 0)
        .where(F.col("mtime").isNotNull() & (_age_ms() > F.col("load_stuck_after_ms")))
        .withColumn("phase", F.when(F.col("kraft_holds_controller"), F.lit("the initial metadata load"))
                    .otherwise(F.lit("waiting for every ZooKeeper broker to register with the migration enabled")))
    )
    return to_output(
        rows, "migration_stuck", path="path",
        detail=say("the migration has been in %s since %s (%s before the snapshot); /migration offset is still -1",
                   "phase", _instant(F.col("mtime")), _duration(_age_ms())),
    )


def _with_previous(migration: DataFrame, controller: DataFrame, previous_migration: DataFrame,
                   previous_controller: DataFrame) -> DataFrame:
    """This snapshot's /migration and controller state beside its baseline's (the previous tables are keyed by
    the snapshot they are the baseline of), when /migration is the same znode (same ctime: a new attempt
    recreates it)."""
    before = _with_controller_state(previous_migration.select(
        KEY,
        F.col("kraft_metadata_offset").alias("previous_offset"),
        F.col("kraft_controller_epoch").alias("previous_kraft_epoch"),
        F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_migration).alias("previous_snapshot"),
    ), previous_controller, prefix="previous_").select(
        KEY, "previous_offset", "previous_kraft_epoch", "previous_ctime", "previous_snapshot",
        "previous_kraft_holds_controller")
    return (
        _with_controller_state(migration, controller)
        .join(before, KEY)
        .where(F.col("ctime") == F.col("previous_ctime"))
    )


def migration_crash_loop(migration: DataFrame, controller: DataFrame, previous_migration: DataFrame | None,
                         previous_controller: DataFrame | None) -> DataFrame:
    """The initial load restarts under a new KRaft leader without completing: a KRaft controller held
    /controller in the previous snapshot and holds it now, the offset is still −1, and the KRaft controller
    epoch in /migration rose (each new leader claims /controller and starts the load over; the first claim,
    after waiting for the brokers, is no restart)."""
    if previous_migration is None or previous_controller is None:
        return empty_output(migration, "migration_crash_loop")
    rows = _with_previous(migration, controller, previous_migration, previous_controller).where(
        F.col("kraft_holds_controller") & F.col("previous_kraft_holds_controller")
        & (F.coalesce(F.col("kraft_metadata_offset"), F.lit(-1)) < 0)
        & (F.coalesce(F.col("previous_offset"), F.lit(-1)) < 0)
        & (F.col("kraft_controller_epoch") > F.col("previous_kraft_epoch"))
    )
    return to_output(
        rows, "migration_crash_loop", path="path", broker_id="kraft_controller_id",
        detail=say("the initial load restarted without completing: KRaft controller epoch %s -> %s since the "
                   "previous snapshot%s, /migration offset still -1", "previous_kraft_epoch",
                   "kraft_controller_epoch", "previous_snapshot"),
    )


def migration_rolled_back(migration: DataFrame, controller: DataFrame, previous_migration: DataFrame | None,
                          previous_controller: DataFrame | None) -> DataFrame:
    """A ZooKeeper-mode controller took /controller back while /migration shows completed dual writes
    (offset > 0), after the previous snapshot saw a KRaft controller there: a rollback, or two controllers
    writing (split brain)."""
    if previous_migration is None or previous_controller is None:
        return empty_output(migration, "migration_rolled_back")
    rows = _with_previous(migration, controller, previous_migration, previous_controller).where(
        F.col("zk_holds_controller")
        & (F.col("kraft_metadata_offset") > 0)
        & F.col("previous_kraft_holds_controller")
    )
    return to_output(
        rows, "migration_rolled_back", path=F.lit("/controller"), broker_id="controller_id",
        detail=say("ZooKeeper-mode broker %s holds /controller while /migration records dual writes up to offset %s; "
                   "the previous snapshot%s had a KRaft controller there", "controller_id",
                   "kraft_metadata_offset", "previous_snapshot"),
    )


def migration_offset_regressed(migration: DataFrame, previous_migration: DataFrame | None) -> DataFrame:
    """The KRaft metadata offset in /migration only grows while the znode lives (KRaft offsets never go back)."""
    if previous_migration is None:
        return empty_output(migration, "migration_offset_regressed")
    before = previous_migration.select(
        KEY, F.col("kraft_metadata_offset").alias("previous_offset"), F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_migration).alias("previous_snapshot"),
    )
    rows = (
        migration.join(before, KEY)
        .where((F.col("ctime") == F.col("previous_ctime")) & (F.col("previous_offset") > 0))
        .where(F.col("kraft_metadata_offset") < F.col("previous_offset"))
    )
    return to_output(
        rows, "migration_offset_regressed", path="path",
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
