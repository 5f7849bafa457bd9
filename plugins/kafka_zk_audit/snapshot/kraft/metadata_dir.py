"""A KRaft metadata dir on disk, and the plan to rebuild its metadata image at a target.

``open_metadata_dir`` finds the files (the ``metadata.log.dir`` holding ``__cluster_metadata-0/``, or that folder
itself): segments, ``*.checkpoint`` snapshots (``.part``/``.deleted`` ignored), ``bootstrap.checkpoint``,
``meta.properties`` and ``quorum-state``; producer-state ``.snapshot`` files and indexes are skipped.

``plan_replay`` chooses what to read, as Kafka does on start-up: the newest usable checkpoint (header first, footer
last, every CRC good; a corrupt one is passed over with a warning) whose end offset is at or before the target, then
the log records from that end offset to the target (``at_offset``: every record with offset ≤ N; ``at_time``: the
records up to the last one stamped at or before T). Without a checkpoint the log must start at offset 0. Anything the
retained files cannot rebuild is a ``MetadataDirError`` saying what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka_zk_audit.snapshot.kraft.batches import (
    HEADER,
    Batch,
    KraftError,
    KraftLogError,
    Record,
    Undecodable,
    iter_batches,
    read_batch,
)
from kafka_zk_audit.snapshot.kraft.kind import METADATA_PARTITION, detect_kind, hint
from kafka_zk_audit.snapshot.kraft.segments import (
    BOOTSTRAP_NAME,
    CHECKPOINT_NAME,
    SEGMENT_NAME,
    Checkpoint,
    LogFile,
    read_bytes,
)


class MetadataDirError(KraftError):
    """The files cannot rebuild the image asked for (nothing there, a gap, a target outside what they cover)."""


@dataclass(frozen=True)
class MetadataDir:
    """The metadata files found under one ``metadata.log.dir``."""

    root: Path  # the metadata.log.dir (meta.properties, bootstrap.checkpoint)
    partition: Path  # its __cluster_metadata-0
    segments: tuple[LogFile, ...]  # by base offset
    checkpoints: tuple[Checkpoint, ...]  # by end offset
    bootstrap: Checkpoint | None
    meta_properties: dict[str, str]  # node.id, cluster.id, directory.id, version
    quorum_state: dict[str, Any] | None
    skipped: tuple[str, ...]  # files present but not read (indexes, producer snapshots, .part, ...)

    @property
    def log_start_offset(self) -> int | None:
        return self.segments[0].base_offset if self.segments else None


def open_metadata_dir(path: str | Path) -> MetadataDir:
    """The metadata files of ``path`` (a metadata.log.dir, or its ``__cluster_metadata-0``)."""
    given = Path(path)
    if not given.is_dir():
        raise MetadataDirError(f"{given}: no such directory; pass the broker's or controller's metadata.log.dir")
    partition = given / METADATA_PARTITION if (given / METADATA_PARTITION).is_dir() else given
    root = partition.parent if partition != given or _looks_like_root(partition.parent) else partition
    segments, checkpoints, skipped = [], [], []
    for child in sorted(partition.iterdir()):
        if SEGMENT_NAME.match(child.name):
            segments.append(LogFile.at(child))
        elif CHECKPOINT_NAME.match(child.name):
            checkpoints.append(Checkpoint.at(child))
        elif child.is_file() and child.name not in ("quorum-state", BOOTSTRAP_NAME):
            skipped.append(child.name)
    if not segments and not checkpoints:
        kind = detect_kind(given)
        advice = hint(kind) if kind != "kraft" else "copy the whole __cluster_metadata-0 folder"
        raise MetadataDirError(f"{given}: no log segment (NNN.log) or snapshot (NNN-EEE.checkpoint); {advice}")
    bootstrap = next((Checkpoint.at(place / BOOTSTRAP_NAME) for place in (root, partition)
                      if (place / BOOTSTRAP_NAME).is_file()), None)
    return MetadataDir(root, partition, tuple(sorted(segments, key=lambda s: s.base_offset)),
                       tuple(sorted(checkpoints, key=lambda c: c.end_offset or 0)), bootstrap,
                       _properties(root / "meta.properties"), _json(partition / "quorum-state"), tuple(skipped))


def _looks_like_root(folder: Path) -> bool:
    return (folder / "meta.properties").is_file() or (folder / BOOTSTRAP_NAME).is_file()


def _properties(path: Path) -> dict[str, str]:
    """A Java .properties file's ``key=value`` lines (comments and blanks skipped); {} when absent."""
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, _, value = line.partition("=")
            found[key.strip()] = value.strip()
    return found


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


