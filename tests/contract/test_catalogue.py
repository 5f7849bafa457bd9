"""The check catalogue as a registry: each spec names a known severity and normalized tables, and its inputs give
the check function's parameters (tests/audit/checks/test_checks.py holds the functions to them)."""

from __future__ import annotations

from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS, CHECKS, ENTITIES, SEVERITIES, Check
from kafka_zk_audit.contract.schemas import TABLES


def test_ids_are_unique_and_every_spec_is_complete() -> None:
    assert len(CHECK_IDS) == len(CHECKS) == len(BY_ID)
    for check in CHECKS:
        assert check.severity in SEVERITIES and check.entity in ENTITIES and check.meaning, check.check_id
        assert check.tables or check.paired, f"{check.check_id} reads no table"


def test_the_paired_checks_are_the_migration_diffs_and_read_no_table() -> None:
    from kafka_zk_audit.contract.catalogue import PAIRED_CHECK_IDS, SNAPSHOT_CHECK_IDS
    from kafka_zk_audit.contract.migration_checks import BY_ID as DIVERGENCES

    assert set(PAIRED_CHECK_IDS) == set(DIVERGENCES) and len(PAIRED_CHECK_IDS) == 14
    assert set(PAIRED_CHECK_IDS).isdisjoint(SNAPSHOT_CHECK_IDS)
    assert set(PAIRED_CHECK_IDS) | set(SNAPSHOT_CHECK_IDS) == set(CHECK_IDS)
    for check_id in PAIRED_CHECK_IDS:
        check = BY_ID[check_id]
        assert check.severity == DIVERGENCES[check_id].severity and not check.tables and not check.baselines


def test_inputs_are_normalized_tables() -> None:
    for check in CHECKS:
        unknown = (set(check.tables) | set(check.baselines)) - set(TABLES)
        assert not unknown, f"{check.check_id} names tables that are not normalized: {sorted(unknown)}"
        assert len(set(check.tables)) == len(check.tables) and len(set(check.baselines)) == len(check.baselines)


def test_a_history_check_is_one_with_baseline_tables() -> None:
    plain = Check("plain", "error", "znodes", "a check of this snapshot only", tables=("znodes",))
    history = Check("history", "error", "partitions", "compares with the baseline", tables=("partitions", "topics"),
                    baselines=("partitions",), params=True)
    assert not plain.history and plain.arguments == ("znodes",)
    assert history.history and history.arguments == ("partitions", "topics", "previous_partitions", "params")
    assert {check.check_id for check in CHECKS if check.history} == {
        "leader_epoch_regressed", "controller_epoch_regressed", "migration_crash_loop", "migration_rolled_back",
        "migration_offset_regressed", "offset_regressed",
    }
