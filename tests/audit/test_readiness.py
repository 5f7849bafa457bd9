"""ZooKeeper → KRaft migration readiness on simulated clusters, through the real ZooKeeper, snapshot walker,
normalizer and Spark.

One 3.x cluster carries every readiness plant at once; it is snapshotted once and judged for two target versions.
Its snapshot, a clean 3.9 cluster's and a migration's steps are judged together: one keyed batch (each snapshot
under one key per target), one normalization and one ``run_readiness`` call.

The expected rows (check, level, subject) are written here from the readiness note
(/work/shared/notes/kraft-migration-readiness.md §3), not taken from the readiness contract: each plant and
each condition the base cluster carries must be found on exactly its subject with the note's level, and
nothing else. A clean 3.9 cluster gives no row; a migration walked through its phases gives R01 only once
reverted.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import reduce
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.migration import migration_phase
from kafka_zk_audit.audit.checks.readiness import run_readiness
from kafka_zk_audit.audit.checks.readiness.cluster import node_ids
from kafka_zk_audit.audit.job import read_snapshots
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.contract.schemas import KEY, READINESS
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit_testing.simulator import ClusterSpec, Planted, Simulator
from kafka_zk_audit_testing.simulator.migration_phases import (
    advance_dual_write,
    initial_load,
    reverted_migration,
    waiting_for_brokers,
)
from kafka_zk_audit_testing.simulator.readiness_plants import (
    READINESS_PLANTS,
    SECURED_PATH,
    inherent_readiness,
    plant_readiness,
)
from tests.audit.checks.test_checks import small_data_settings, take_snapshot
from tests.contract.test_readiness import CONDITION_IDS

pytestmark = [pytest.mark.zk, pytest.mark.spark]

TARGETS = ("3.5.0", "3.9")
SPEC = dict(brokers=4, racks=2, topics=2, partitions=2, replication_factor=2, groups=1, consumers_per_group=1,
            threads_per_consumer=1, seed=23)
Version = tuple[int, int, int]


# -- the oracle: levels by target version, from the note's table (§3) and the design's level examples ----------
def version(text: str) -> Version:
    """"3.9" -> (3, 9, 0)."""
    major, minor, patch = ([int(part) for part in text.split(".")] + [0, 0])[:3]
    return major, minor, patch


def always(level: str) -> Callable[[Version], str | None]:
    return lambda target: level


NOTE_LEVELS: dict[str, Callable[[Version], str | None]] = {
    "kraft_migration_leftover": always("blocker"),  # R01
    "kraft_replica_on_unregistered_broker": always("blocker"),  # R02
    "kraft_topic_without_id": always("blocker"),  # R03
    "kraft_partition_state_missing": always("high"),  # R04
    "kraft_pending_topic_deletion": lambda t: "blocker" if t < (3, 6, 1) else "warn",  # R05, KAFKA-15605
    "kraft_reassignment_in_flight": always("warn"),  # R06
    "kraft_scram_credentials": lambda t: "blocker" if t < (3, 5, 0) else "info",  # R07
    "kraft_acls_present": lambda t: "blocker" if t < (3, 5, 1) else "info",  # R08, KAFKA-15098
    "kraft_acl_unknown_resource_type": always("warn"),  # R08: dropped by the migration
    "kraft_delegation_tokens": lambda t: "blocker" if t < (3, 6, 0) else None,  # R09, KAFKA-15219
    "kraft_encrypted_passwords": always("high"),  # R10
    "kraft_default_broker_config": lambda t: "blocker" if (3, 5, 0) <= t <= (3, 5, 1) else None,  # R11
    "kraft_quota_invalid": always("blocker"),  # R12, first two forms
    # R12, last form: fixed in 3.6.2 and 3.7.1 (KAFKA-16222, KAFKA-16411).
    "kraft_quota_odd_entity_name": lambda t: "high" if t < (3, 6, 2) or (3, 7, 0) <= t < (3, 7, 1) else None,
    "kraft_no_common_listener": always("high"),  # R13
    "kraft_generated_broker_ids": lambda t: "high" if t >= (3, 9, 0) else None,  # R15, KAFKA-17543
    "kraft_ibp_too_low": always("blocker"),  # R16
    "kraft_cluster_id_missing": always("blocker"),  # R17
    "kraft_controller_epoch_missing": always("blocker"),  # R18
    "kraft_producer_id_block_invalid": always("blocker"),  # R19
    "kraft_secured_znodes": always("high"),  # R20
}
Row = tuple[str, str | None, str | None, int | None, int | None, str | None]


def subject_key(check_id: str, level: str | None, topic: str | None, partition: int | None, broker_id: int | None,
                path: str | None) -> Row:
    """(check, level, topic, partition, broker, path): a row whose subject is a topic or a broker is compared
    on those, the path only counts for the rest (the design's subject column)."""
    return check_id, level, topic, partition, broker_id, path if topic is None and broker_id is None else None


def expected_rows(conditions: list[Planted], target: str) -> set[Row]:
    keys = set()
    for condition in conditions:
        level = NOTE_LEVELS[condition.check_id](version(target))
        if level is not None:
            keys.add(subject_key(condition.check_id, level, condition.topic, condition.partition,
                                 condition.broker_id, condition.path))
    return keys


def found_rows(rows: list[dict[str, Any]]) -> set[Row]:
    return {subject_key(r["check_id"], r["level"], r["topic"], r["partition"], r["broker_id"], r["path"]) for r in rows}


def assert_same(found: set[Row], expected: set[Row]) -> None:
    assert found == expected, (
        f"missing: {sorted(expected - found, key=repr)}\nunexpected: {sorted(found - expected, key=repr)}"
    )


# -- the real parts ---------------------------------------------------------------------------------------------
_chroots = itertools.count()


def new_chroot(zk_server: Any, label: str) -> str:
    chroot = f"/readiness{next(_chroots):02d}_{label}"
    zk_server.ensure_chroot(chroot)
    return chroot


def at_target(snapshot_id: str, target: str) -> str:
    """The key of a snapshot's copy planned for ``target`` in the module's batch (one copy per target)."""
    return f"{snapshot_id}-{target}"


@pytest.fixture(scope="module")
def tuned_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


@dataclass
class Taken:
    """The snapshots written by the module's simulated clusters, before any Spark work: each readiness key's
    (snapshot id, manifest, target) and what each cluster planted or inherently carries."""

    warehouse: Warehouse
    keys: dict[str, tuple[str, dict[str, Any], str]]
    planted: list[Planted]
    planted_inherent: list[Planted]
    registered: set[int]
    clean_inherent: list[Planted]
    expected_phases: dict[str, set[Row]]


PLANTED_ID, CLEAN_ID = "20260301T000000Z", "20260301T010000Z"
STEPS = ("waiting_for_brokers", "initial_load", "initial_load_restarted", "dual_write", "dual_write_back",
         "reverted")
STEP_IDS = {label: f"20260301T02000{index}Z" for index, label in enumerate(STEPS)}
PHASE_OF_STEP = {"initial_load_restarted": "initial_load", "dual_write_back": "dual_write"}


def take_planted(zk_server: Any, warehouse: Warehouse) -> tuple[list[Planted], list[Planted], set[int], dict]:
    """A 3.x cluster with every readiness plant, snapshotted once: plants, inherent conditions, registered
    brokers and the manifest."""
    chroot = new_chroot(zk_server, "planted")
    with Simulator(hosts=zk_server.hosts + chroot) as sim:
        sim.write(ClusterSpec(era="3.x", **SPEC))
        planted = [plant_readiness(sim, name) for name in READINESS_PLANTS]
        inherent = inherent_readiness(sim)
        registered = set(sim.broker_sessions)
        manifest = take_snapshot(zk_server.hosts, chroot, warehouse, PLANTED_ID)
    return planted, inherent, registered, manifest


def take_clean_39(zk_server: Any, warehouse: Warehouse) -> tuple[list[Planted], dict[str, Any]]:
    """A clean 3.9 cluster, snapshotted once: its inherent conditions and the manifest."""
    chroot = new_chroot(zk_server, "clean39")
    with Simulator(hosts=zk_server.hosts + chroot) as sim:
        sim.write(ClusterSpec(era="3.9", internal_topics=True, **SPEC))
        for absent in ("/kafka-acl", "/kafka-acl-extended", "/delegation_token", "/migration"):
            assert not sim.admin.exists(absent), absent
        inherent = inherent_readiness(sim)
        manifest = take_snapshot(zk_server.hosts, chroot, warehouse, CLEAN_ID)
    return inherent, manifest


def take_migration_steps(zk_server: Any, warehouse: Warehouse) -> tuple[dict[str, dict], dict[str, set[Row]]]:
    """A 3.x-migration cluster walked through waiting → initial load → the load restarted under a new KRaft
    leader → dual writes → the offset set back → reverted, one snapshot per step: manifests and expected rows."""
    chroot = new_chroot(zk_server, "migration")
    manifests, expected = {}, {}
    with Simulator(hosts=zk_server.hosts + chroot) as sim:
        sim.write(ClusterSpec(era="3.x-migration", **SPEC))
        inherent = inherent_readiness(sim)
        steps: dict[str, Callable[[], Planted | None]] = {
            "waiting_for_brokers": lambda: waiting_for_brokers(sim),
            "initial_load": lambda: initial_load(sim, kraft_epoch=5),
            "initial_load_restarted": lambda: initial_load(sim, kraft_epoch=7),
            "dual_write": lambda: advance_dual_write(sim, 5_000),
            "dual_write_back": lambda: advance_dual_write(sim, 4_000),
            "reverted": lambda: reverted_migration(sim),
        }
        for label in STEPS:
            leftover = steps[label]()
            expected[label] = expected_rows(inherent + ([leftover] if leftover else []), "3.9")
            manifests[label] = take_snapshot(zk_server.hosts, chroot, warehouse, STEP_IDS[label])
    return manifests, expected


@pytest.fixture(scope="module")
def taken(zk_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Taken:
    """The three simulated clusters' snapshots in one warehouse: the planted and the clean one at each target,
    the migration's steps at 3.9."""
    warehouse = Warehouse(str(tmp_path_factory.mktemp("readiness-wh")))
    planted, planted_inherent, registered, planted_manifest = take_planted(zk_server, warehouse)
    clean_inherent, clean_manifest = take_clean_39(zk_server, warehouse)
    step_manifests, expected_phases = take_migration_steps(zk_server, warehouse)
    keys = {at_target(sid, target): (sid, manifest, target) for target in TARGETS
            for sid, manifest in ((PLANTED_ID, planted_manifest), (CLEAN_ID, clean_manifest))}
    keys.update({STEP_IDS[label]: (STEP_IDS[label], step_manifests[label], "3.9") for label in STEPS})
    return Taken(warehouse, keys, planted, planted_inherent, registered, clean_inherent, expected_phases)


@dataclass
class Batch:
    """The readiness of every snapshot of the module, computed as one keyed batch (one normalization, one
    readiness plan and collect), without the key: rows by readiness key, node ids by key, and the /migration and
    /controller rows by key."""

    rows: dict[str, list[dict[str, Any]]]
    node_ids: dict[str, list[int]]
    migration: dict[str, list[dict[str, Any]]]
    controller: dict[str, list[dict[str, Any]]]


def by_key(rows: list[Any], keys: Any) -> dict[str, list[dict[str, Any]]]:
    """Keyed rows as dicts without their key, by key (every key of ``keys`` present; a row of another key fails)."""
    found: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
    for row in rows:
        record = row.asDict()
        found[record.pop(KEY)].append(record)
    return found


@pytest.fixture(scope="module")
def batch(tuned_spark: SparkSession, taken: Taken) -> Batch:
    """Each snapshot once per readiness key (the planted and the clean one under a key per target), normalized
    together; readiness of all keys from one run_readiness call."""
    snapshot_ids = sorted({sid for sid, _, _ in taken.keys.values()})
    raw = read_snapshots(tuned_spark, taken.warehouse, snapshot_ids)
    copies = [raw.where(F.col(KEY) == sid).withColumn(KEY, F.lit(key)) for key, (sid, _, _) in taken.keys.items()]
    keyed_raw = reduce(DataFrame.unionByName, copies).coalesce(1).localCheckpoint()  # few rows: one task each
    normalized = normalize(keyed_raw)
    tables = {name: frame.coalesce(1).localCheckpoint(eager=False) for name, frame in normalized.items()}
    try:
        readiness = run_readiness(tables, keyed_raw, {key: (manifest, target)
                                                      for key, (_, manifest, target) in taken.keys.items()})
        rows = by_key(readiness.collect(), taken.keys)
        ids = {key: [row["broker_id"] for row in found]
               for key, found in by_key(node_ids(tables).collect(), taken.keys).items()}
        migration = by_key(tables["migration"].collect(), taken.keys)
        controller = by_key(tables["controller"].collect(), taken.keys)
    finally:
        normalized.release()
    return Batch(rows, ids, migration, controller)


@dataclass
class PlantedCluster:
    planted: list[Planted]
    inherent: list[Planted]
    registered: set[int]
    rows: dict[str, list[dict[str, Any]]]
    node_ids: list[int]
    manifest: dict[str, Any]


@pytest.fixture(scope="module")
def planted_cluster(taken: Taken, batch: Batch) -> PlantedCluster:
    """A 3.x cluster with every readiness plant, snapshotted once; readiness at each target."""
    rows = {target: batch.rows[at_target(PLANTED_ID, target)] for target in TARGETS}
    ids = batch.node_ids[at_target(PLANTED_ID, TARGETS[0])]
    assert ids == batch.node_ids[at_target(PLANTED_ID, TARGETS[-1])]
    manifest = taken.keys[at_target(PLANTED_ID, TARGETS[0])][1]
    return PlantedCluster(taken.planted, taken.planted_inherent, taken.registered, rows, ids, manifest)


# -- one cluster, every condition ---------------------------------------------------------------------------------
def test_every_readiness_check_id_has_a_plant() -> None:
    assert {name.split(":")[0] for name in READINESS_PLANTS} == set(NOTE_LEVELS)


@pytest.mark.parametrize("target", TARGETS)
def test_each_planted_condition_is_found_on_its_subject_at_the_notes_level(planted_cluster: PlantedCluster,
                                                                          target: str) -> None:
    expected = expected_rows(planted_cluster.planted + planted_cluster.inherent, target)
    assert_same(found_rows(planted_cluster.rows[target]), expected)


@pytest.mark.parametrize("target", TARGETS)
def test_rows_name_their_condition_and_say_what_to_do(planted_cluster: PlantedCluster, target: str) -> None:
    rows = planted_cluster.rows[target]
    assert rows
    for row in rows:
        assert set(row) == set(READINESS.names)
        assert row["condition_id"] == CONDITION_IDS[row["check_id"]], row
        assert row["group_id"] is None and row["detail"] and row["remedy"], row
        assert row["path"] and row["path"].startswith("/"), row


def test_levels_differ_between_targets_as_the_note_says(planted_cluster: PlantedCluster) -> None:
    """Spot checks of the version rules: tokens and the default broker config only block 3.5.0, generated ids
    only matter for 3.9, ACLs block 3.5.0 and are information for 3.9."""
    levels = {target: {(r["check_id"], r["level"]) for r in planted_cluster.rows[target]} for target in TARGETS}
    assert ("kraft_delegation_tokens", "blocker") in levels["3.5.0"]
    assert not {c for c, _ in levels["3.9"]} & {"kraft_delegation_tokens", "kraft_default_broker_config"}
    assert "kraft_generated_broker_ids" not in {c for c, _ in levels["3.5.0"]}
    assert ("kraft_generated_broker_ids", "high") in levels["3.9"]
    assert ("kraft_acls_present", "blocker") in levels["3.5.0"] and ("kraft_acls_present", "info") in levels["3.9"]
    assert ("kraft_pending_topic_deletion", "warn") in levels["3.9"]


def test_the_secured_znode_is_in_the_manifest(planted_cluster: PlantedCluster) -> None:
    acls = planted_cluster.manifest.get("znode_acls")
    assert acls is not None, "the walker records no znode_acls: R20 cannot be computed"
    assert sorted(acls[SECURED_PATH]) == ["digest:kafka-zk-audit-simulator:cdrwa", "world:anyone:r"]
    assert acls["/brokers"] == ["world:anyone:cdrwa"]


def test_node_ids_are_every_broker_replica_and_broker_config_id(planted_cluster: PlantedCluster) -> None:
    """R14: registered brokers, the replica on a broker that never registered, and /config/brokers/1."""
    ghost = next(p.broker_id for p in planted_cluster.planted if p.check_id == "kraft_replica_on_unregistered_broker")
    assert planted_cluster.node_ids == sorted(planted_cluster.registered | {ghost, 1})


# -- a clean cluster ready for 3.9 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clean_39(taken: Taken, batch: Batch) -> tuple[list[Planted], dict[str, list[dict[str, Any]]]]:
    """A clean 3.9 cluster's inherent conditions and its readiness rows at each target."""
    return taken.clean_inherent, {target: batch.rows[at_target(CLEAN_ID, target)] for target in TARGETS}


def test_a_clean_39_cluster_gives_no_readiness_row_for_39(clean_39) -> None:
    _, rows = clean_39
    assert rows["3.9"] == []


def test_a_clean_39_cluster_still_has_what_35_cannot_migrate(clean_39) -> None:
    """The cluster-default broker config and the <default>/%-sanitized quota names matter for 3.5.0."""
    inherent, rows = clean_39
    expected = expected_rows(inherent, "3.5.0")
    assert {key[0] for key in expected} == {"kraft_default_broker_config", "kraft_quota_odd_entity_name"}
    assert_same(found_rows(rows["3.5.0"]), expected)


# -- a migration through its phases -------------------------------------------------------------------------------
@dataclass
class Phase:
    """One snapshot of the migration: the phase seen, readiness rows for 3.9 (found, expected), and the
    /migration and /controller rows and the snapshot's time for the health checks."""

    seen: dict[str, str]
    found: set[Row]
    expected: set[Row]
    migration: list[dict[str, Any]]
    controller: list[dict[str, Any]]
    now_ms: int


@pytest.fixture(scope="module")
def migration_phases(taken: Taken, batch: Batch) -> dict[str, Phase]:
    """The migration's steps (``take_migration_steps``), one snapshot each, judged in the module's batch."""
    from datetime import datetime

    results = {}
    for label in STEPS:
        key = STEP_IDS[label]
        migration_rows, controller_rows = batch.migration[key], batch.controller[key]
        phase = migration_phase(migration_rows[0] if migration_rows else None,
                                controller_rows[0] if controller_rows else None)
        now_ms = int(datetime.fromisoformat(taken.keys[key][1]["started_at"]).timestamp() * 1000)
        results[label] = Phase(phase, found_rows(batch.rows[key]), taken.expected_phases[label], migration_rows,
                               controller_rows, now_ms)
    return results


@pytest.mark.parametrize("step", STEPS)
def test_migration_phase_gives_its_rows(migration_phases, step: str) -> None:
    phase = migration_phases[step]
    assert phase.seen["phase"] == PHASE_OF_STEP.get(step, step), phase.seen
    assert_same(phase.found, phase.expected)
    assert ("kraft_migration_leftover" in {key[0] for key in phase.found}) == (step == "reverted")


def test_migration_health_checks_between_the_snapshots(tuned_spark: SparkSession, migration_phases) -> None:
    """Each health check fires on the step that shows it, compared with the step before, and on no other:
    limits of 0 ms make every stalled or stuck state count."""
    from kafka_zk_audit.audit.checks import migration
    from tests.audit.checks.test_checks import collect_by_label, make_frame
    from tests.audit.checks.test_scenarios import params

    def frames(step: str) -> tuple[DataFrame, DataFrame]:
        phase = migration_phases[step]
        return (make_frame(tuned_spark, "migration", phase.migration),
                make_frame(tuned_spark, "controller", phase.controller))

    checks: dict[str, DataFrame] = {}
    for index, step in enumerate(STEPS):
        now, (m, c) = migration_phases[step].now_ms, frames(step)
        before_m, before_c = frames(STEPS[index - 1]) if index else (None, None)
        limits = params(tuned_spark, now, dual_write_stale_after_ms=0, load_stuck_after_ms=0)
        checks[f"{step} stalled"] = migration.migration_dual_write_stalled(m, c, limits)
        checks[f"{step} stuck"] = migration.migration_stuck(m, c, limits)
        checks[f"{step} crash_loop"] = migration.migration_crash_loop(m, c, before_m, before_c)
        checks[f"{step} rolled_back"] = migration.migration_rolled_back(m, c, before_m, before_c)
        checks[f"{step} offset_regressed"] = migration.migration_offset_regressed(m, before_m)
    found = {label for label, rows in collect_by_label(checks).items() if rows}
    assert found == {
        "waiting_for_brokers stuck", "initial_load stuck", "initial_load_restarted stuck",
        "initial_load_restarted crash_loop",  # epoch 5 -> 7, still offset -1
        "dual_write stalled", "dual_write_back stalled", "dual_write_back offset_regressed",
        "reverted rolled_back",  # a ZooKeeper-mode controller back after dual writes
    }