@dataclass
class FileRead:
    """What was read of one file while a plan ran: for the manifest."""

    file: str
    kind: str  # "checkpoint" or "log"
    bytes: int
    batches: int = 0
    records: int = 0
    undecodable: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    epochs: set[int] = field(default_factory=set)

    def count(self, batch: Batch) -> None:
        self.batches += 1
        self.records += len(batch.records)
        for record in batch.records:
            if record.__class__ is Undecodable:
                self.undecodable += 1
        if self.first_offset is None:
            self.first_offset = batch.base_offset
        self.last_offset = batch.last_offset
        self.epochs.add(batch.epoch)


@dataclass
class ReplayPlan:
    """The checkpoint and log records that rebuild the image at the target, in the order to apply them."""

    directory: MetadataDir
    checkpoint: Checkpoint | None
    snapshot_header: dict[str, Any] | None  # the checkpoint's SnapshotHeader fields
    segments: tuple[LogFile, ...]  # the segments to read
    start_offset: int  # the first log offset to apply (the checkpoint's end offset, or 0)
    target_offset: int | None  # the last offset to apply; None: to the end of the log
    target_time: datetime | None
    warnings: list[str]
    read: dict[str, FileRead] = field(default_factory=dict)
    last_offset: int | None = None  # the last log offset yielded so far

    def snapshot_records(self) -> Iterator[Record]:
        """The checkpoint's records (SnapshotHeader … SnapshotFooter, offsets from 0); none without a checkpoint."""
        if self.checkpoint is None:
            return
        stats = self._stats(self.checkpoint.path, "checkpoint")
        for batch in self.checkpoint.batches():
            stats.count(batch)
            yield from batch.records

    def log_records(self) -> Iterator[Record]:
        """The log records from ``start_offset`` to the target, checked for gaps between batches and segments."""
        start, target = self.start_offset, self.target_offset
        expected: int | None = None
        for segment in self.segments:
            stats = self._stats(segment.path, "log")
            first_in_segment = True
            skip_to = start if segment.base_offset < start else None
            for batch in segment.batches(from_offset=skip_to, stop_offset=target):
                if first_in_segment and skip_to is None and batch.base_offset != segment.base_offset:
                    raise MetadataDirError(f"{segment.path}: its first batch is at offset {batch.base_offset}, its "
                                           f"name says {segment.base_offset}; the segment is not Kafka's")
                if expected is not None and batch.base_offset != expected:
                    raise MetadataDirError(f"{segment.path}: offsets {expected}–{batch.base_offset - 1} are missing "
                                           "from the log (a segment was deleted or not copied); copy the whole "
                                           "__cluster_metadata-0 folder, or audit an offset before the gap")
                first_in_segment = False
                expected = batch.last_offset + 1
                stats.count(batch)
                if batch.last_offset < start:
                    continue
                for record in batch.records:
                    if record.offset < start:
                        continue
                    if target is not None and record.offset > target:
                        return
                    self.last_offset = record.offset
                    yield record
        if target is not None and (self.last_offset is None or self.last_offset < target) and target >= start:
            raise MetadataDirError(f"{self.directory.partition}: the log ends at offset {self.last_offset}, before "
                                   f"the target offset {target}")

    def records(self) -> Iterator[Record]:
        """``snapshot_records()`` then ``log_records()``."""
        yield from self.snapshot_records()
        yield from self.log_records()

    def _stats(self, path: Path, kind: str) -> FileRead:
        key = str(path)
        if key not in self.read:
            self.read[key] = FileRead(key, kind, path.stat().st_size)
        return self.read[key]

    def manifest(self) -> dict[str, Any]:
        """What was read and why, JSON-ready: the directory, the checkpoint, the target, every file read."""
        directory = self.directory
        checkpoint = None
        if self.checkpoint is not None:
            checkpoint = {"file": str(self.checkpoint.path), "end_offset": self.checkpoint.end_offset,
                          "epoch": self.checkpoint.epoch,
                          "last_contained_timestamp": (self.snapshot_header or {}).get("LastContainedLogTimestamp")}
        return {
            "directory": str(directory.root), "partition": str(directory.partition),
            "meta_properties": directory.meta_properties, "quorum_state": directory.quorum_state,
            "log_start_offset": directory.log_start_offset,
            "checkpoints": [str(c.path.name) for c in directory.checkpoints],
            "checkpoint": checkpoint, "start_offset": self.start_offset, "target_offset": self.target_offset,
            "target_time": self.target_time.isoformat() if self.target_time else None,
            "last_offset": self.last_offset,
            "files": [{**vars(stats), "epochs": sorted(stats.epochs)} for stats in self.read.values()],
            "undecodable": sum(stats.undecodable for stats in self.read.values()),
            "warnings": list(self.warnings),
        }


