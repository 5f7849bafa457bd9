"""The migration proven: ZooKeeper's last state against the KRaft metadata at the offset ZooKeeper reflects.

``verify_migration`` finds the migration in the log and the offset ZooKeeper reflects (``/migration``'s
``kraft_metadata_offset`` O: the log is replayed up to and including O, transactions honoured, as the notes'
rule says), lays both sides out as entries under the release's mapping rules (``mapping``) and compares them
(``compare``): one finding per divergence, in the findings' shape (contract.schemas CHECK_OUTPUT), each with both
sides' evidence (znode path and value; record offset and value). How far ZooKeeper trails the log's end (records,
time) is measured too, and past the limits it is a finding.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk_audit.snapshot.kraft.replay import replay_directory
from kafka_zk_audit.snapshot.migration.compare import Finding, compare_entries
from kafka_zk_audit.snapshot.migration.mapping import Release, kraft_entries, parse_release, zk_entries
from kafka_zk_audit.snapshot.migration.tree import ZkTree

MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
DEFAULT_MAX_LAG_RECORDS = 10_000
DEFAULT_MAX_LAG_MS = 5 * 60_000


@dataclass(frozen=True)
class LagLimits:
    """How far ZooKeeper may trail KRaft during dual writes before it is a finding."""

    records: int = DEFAULT_MAX_LAG_RECORDS
    ms: int = DEFAULT_MAX_LAG_MS


@dataclass
class Verification:
    """The verdict of one pair: findings, equal counts per kind, where the comparison stood and the lag."""

    release: str
    offset: int | None
    log_end_offset: int
    migration_state: str | None
    lag_records: int | None
    lag_ms: int | None
    findings: list[Finding] = field(default_factory=list)
    equal: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        counts = ", ".join(f"{self.equal.get(kind, 0)} {label}" for kind, label in (
            ("topic", "topics"), ("partition", "partitions"), ("config", "configs"), ("acl", "ACLs"),
            ("quota", "quotas"), ("scram", "users")))
        verdict = "migration verified" if self.verified else f"migration DIVERGED ({len(self.findings)} finding(s))"
        at = f"offset {self.offset}" if self.offset is not None else "the log's end"
        return f"{verdict} at {at} (Kafka {self.release}): {counts} equal"

    def as_dict(self) -> dict[str, Any]:
        return {"release": self.release, "offset": self.offset, "log_end_offset": self.log_end_offset,
                "migration_state": self.migration_state, "lag_records": self.lag_records, "lag_ms": self.lag_ms,
                "verified": self.verified, "equal": self.equal, "notes": self.notes,
                "findings": [finding.as_row() for finding in self.findings]}


def migration_offset(tree: ZkTree) -> tuple[int | None, int | None]:
    """``/migration``'s (kraft_metadata_offset, kraft_metadata_epoch); (None, None) without the znode."""
    node = tree.get("/migration")
    try:
        document = json.loads(node.data) if node is not None and node.data else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        return None, None
    return int(document.get("kraft_metadata_offset", -1)), int(document.get("kraft_metadata_epoch", -1))


def verify_migration(tree: ZkTree, kraft_dir: str | Path, release: str, fingerprint: Callable[[bytes], str],
                     limits: LagLimits | None = None) -> Verification:
    """Compare the tree with the KRaft metadata directory (see the module docstring)."""
    limits = limits or LagLimits()
    parsed = parse_release(release)
    whole = replay_directory(kraft_dir)
    end = whole.builder.image
    offset, _ = migration_offset(tree)
    findings: list[Finding] = []
    notes: list[str] = []
    if offset is None or offset <= 0:
        notes.append("ZooKeeper has no /migration offset (no load recorded): compared with the log's end")
        at = whole
    elif offset > end.last_offset:
        findings.append(Finding("migration_diverged_state", path="/migration", detail=(
            f"zk: /migration kraft_metadata_offset {offset} · kraft: the log ends at offset {end.last_offset}: "
            "ZooKeeper reflects records the log does not hold")))
        at = whole
    else:
        at = replay_directory(kraft_dir, at_offset=offset)
    image = at.builder.image
    findings += _state_findings(at, parsed, offset)
    state = None if end.migration_state is None else MIGRATION_STATES.get(end.migration_state[0])
    lag_records = lag_ms = None
    if offset is not None and offset > 0 and offset <= end.last_offset:
        lag_records = end.last_offset - offset
        lag_ms = (end.last_time or 0) - (image.last_time or 0)
        if state == "MIGRATION" and (lag_records > limits.records or lag_ms > limits.ms):
            findings.append(Finding("migration_dual_write_lagging", path="/migration", detail=(
                f"zk: /migration kraft_metadata_offset {offset} · kraft: log end offset {end.last_offset}: "
                f"ZooKeeper trails by {lag_records} record(s) and {lag_ms / 1000:.1f}s (limits {limits.records} "
                f"records, {limits.ms / 1000:.0f}s)")))
    compared, equal = compare_entries(zk_entries(tree, parsed), kraft_entries(image, parsed, fingerprint))
    findings += compared
    return Verification(release, offset if offset and offset > 0 else None, end.last_offset, state, lag_records,
                        lag_ms, findings, equal, notes + list(at.warnings))


def _state_findings(at: Any, release: Release, offset: int | None) -> Iterable[Finding]:
    image, builder = at.builder.image, at.builder
    where = f"offset {offset}" if offset is not None and offset > 0 else "the log's end"
    if builder.open_transaction is not None and builder.open_transaction[1] == "ZK Migration":
        start = builder.open_transaction[0]
        yield Finding("migration_diverged_state", path="/migration", detail=(
            f"zk: /migration kraft_metadata_offset {offset} · kraft: the ZK Migration transaction begun at offset "
            f"{start} is still open at {where}: the load did not complete"))
        return
    if image.migration_state is None or image.migration_state[0] not in (1, 3):
        value = None if image.migration_state is None else image.migration_state[0]
        shown = "no ZkMigrationStateRecord" if value is None else f"ZkMigrationStateRecord({value})"
        aborted = f", {builder.aborted_transactions} aborted transaction(s)" if builder.aborted_transactions else ""
        yield Finding("migration_diverged_state", path="/migration", detail=(
            f"zk: /migration kraft_metadata_offset {offset} · kraft: {shown} at {where}{aborted}: no completed "
            f"migration (Kafka {'.'.join(map(str, release))})"))
