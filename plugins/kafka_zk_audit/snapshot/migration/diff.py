"""The migration proven: ZooKeeper's last state against the KRaft metadata at the offset ZooKeeper reflects.

``prepare_migration`` finds the migration in the log and the offset ZooKeeper reflects (``/migration``'s
``kraft_metadata_offset`` O: the log is replayed up to and including O, transactions honoured, as the notes' rule
says), checks that the batch holding O has ``/migration``'s ``kraft_metadata_epoch`` as its leader epoch, and lays
both sides out as entries under the release's mapping rules (``mapping``). When the log was truncated past O (a
newer checkpoint only), the state is the newest checkpoint at or before O, and the notes say so; when none is left,
no state at O can be rebuilt (``Unverifiable``). How far ZooKeeper trails the log's end (records, time) is measured
too, and past the limits it is a finding. ``verify_migration`` then compares the entries (``compare``: one finding
per divergence, in the findings' shape, contract.schemas CHECK_OUTPUT, each with both sides' evidence); the DAG
compares them in Spark instead, every paired cluster of a batch in one plan (``audit.migration_diff``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.migration_checks import summary_line
from kafka_zk_audit.snapshot.kraft.metadata_dir import MetadataDir, MetadataDirError, open_metadata_dir, plan_replay
from kafka_zk_audit.snapshot.kraft.replay import ReplayResult, replay_directory, replay_plan
from kafka_zk_audit.snapshot.migration.compare import Finding, compare_entries
from kafka_zk_audit.snapshot.migration.mapping import Entry, Release, kraft_entries, parse_release, zk_entries
from kafka_zk_audit.snapshot.migration.tree import ZkTree

MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
DEFAULT_MAX_LAG_RECORDS = 10_000
DEFAULT_MAX_LAG_MS = 5 * 60_000


@dataclass(frozen=True)
class LagLimits:
    """How far ZooKeeper may trail KRaft during dual writes before it is a finding."""

    records: int = DEFAULT_MAX_LAG_RECORDS
    ms: int = DEFAULT_MAX_LAG_MS


class Unverifiable(ValueError):
    """The KRaft side cannot give the state ZooKeeper reflects (the message says why and what to do)."""


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
        return summary_line(len(self.findings), self.equal, self.offset, self.release)

    def as_dict(self) -> dict[str, Any]:
        return {"release": self.release, "offset": self.offset, "log_end_offset": self.log_end_offset,
                "migration_state": self.migration_state, "lag_records": self.lag_records, "lag_ms": self.lag_ms,
                "verified": self.verified, "equal": self.equal, "notes": self.notes,
                "findings": [finding.as_row() for finding in self.findings]}


def migration_znode(tree: ZkTree) -> dict[str, int]:
    """``/migration``'s fields (kraft_metadata_offset, kraft_metadata_epoch, kraft_controller_epoch, …); {} without
    the znode or with data that is not its JSON."""
    node = tree.get("/migration")
    try:
        document = json.loads(node.data) if node is not None and node.data else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        return {}
    return {key: int(value) for key, value in document.items() if isinstance(value, int)}


def migration_offset(tree: ZkTree) -> tuple[int | None, int | None]:
    """``/migration``'s (kraft_metadata_offset, kraft_metadata_epoch); (None, None) without the znode."""
    fields = migration_znode(tree)
    if not fields:
        return None, None
    return fields.get("kraft_metadata_offset", -1), fields.get("kraft_metadata_epoch", -1)


@dataclass
class Prepared:
    """One pair laid out for the comparison: where it stood, the state findings and both sides' entries."""

    release: str
    offset: int | None
    log_end_offset: int
    migration_state: str | None
    lag_records: int | None
    lag_ms: int | None
    findings: list[Finding]
    notes: list[str]
    zk: list[Entry]
    kraft: list[Entry]

    def verification(self, compared: list[Finding], equal: dict[str, int]) -> Verification:
        """The verdict once the entries are compared."""
        return Verification(self.release, self.offset, self.log_end_offset, self.migration_state, self.lag_records,
                            self.lag_ms, self.findings + compared, equal, list(self.notes))


