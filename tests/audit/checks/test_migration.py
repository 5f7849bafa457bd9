"""The health checks of a ZK -> KRaft migration in flight, and its phase, on the states a migration goes
through (KRaftMigrationDriver, 3.4-3.9): each fires on its state only, and never outside a migration.
One Spark action in all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafka_zk_audit.audit.checks import migration
from kafka_zk_audit.contract.readiness import PHASES
from tests.audit.checks.test_checks import HOUR, MINUTE, NOW, collect_by_label, make_frame, small_data_settings
from tests.audit.checks.test_scenarios import params

pytestmark = pytest.mark.spark

STALE = 10 * MINUTE
STUCK = HOUR
CREATED = NOW - 30 * 24 * HOUR  # /migration's ctime: the znode of this migration attempt


def _migration(offset: int, kraft_id: int = -1, kraft_epoch: int = -1, mtime: int = NOW, ctime: int = CREATED) -> dict:
    return {"version": 0, "kraft_controller_id": kraft_id, "kraft_controller_epoch": kraft_epoch,
            "kraft_metadata_offset": offset, "kraft_metadata_epoch": -1 if offset < 0 else kraft_epoch,
            "mtime": mtime, "ctime": ctime, "path": "/migration"}


def _zk_controller(broker_id: int = 1) -> dict[str, Any]:
    return {"broker_id": broker_id, "version": 2, "kraft_controller_epoch": -1, "session": 0x101,
            "is_ephemeral": True, "path": "/controller"}


def _kraft_controller(node_id: int = 3000, epoch: int = 5) -> dict[str, Any]:
    return {"broker_id": node_id, "version": 2, "kraft_controller_epoch": epoch, "session": 0,
            "is_ephemeral": False, "path": "/controller"}


@pytest.fixture(scope="module")
def results(spark: SparkSession) -> Iterator[dict[str, list[tuple]]]:
    with small_data_settings(spark):
        def m(*rows: dict) -> DataFrame:
            return make_frame(spark, "migration", list(rows))

        def c(*rows: dict) -> DataFrame:
            return make_frame(spark, "controller", list(rows))

        dual = m(_migration(4200, 3000, 5, mtime=NOW - 2 * STALE))
        limits = params(spark, dual_write_stale_after_ms=STALE, load_stuck_after_ms=STUCK)
        yield collect_by_label({
            # dual writes: /migration older than the limit → stalled; at the limit or fresh → fine
            "stalled": migration.migration_dual_write_stalled(dual, c(_kraft_controller()), limits),
            "fresh_dual_write": migration.migration_dual_write_stalled(
                m(_migration(4200, 3000, 5, mtime=NOW - STALE)), c(_kraft_controller()), limits),
            # an old /migration under a ZooKeeper-mode controller is a reverted attempt (readiness R01), not a stall
            "reverted_not_stalled": migration.migration_dual_write_stalled(dual, c(_zk_controller()), limits),
            "no_migration_stall": migration.migration_dual_write_stalled(m(), c(_zk_controller()), limits),
            # offset -1 for longer than the limit: waiting for brokers, or loading
            "waiting": migration.migration_stuck(
                m(_migration(-1, mtime=NOW - 2 * STUCK)), c(_zk_controller()), limits),
            "loading": migration.migration_stuck(
                m(_migration(-1, 3000, 5, mtime=NOW - 2 * STUCK)), c(_kraft_controller()), limits),
            "waiting_briefly": migration.migration_stuck(
                m(_migration(-1, mtime=NOW - STUCK)), c(_zk_controller()), limits),
            "done_not_stuck": migration.migration_stuck(dual, c(_kraft_controller()), limits),
            # history: the load restarting under a new leader
            "crash_loop": migration.migration_crash_loop(
                m(_migration(-1, 3001, 7)), c(_kraft_controller(3001, 7)),
                m(_migration(-1, 3000, 5)), c(_kraft_controller(3000, 5))),
            "same_leader_loading": migration.migration_crash_loop(
                m(_migration(-1, 3000, 5)), c(_kraft_controller()), m(_migration(-1, 3000, 5)), c(_kraft_controller())),
            "leader_change_while_waiting": migration.migration_crash_loop(
                m(_migration(-1, 3001, 7)), c(_zk_controller()), m(_migration(-1, 3000, 5)), c(_zk_controller())),
            "first_claim_after_waiting": migration.migration_crash_loop(
                m(_migration(-1, 3000, 5)), c(_kraft_controller(3000, 5)), m(_migration(-1)), c(_zk_controller())),
            "new_attempt_not_a_loop": migration.migration_crash_loop(
                m(_migration(-1, 3001, 7, ctime=NOW - HOUR)), c(_kraft_controller(3001, 7)),
                m(_migration(-1, 3000, 5)), c(_kraft_controller(3000, 5))),
            "crash_loop_no_baseline": migration.migration_crash_loop(m(_migration(-1, 3001, 7)),
                                                                     c(_kraft_controller(3001, 7)), None, None),
            # history: a ZooKeeper-mode controller back during dual writes
            "rolled_back": migration.migration_rolled_back(
                m(_migration(4300, 3000, 5)), c(_zk_controller(2)), m(_migration(4200, 3000, 5)),
                c(_kraft_controller())),
            "still_reverted": migration.migration_rolled_back(
                m(_migration(4200, 3000, 5)), c(_zk_controller(2)), m(_migration(4200, 3000, 5)), c(_zk_controller(2))),
            "kraft_failover": migration.migration_rolled_back(
                m(_migration(4300, 3001, 6)), c(_kraft_controller(3001, 6)), m(_migration(4200, 3000, 5)),
                c(_kraft_controller())),
            # history: offsets only grow while the znode lives
            "offset_back": migration.migration_offset_regressed(m(_migration(4100, 3000, 5)),
                                                                m(_migration(4200, 3000, 5))),
            "offset_forward": migration.migration_offset_regressed(m(_migration(4300, 3000, 5)),
                                                                   m(_migration(4200, 3000, 5))),
            "recreated": migration.migration_offset_regressed(m(_migration(-1, ctime=NOW - HOUR)),
                                                              m(_migration(4200, 3000, 5))),
        })


def test_dual_writes_that_stopped(results: dict[str, list[tuple]]) -> None:
    [(check_id, _t, _p, _g, broker_id, path, detail)] = results["stalled"]
    assert (check_id, broker_id, path) == ("migration_dual_write_stalled", 3000, "/migration")
    assert "offset 4200" in detail and "0h 20m 00s before the snapshot" in detail
    assert results["fresh_dual_write"] == results["reverted_not_stalled"] == results["no_migration_stall"] == []


def test_a_migration_that_does_not_move_on(results: dict[str, list[tuple]]) -> None:
    [waiting] = results["waiting"]
    [loading] = results["loading"]
    assert waiting[0] == loading[0] == "migration_stuck"
    assert "waiting for every ZooKeeper broker" in waiting[6] and "2h 00m 00s" in waiting[6]
    assert "initial metadata load" in loading[6]
    assert results["waiting_briefly"] == results["done_not_stuck"] == []


def test_a_load_that_restarts_under_new_leaders(results: dict[str, list[tuple]]) -> None:
    [(check_id, *_subject, broker_id, path, detail)] = results["crash_loop"]
    assert (check_id, broker_id, path) == ("migration_crash_loop", 3001, "/migration")
    assert "epoch 5 -> 7" in detail
    for label in ("same_leader_loading", "leader_change_while_waiting", "first_claim_after_waiting",
                  "new_attempt_not_a_loop",
                  "crash_loop_no_baseline"):
        assert results[label] == [], label


def test_a_zookeeper_controller_back_during_dual_writes(results: dict[str, list[tuple]]) -> None:
    [(check_id, *_subject, broker_id, path, detail)] = results["rolled_back"]
    assert (check_id, broker_id, path) == ("migration_rolled_back", 2, "/controller")
    assert "offset 4300" in detail
    assert results["still_reverted"] == results["kraft_failover"] == []


def test_the_metadata_offset_going_back(results: dict[str, list[tuple]]) -> None:
    [(check_id, *_rest, path, detail)] = results["offset_back"]
    assert (check_id, path) == ("migration_offset_regressed", "/migration")
    assert "4100 < 4200" in detail
    assert results["offset_forward"] == results["recreated"] == []


@pytest.mark.parametrize(("migration_row", "controller_row", "phase"), [
    (None, _zk_controller(), "not_started"),
    (_migration(-1), _zk_controller(), "waiting_for_brokers"),
    (_migration(-1, 3000, 5), _kraft_controller(), "initial_load"),
    (_migration(4200, 3000, 5), _kraft_controller(), "dual_write"),
    (_migration(4200, 3000, 5), _zk_controller(), "reverted"),
    (_migration(4200, 3000, 5), None, "unknown"),
])
def test_migration_phase(migration_row: dict | None, controller_row: dict | None, phase: str) -> None:
    assert migration.migration_phase(migration_row, controller_row)["phase"] == phase
    assert phase in PHASES


def test_migration_phase_of_each_snapshot() -> None:
    """Keyed rows of several snapshots: each snapshot's phase from its own rows (none: not started)."""
    rows = {"a": (_migration(-1), _zk_controller()), "b": (_migration(4200, 3000, 5), _kraft_controller())}
    phases = migration.migration_phases(
        ["a", "b", "c"],
        [{"snapshot_id": key, **m} for key, (m, _c) in rows.items()],
        [{"snapshot_id": key, **c} for key, (_m, c) in [*rows.items(), ("c", (None, _zk_controller()))]],
    )
    assert {key: phase["phase"] for key, phase in phases.items()} == {
        "a": "waiting_for_brokers", "b": "dual_write", "c": "not_started"}
    assert phases["b"] == migration.migration_phase(*rows["b"])
