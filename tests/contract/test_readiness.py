"""Readiness levels per target version against the reference note's table (written out here by hand from
notes/kraft-migration-readiness.md §3 and the issue #12 design), target parsing and the verdict."""

from __future__ import annotations

import pytest

from kafka_zk_audit.contract.readiness import (
    BY_CHECK_ID,
    CONDITIONS,
    LEVELS,
    NOT_VISIBLE,
    level_for,
    parse_target,
    verdict,
)

TARGETS = ("3.4", "3.4.1", "3.5", "3.5.1", "3.5.2", "3.6", "3.6.1", "3.6.2", "3.7", "3.7.1", "3.8", "3.9", "3.9.1")
B, H, W, I, N = "blocker", "high", "warn", "info", None  # noqa: E741


def row(*levels: str | None) -> dict[str, str | None]:
    assert len(levels) == len(TARGETS)
    return dict(zip(TARGETS, levels, strict=True))


# The oracle: the note's severity column, target by target.
#                 3.4 3.4.1 3.5 3.5.1 3.5.2 3.6 3.6.1 3.6.2 3.7 3.7.1 3.8 3.9 3.9.1
EXPECTED: dict[str, dict[str, str | None]] = {
    "kraft_migration_leftover": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_replica_on_unregistered_broker": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_topic_without_id": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_partition_state_missing": row(H, H, H, H, H, H, H, H, H, H, H, H, H),
    # blocker < 3.6.1, warn after (KAFKA-15605)
    "kraft_pending_topic_deletion": row(B, B, B, B, B, B, W, W, W, W, W, W, W),
    "kraft_reassignment_in_flight": row(W, W, W, W, W, W, W, W, W, W, W, W, W),
    # blocker on 3.4, fine from 3.5 (shown as info)
    "kraft_scram_credentials": row(B, B, I, I, I, I, I, I, I, I, I, I, I),
    # blocker < 3.5.1 (KAFKA-15098), info after
    "kraft_acls_present": row(B, B, B, I, I, I, I, I, I, I, I, I, I),
    "kraft_acl_unknown_resource_type": row(W, W, W, W, W, W, W, W, W, W, W, W, W),
    # blocker < 3.6.0 (KAFKA-15219)
    "kraft_delegation_tokens": row(B, B, B, B, B, N, N, N, N, N, N, N, N),
    "kraft_encrypted_passwords": row(H, H, H, H, H, H, H, H, H, H, H, H, H),
    # blocker on 3.5.0-3.5.1 only
    "kraft_default_broker_config": row(N, N, B, B, N, N, N, N, N, N, N, N, N),
    "kraft_quota_invalid": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    # high < 3.6.2 and on 3.7.0 (fixed in 3.6.2 / 3.7.1: KAFKA-16222, KAFKA-16411)
    "kraft_quota_odd_entity_name": row(H, H, H, H, H, H, H, N, H, N, N, N, N),
    "kraft_no_common_listener": row(H, H, H, H, H, H, H, H, H, H, H, H, H),
    # high on 3.9 (KAFKA-17543)
    "kraft_generated_broker_ids": row(N, N, N, N, N, N, N, N, N, N, N, H, H),
    "kraft_ibp_too_low": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_cluster_id_missing": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_controller_epoch_missing": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_producer_id_block_invalid": row(B, B, B, B, B, B, B, B, B, B, B, B, B),
    "kraft_secured_znodes": row(H, H, H, H, H, H, H, H, H, H, H, H, H),
}
CONDITION_IDS = {
    "kraft_migration_leftover": "R01", "kraft_replica_on_unregistered_broker": "R02", "kraft_topic_without_id": "R03",
    "kraft_partition_state_missing": "R04", "kraft_pending_topic_deletion": "R05",
    "kraft_reassignment_in_flight": "R06", "kraft_scram_credentials": "R07", "kraft_acls_present": "R08",
    "kraft_acl_unknown_resource_type": "R08", "kraft_delegation_tokens": "R09", "kraft_encrypted_passwords": "R10",
    "kraft_default_broker_config": "R11", "kraft_quota_invalid": "R12", "kraft_quota_odd_entity_name": "R12",
    "kraft_no_common_listener": "R13", "kraft_generated_broker_ids": "R15", "kraft_ibp_too_low": "R16",
    "kraft_cluster_id_missing": "R17", "kraft_controller_epoch_missing": "R18",
    "kraft_producer_id_block_invalid": "R19", "kraft_secured_znodes": "R20",
}


def test_every_condition_of_the_design_and_nothing_else() -> None:
    assert {c.check_id: c.condition_id for c in CONDITIONS} == CONDITION_IDS
    assert len(CONDITIONS) == len(BY_CHECK_ID)
    assert "R14" not in {c.condition_id for c in CONDITIONS}  # a list in the report, not a row


@pytest.mark.parametrize("check_id", sorted(EXPECTED))
def test_level_per_target_matches_the_note(check_id: str) -> None:
    got = {target: level_for(check_id, target) for target in TARGETS}
    assert got == EXPECTED[check_id]


def test_level_for_takes_a_parsed_version_too() -> None:
    assert level_for("kraft_pending_topic_deletion", (3, 6, 0)) == "blocker"
    assert level_for("kraft_pending_topic_deletion", (3, 6, 1)) == "warn"


def test_every_condition_says_what_to_do_and_why() -> None:
    for condition in CONDITIONS:
        for text in (condition.title, condition.detects, condition.remedy, condition.source):
            assert text.strip() and "  " not in text, condition.check_id
        assert condition.remedy.endswith("."), condition.check_id
        assert len(condition.remedy) <= 320, f"{condition.check_id}: keep the remedy to one or two sentences"
        assert condition.remedy.count(". ") <= 1, condition.check_id
        assert all(rule.level in LEVELS for rule in condition.levels)
    assert "delete /migration" in BY_CHECK_ID["kraft_migration_leftover"].remedy.lower()
    assert ">= 2.8" in BY_CHECK_ID["kraft_topic_without_id"].remedy


@pytest.mark.parametrize(
    ("text", "expected"),
    [("3.4", (3, 4, 0)), ("3.9", (3, 9, 0)), ("3.5.1", (3, 5, 1)), (" 3.6.1 ", (3, 6, 1)), ("3.7.10", (3, 7, 10))],
)
def test_parse_target(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    "text", ["3.3", "3.10", "4.0", "2.8", "3", "3.", "3.5.", "3.5.1.2", "v3.5", "", "3.x", None, 3.5]
)
def test_parse_target_refuses_what_does_not_migrate(text: object) -> None:
    with pytest.raises(ValueError, match=r'"3\.4" to "3\.9".*"3\.5\.1"'):
        parse_target(text)


@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        ([], "ready"),
        (["info", "info"], "ready"),
        (["warn"], "ready_with_warnings"),
        (["high", "info"], "ready_with_warnings"),
        (["info", "warn", "blocker"], "blocked"),
        (iter(["blocker"]), "blocked"),
    ],
)
def test_verdict(levels: list[str], expected: str) -> None:
    assert verdict(levels) == expected


def test_not_visible_checklist_covers_what_zookeeper_cannot_show() -> None:
    items = " ".join(p.item for p in NOT_VISIBLE)
    for needle in ("inter.broker.protocol.version", "metadata.version", "JBOD", "zookeeper.metadata.migration.enable",
                   "quorum", "authorizer", "password.encoder.secret", "node ids"):
        assert needle in items, needle
    assert all(p.why.strip() and p.how.strip() for p in NOT_VISIBLE)