def plan_replay(path: str | Path | MetadataDir, *, at_offset: int | None = None,
                at_time: datetime | None = None) -> ReplayPlan:
    """The plan that rebuilds the image after offset ``at_offset`` / at time ``at_time`` (both: the earlier),
    or at the end of the log. Raises MetadataDirError when the files cannot."""
    return _plan(path, at_offset=at_offset, at_time=at_time, check_reach=True)


def _plan(path: str | Path | MetadataDir, *, at_offset: int | None, at_time: datetime | None,
          check_reach: bool) -> ReplayPlan:
    """``plan_replay``; with ``check_reach=False`` a target the log does not reach is not an error (a history)."""
    directory = path if isinstance(path, MetadataDir) else open_metadata_dir(path)
    warnings: list[str] = []
    if at_offset is not None and at_offset < 0:
        raise MetadataDirError(f"at_offset {at_offset}: an offset is 0 or more")
    target = at_offset
    if at_time is not None:
        if at_time.tzinfo is None:  # naive: UTC, as the CLI and DAG params read it
            at_time = at_time.replace(tzinfo=UTC)
        by_time = _offset_at_time(directory, int(at_time.timestamp() * 1000), warnings)
        target = by_time if target is None else min(target, by_time)
    checkpoint, header = _choose_checkpoint(directory, target, warnings)
    start = checkpoint.end_offset if checkpoint is not None and checkpoint.end_offset is not None else 0
    log_start = directory.log_start_offset
    needs_log = target is None or target >= start
    if checkpoint is None:
        if log_start is None:
            raise MetadataDirError(f"{directory.partition}: no usable checkpoint and no log segment; "
                                   + "; ".join(warnings))
        if log_start > 0:
            oldest = directory.checkpoints[0].end_offset if directory.checkpoints else None
            what = (f"the oldest checkpoint ends at offset {oldest}, after the target {target}" if oldest is not None
                    and target is not None and oldest > target + 1 else "no usable .checkpoint covers them")
            raise MetadataDirError(f"{directory.partition}: the log starts at offset {log_start}, so offsets "
                                   f"0–{log_start - 1} are only in snapshots, and {what}; copy the .checkpoint files "
                                   f"with the log, or audit an offset of {_oldest_state(directory)} or later")
    elif needs_log and log_start is not None and log_start > start:
        raise MetadataDirError(f"{directory.partition}: checkpoint {checkpoint.path.name} ends at offset {start} but "
                               f"the log starts at {log_start}: offsets {start}–{log_start - 1} are missing")
    segments = _segments_between(directory.segments, start, target) if needs_log else ()
    if target is not None and needs_log and check_reach:
        _check_log_reaches(segments, target, directory)
    return ReplayPlan(directory, checkpoint, header, segments, start, target, at_time, warnings)


def plan_history(path: str | Path | MetadataDir) -> ReplayPlan:
    """The plan that replays everything the retained files hold: from the oldest state they can rebuild (offset 0,
    or the oldest usable checkpoint when the log's start was deleted) to the end of the log, for a history. A log
    that holds no record yet (a controller that wrote none) plans an empty replay."""
    directory = path if isinstance(path, MetadataDir) else open_metadata_dir(path)
    plan = _plan(directory, at_offset=_oldest_state(directory), at_time=None, check_reach=False)
    plan.target_offset = None
    plan.segments = _segments_between(directory.segments, plan.start_offset, None)
    return plan


