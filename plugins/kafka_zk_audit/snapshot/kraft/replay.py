"""Replay a metadata directory into the image: its plan's checkpoint, then its log records, as Kafka starts up.

A log segment that cannot be read on from some batch (a torn tail, a bad CRC) ends the replay there, as Kafka's
recovery truncates it, and becomes an anomaly (``log_truncated``, ``log_corrupt``) that the audit reports.
Records of the checkpoint all stand at the checkpoint's last offset (its end offset − 1): the image cannot tell
when before that each entity was made. The quorum leader comes from the newest LeaderChange record; a log whose
last LeaderChange was compacted away falls back on the controller's ``quorum-state`` file (only for the newest
state: that file tells the present, not a past offset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka_zk_audit.snapshot.kraft.batches import KraftLogError, Undecodable
from kafka_zk_audit.snapshot.kraft.image import Anomaly, ImageBuilder
from kafka_zk_audit.snapshot.kraft.metadata_dir import ReplayPlan, plan_replay

PROGRESS_EVERY = 250_000
UNDECODABLE_LISTED = 100  # the manifest lists this many; the anomalies table has them all


@dataclass
class ReplayResult:
    """The image replayed from a directory, and what the manifest says about how."""

    builder: ImageBuilder
    cluster_id: str | None
    node_id: str | None
    checkpoint: dict[str, Any] | None
    segments: list[str]
    records: int = 0
    batches: int = 0
    undecodable: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)


def replay_directory(path: str | Path, *, at_offset: int | None = None, at_time: datetime | None = None,
                     progress: Callable[[str], None] | None = None) -> ReplayResult:
    """The image of the metadata directory at ``path`` after ``at_offset``/``at_time`` (default: its newest state).
    Raises KraftError (MetadataDirError, KraftLogError) when the files cannot rebuild it; the message says which
    file, where and what to do."""
    plan = plan_replay(path, at_offset=at_offset, at_time=at_time)
    result = replay_plan(plan, progress=progress)
    builder = result.builder
    quorum, state = builder.image.quorum, plan.directory.quorum_state
    if quorum.leader_id is None and state and plan.target_offset is None and plan.target_time is None:
        quorum.leader_id, quorum.epoch = state.get("leaderId"), state.get("leaderEpoch")
        quorum.voters = [voter.get("voterId") for voter in state.get("currentVoters") or []]
        quorum.offset, quorum.time = builder.image.last_offset, builder.image.last_time
        result.warnings.append("no LeaderChange record in the files read: the quorum leader is the quorum-state "
                               f"file's (leader {quorum.leader_id}, epoch {quorum.epoch})")
    manifest = plan.manifest()
    result.checkpoint = manifest["checkpoint"]
    result.files = manifest["files"]
    result.batches = sum(int(f.get("batches") or 0) for f in manifest["files"])
    return result


def replay_plan(plan: ReplayPlan, builder: ImageBuilder | None = None,
                progress: Callable[[str], None] | None = None,
                on_log_record: Callable[[Any], None] | None = None) -> ReplayResult:
    """Apply a plan's checkpoint, then its log records (``on_log_record`` called after each), into ``builder``
    (default: a new one); a segment that cannot be read on ends the replay there (``_stop_at``)."""
    builder = builder or ImageBuilder()
    result = ReplayResult(builder, plan.directory.meta_properties.get("cluster.id"),
                          plan.directory.meta_properties.get("node.id"), None,
                          [segment.path.name for segment in plan.segments], warnings=list(plan.warnings))
    if plan.checkpoint is not None:
        at = (plan.checkpoint.end_offset or 0) - 1
        for record in plan.snapshot_records():
            _apply(builder, record, result, at)
    try:
        for record in plan.log_records():
            _apply(builder, record, result, None)
            if on_log_record is not None:
                on_log_record(record)
            if progress is not None and result.records % PROGRESS_EVERY == 0:
                progress(f"replayed {result.records:,} records (offset {record.offset})")
    except KraftLogError as error:
        _stop_at(builder, result, error)
    return result


def _stop_at(builder: ImageBuilder, result: ReplayResult, error: KraftLogError) -> None:
    """A segment that cannot be read on from a batch: the image is what the records before it make, as Kafka's log
    recovery truncates a segment at its first invalid batch (LogSegment.recover); the anomaly names the file, the
    position and what to do."""
    image = builder.image
    offset = error.offset if error.offset is not None else image.last_offset + 1
    truncated = error.what.startswith("the file is truncated")
    kind = "log_truncated" if truncated else "log_corrupt"
    name = Path(error.file).name  # a staging folder's path means nothing to the reader
    detail = f"{name}: byte {error.position} (offset {offset}): {error.what}; {error.what_to_do}"
    builder.image.anomalies.append(Anomaly(kind, offset, image.last_time or 0, name, detail))
    result.warnings.append(f"the replay stops at offset {offset}: {detail}")


def _apply(builder: ImageBuilder, record: Any, result: ReplayResult, at: int | None) -> None:
    result.records += 1
    if isinstance(record, Undecodable):
        builder.skip(record)
        if len(result.undecodable) < UNDECODABLE_LISTED:
            result.undecodable.append({"file": Path(record.file).name, "offset": record.offset,
                                       "api_key": record.api_key, "version": record.version,
                                       "reason": record.reason})
        return
    builder.add(record, offset=at)