@dataclass
class AtOffset:
    """The replay at the offset ZooKeeper reflects: its result, the leader epoch of the batch holding that offset
    (None when it is not in the files read) and a note when the state is an older checkpoint's."""

    result: ReplayResult
    batch_epoch: int | None
    note: str | None = None


def _checkpoint_at_or_before(directory: MetadataDir, offset: int) -> int | None:
    """The last offset of the newest valid checkpoint that ends at or before ``offset`` (None: none left)."""
    for checkpoint in reversed(directory.checkpoints):
        if checkpoint.end_offset is None or checkpoint.end_offset - 1 > offset:
            continue
        try:
            checkpoint.validate()
        except Exception:  # a corrupt checkpoint is passed over, as the replay passes it over
            continue
        return checkpoint.end_offset - 1
    return None


def replay_at(kraft_dir: str | Path, offset: int) -> AtOffset:
    """The image at ``offset`` with the epoch of its batch; an older checkpoint's when the log was truncated past it;
    ``Unverifiable`` when the files hold no state at or before it."""
    directory = open_metadata_dir(kraft_dir)
    try:
        plan = plan_replay(directory, at_offset=offset)
        note = None
    except MetadataDirError as error:
        start = directory.log_start_offset
        if start is not None and start <= offset:
            raise
        fallback = _checkpoint_at_or_before(directory, offset)
        if fallback is None:
            raise Unverifiable(
                f"the KRaft log was truncated past /migration's kraft_metadata_offset {offset} (its oldest retained "
                f"offset is {start}) and no checkpoint at or before it is left: no state at that offset can be "
                "rebuilt; copy the metadata directory before the controller deletes the older snapshot, or compare "
                f"after the next dual write ({error})") from error
        plan = plan_replay(directory, at_offset=fallback)
        note = (f"the KRaft log was truncated past /migration's offset {offset} (oldest retained offset {start}): "
                f"compared with the newest checkpoint at or before it, at offset {fallback}; changes between the two "
                "are not seen, and the epoch of the batch at the offset is not checked")
    last: list[Any] = []
    result = replay_plan(plan, on_log_record=lambda record: last.__setitem__(slice(None), [record]))
    epoch = None
    if last and last[0].offset == offset:
        epoch = last[0].epoch
    elif plan.checkpoint is not None and plan.checkpoint.end_offset == offset + 1 and not last:
        epoch = plan.checkpoint.epoch
    return AtOffset(result, epoch, note)


def _epoch_findings(fields: dict[str, int], offset: int, batch_epoch: int | None) -> list[Finding]:
    """/migration's kraft_metadata_epoch is the leader epoch of the batch at its offset (MigrationZNode, written
    from image.highestOffsetAndEpoch()); its kraft_controller_epoch, the leader's, is never older than that batch."""
    if batch_epoch is None:
        return []
    findings = []
    metadata_epoch = fields.get("kraft_metadata_epoch", -1)
    if metadata_epoch >= 0 and metadata_epoch != batch_epoch:
        findings.append(Finding("migration_diverged_offset_epoch", path="/migration", detail=(
            f"zk: /migration kraft_metadata_offset {offset}, kraft_metadata_epoch {metadata_epoch} · kraft: the "
            f"batch holding offset {offset} has leader epoch {batch_epoch}: ZooKeeper reflects another log than "
            "this one (a log truncated and rewritten after a leader change, or another cluster's)")))
    controller_epoch = fields.get("kraft_controller_epoch", -1)
    if controller_epoch >= 0 and controller_epoch < batch_epoch:
        findings.append(Finding("migration_diverged_offset_epoch", path="/migration", detail=(
            f"zk: /migration kraft_controller_epoch {controller_epoch} · kraft: the batch holding offset {offset} "
            f"has leader epoch {batch_epoch}, newer than the controller that wrote /migration")))
    return findings