def _oldest_state(directory: MetadataDir) -> int:
    """The lowest target offset the files can rebuild."""
    ends = [c.end_offset - 1 for c in directory.checkpoints if c.end_offset]
    if directory.log_start_offset == 0:
        ends.append(0)
    return min(ends, default=0)


def _choose_checkpoint(directory: MetadataDir, target: int | None,
                       warnings: list[str]) -> tuple[Checkpoint | None, dict[str, Any] | None]:
    """The newest valid checkpoint ending at or before ``target + 1``; the rejected ones noted in ``warnings``."""
    rejected: list[str] = []
    for checkpoint in reversed(directory.checkpoints):
        end = checkpoint.end_offset or 0
        if target is not None and end > target + 1:
            continue
        try:
            header = checkpoint.validate()
        except KraftLogError as exc:
            rejected.append(checkpoint.path.name)
            warnings.append(f"checkpoint {checkpoint.path.name} is unusable ({exc.what}): passed over")
            continue
        if rejected:
            warnings.append(f"using the older checkpoint {checkpoint.path.name} instead of {', '.join(rejected)}: "
                            "more log records are replayed")
        return checkpoint, header.fields
    if rejected:
        warnings.append("no usable checkpoint: the log is replayed from its start")
    return None, None


def _segments_between(segments: tuple[LogFile, ...], start: int, target: int | None) -> tuple[LogFile, ...]:
    """The segments holding offsets ``start``…``target``: the last one starting at or before ``start``, on."""
    first = 0
    for index, segment in enumerate(segments):
        if segment.base_offset <= start:
            first = index
    return tuple(s for s in segments[first:] if target is None or s.base_offset <= target)


def _check_log_reaches(segments: tuple[LogFile, ...], target: int, directory: MetadataDir) -> None:
    """Raises when the log ends before ``target`` (only the last segment's headers are read, up to the target)."""
    if not segments:
        raise MetadataDirError(f"{directory.partition}: no log segment holds offset {target}")
    last = None
    for batch in segments[-1].batches(from_offset=target, stop_offset=target, decode=False):
        last = batch.last_offset
        if last >= target:
            return
    if last is None:  # every batch ends before the target: the log's last offset, for the message
        for batch in segments[-1].batches(decode=False):
            last = batch.last_offset
    raise MetadataDirError(f"{directory.partition}: the target offset {target} is beyond the files: the log ends at "
                           f"offset {last}; copy the directory again, or audit an offset up to {last}")


def _offset_at_time(directory: MetadataDir, limit_ms: int, warnings: list[str]) -> int:
    """The offset of the last record stamped at or before ``limit_ms`` (in offset order, stopping at the first
    later one); before the log, the newest checkpoint whose last contained record is at or before it."""
    last = _log_offset_at_time(directory.segments, limit_ms)
    if last is not None:
        return last
    for checkpoint in reversed(directory.checkpoints):
        try:
            header = checkpoint.validate()
        except KraftLogError:
            continue
        if header.fields["LastContainedLogTimestamp"] <= limit_ms and checkpoint.end_offset:
            return checkpoint.end_offset - 1
    moment = datetime.fromtimestamp(limit_ms / 1000, UTC).isoformat()
    raise MetadataDirError(f"{directory.partition}: --at-time {moment} is before the oldest state the files hold "
                           "(the first log record and every checkpoint are later); older files are needed")


def _log_offset_at_time(segments: tuple[LogFile, ...], limit_ms: int) -> int | None:
    first = None
    for index, segment in enumerate(segments):  # skip the segments whose first batch is after the limit
        with segment.path.open("rb") as handle:
            head = handle.read(HEADER.size)
        if len(head) == HEADER.size and HEADER.unpack(head)[7] <= limit_ms:
            first = index
    if first is None:
        return None
    last = None
    for segment in segments[first:]:
        data = read_bytes(segment.path)
        for batch in iter_batches(data, str(segment.path), decode=False):
            if batch.max_timestamp <= limit_ms:
                last = batch.last_offset
                continue
            if batch.base_timestamp <= limit_ms:  # a batch straddling the limit: read its records' own stamps
                for record in read_batch(data, batch.position, str(segment.path)).records:
                    if record.timestamp > limit_ms:
                        break
                    last = record.offset
            return last
    return last
