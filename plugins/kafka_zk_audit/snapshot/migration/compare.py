"""Compare the two sides' entries (``mapping``): one finding per divergence, nothing for what is equal.

Keyed by (kind, key): an entry on one side only is missing (or extra) in KRaft; on both, ``value`` and ``extra`` are
compared when both sides have them. A topic missing on one side is one finding: its partitions and configs are not
reported again. A KRaft entry flagged ``mangled`` (a sanitized or ``""`` quota/SCRAM name) is one
``migration_diverged_quota_name`` per entity, ``encrypted`` (ZooKeeper's ciphertext in a password config) one
``migration_diverged_password_encoded``. The producer id block has its own rule (KAFKA-15552). The same rules run in
Spark for a fleet (``audit.migration_diff``); this is the one for a single pair (the CLI) and the reference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_zk_audit.contract.migration_checks import CHECK_OF_KIND
from kafka_zk_audit.snapshot.migration.mapping import ENCRYPTED, MANGLED, Entry


@dataclass(frozen=True)
class Finding:
    """One finding in the findings' shape (contract.schemas CHECK_OUTPUT)."""

    check_id: str
    topic: str | None = None
    partition: int | None = None
    broker_id: int | None = None
    path: str | None = None
    detail: str = ""

    def as_row(self) -> dict[str, object]:
        return {"check_id": self.check_id, "topic": self.topic, "partition": self.partition, "group_id": None,
                "broker_id": self.broker_id, "path": self.path, "detail": self.detail, "explained": False}


def _finding(kind: str, zk: Entry | None, kraft: Entry | None, what: str) -> Finding:
    subject = zk or kraft
    assert subject is not None
    zk_side = zk.evidence if zk is not None else "no znode"
    kraft_side = kraft.evidence if kraft is not None else "no record at or before the compared offset"
    return Finding(CHECK_OF_KIND[kind], subject.topic, subject.partition, subject.broker_id, subject.path,
                   f"{what} · zk: {zk_side} · kraft: {kraft_side}")


def _producer_ids(zk: Entry | None, kraft: Entry | None) -> Finding | None:
    if zk is None:
        return None
    if kraft is None:
        return _finding("producer_ids", zk, None, "ZooKeeper's producer id block was not migrated")
    block, next_id = json.loads(zk.value or "{}"), json.loads(kraft.value or "{}")["next"]
    if block["broker"] == -1:  # written by dual writes: block_start = NextProducerId (KRaftMigrationZkWriter)
        if next_id != block["start"]:
            return _finding("producer_ids", zk, kraft, f"next producer id {next_id} ≠ dual-written block_start "
                                                       f"{block['start']}")
        return None
    if next_id <= block["end"]:
        return _finding("producer_ids", zk, kraft, f"next producer id {next_id} is not past ZooKeeper's block_end "
                                                   f"{block['end']} (KAFKA-15552: ids handed out twice)")
    return None


def compare_entries(zk_side: Iterable[Entry], kraft_side: Iterable[Entry]) -> tuple[list[Finding], dict[str, int]]:
    """The findings and, per kind, how many entities are equal on both sides."""
    zk = {(entry.kind, entry.key): entry for entry in zk_side}
    kraft: dict[tuple[str, str], Entry] = {}
    for entry in kraft_side:
        kraft.setdefault((entry.kind, entry.key), entry)  # an ACL twice (a re-run load) is one
    findings: list[Finding] = []
    equal: dict[str, int] = {}
    topics_apart = {key for kind, key in zk.keys() ^ kraft.keys() if kind == "topic"}
    mangled_entities: set[str] = set()
    for kind, key in sorted(zk.keys() | kraft.keys()):
        left, right = zk.get((kind, key)), kraft.get((kind, key))
        if kind == "producer_ids":
            finding = _producer_ids(left, right)
            findings += [finding] if finding else []
            continue
        subject = left or right
        if kind != "topic" and subject is not None and subject.topic in topics_apart and kind in ("partition",
                                                                                                  "config"):
            continue
        if right is not None and right.flag == MANGLED:
            entity = json.dumps(json.loads(key)[0])
            if entity not in mangled_entities:
                mangled_entities.add(entity)
                findings.append(Finding("migration_diverged_quota_name", path=right.path, detail=(
                    f"KRaft holds the entity under a name no client has (KAFKA-16222/16411) · zk: "
                    f"{left.evidence if left else 'no znode'} · kraft: {right.evidence}")))
            continue
        if right is not None and right.flag == ENCRYPTED:
            findings.append(Finding("migration_diverged_password_encoded", right.topic, None, right.broker_id,
                                    right.path, f"KRaft holds ZooKeeper's encrypted text (KAFKA-14801) · zk: "
                                                f"{left.evidence if left else 'no znode'} · kraft: {right.evidence}"))
            continue
        if left is None:
            findings.append(_finding(kind, None, right, f"{kind} in KRaft only"))
        elif right is None:
            findings.append(_finding(kind, left, None, f"{kind} missing in KRaft"))
        elif _differs(left.value, right.value) or _differs(left.extra, right.extra):
            findings.append(_finding(kind, left, right, f"{kind} differs"))
        else:
            equal[kind] = equal.get(kind, 0) + 1
    return findings, equal


def _differs(left: str | None, right: str | None) -> bool:
    return left is not None and right is not None and left != right