def _password_note(zk: list[Entry], decoding: bool | None) -> list[str]:
    """Whether password configs were compared by the fingerprint of their clear text or by key only."""
    secrets = [e for e in zk if e.kind == "config" and ("(secret, fingerprinted)" in e.evidence
                                                        or "(decoded, " in e.evidence)]
    if not secrets:
        return []
    decoded = sum(1 for e in secrets if e.value is not None)
    if decoded == len(secrets):
        return [f"{decoded} secret config(s) decoded with password.encoder.secret and compared by fingerprint"]
    why = ("no password.encoder.secret given" if not decoding
           else "not decodable with the password.encoder.secret given, or not encoded")
    return [f"{len(secrets) - decoded} of {len(secrets)} secret config(s) compared by key only ({why}); "
            f"{decoded} by the fingerprint of their clear text"]


def prepare_migration(tree: ZkTree, kraft_dir: str | Path, release: str, fingerprint: Callable[[bytes], str],
                      limits: LagLimits | None = None, decoding: bool | None = None) -> Prepared:
    """Both sides of the pair as entries, with the state findings, offset and lag (see the module docstring);
    ``decoding``: whether the snapshot had the brokers' password.encoder.secret (for the verdict's notes)."""
    limits = limits or LagLimits()
    parsed = parse_release(release)
    whole = replay_directory(kraft_dir)
    end = whole.builder.image
    fields = migration_znode(tree)
    offset = fields.get("kraft_metadata_offset", -1) if fields else None
    findings: list[Finding] = []
    notes: list[str] = []
    at, batch_epoch = whole, None
    if offset is None or offset <= 0:
        notes.append("ZooKeeper has no /migration offset (no load recorded): compared with the log's end")
    elif offset > end.last_offset:
        findings.append(Finding("migration_diverged_state", path="/migration", detail=(
            f"zk: /migration kraft_metadata_offset {offset} · kraft: the log ends at offset {end.last_offset}: "
            "ZooKeeper reflects records the log does not hold")))
    else:
        replayed = replay_at(kraft_dir, offset)
        at, batch_epoch = replayed.result, replayed.batch_epoch
        notes += [replayed.note] if replayed.note else []
        findings += _epoch_findings(fields, offset, batch_epoch)
    image = at.builder.image
    findings += _state_findings(at, parsed, offset)
    state = None if end.migration_state is None else MIGRATION_STATES.get(end.migration_state[0])
    lag_records = lag_ms = None
    if offset is not None and 0 < offset <= end.last_offset:
        lag_records = end.last_offset - offset
        lag_ms = (end.last_time or 0) - (image.last_time or 0)
        if state == "MIGRATION" and (lag_records > limits.records or lag_ms > limits.ms):
            findings.append(Finding("migration_dual_write_lagging", path="/migration", detail=(
                f"zk: /migration kraft_metadata_offset {offset} · kraft: log end offset {end.last_offset}: "
                f"ZooKeeper trails by {lag_records} record(s) and {lag_ms / 1000:.1f}s (limits {limits.records} "
                f"records, {limits.ms / 1000:.0f}s)")))
    zk = list(zk_entries(tree, parsed))
    kraft = list(unique_entries(kraft_entries(image, parsed, fingerprint)))
    return Prepared(release, offset if offset and offset > 0 else None, end.last_offset, state, lag_records, lag_ms,
                    findings, notes + list(at.warnings) + _password_note(zk, decoding), zk, kraft)


def unique_entries(entries: Iterable[Entry]) -> Iterable[Entry]:
    """One entry per (kind, key), the first: an ACL twice (a re-run load) is one."""
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        if (entry.kind, entry.key) not in seen:
            seen.add((entry.kind, entry.key))
            yield entry


def verify_migration(tree: ZkTree, kraft_dir: str | Path, release: str, fingerprint: Callable[[bytes], str],
                     limits: LagLimits | None = None, decoding: bool | None = None) -> Verification:
    """Compare the tree with the KRaft metadata directory, in this process (the single-pair reference)."""
    prepared = prepare_migration(tree, kraft_dir, release, fingerprint, limits, decoding)
    compared, equal = compare_entries(prepared.zk, prepared.kraft)
    return prepared.verification(compared, equal)


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
