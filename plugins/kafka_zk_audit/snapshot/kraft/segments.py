"""The files of ``__cluster_metadata-0``: log segments (``%020d.log``) and snapshots (``%020d-%010d.checkpoint``).

A segment is batches back to back from its base offset (the name). A checkpoint is a snapshot of the image made by
every record below its end offset (the name, exclusive), at the epoch in the name: a control batch opening with
SnapshotHeader, data batches whose offsets count from 0, and a last control batch holding only SnapshotFooter
(``RecordsSnapshotWriter``). ``bootstrap.checkpoint`` (in the metadata.log.dir) has the same layout. The writers
here make both, for tests and benchmarks; their output is the byte layout Kafka writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk_audit.snapshot.kraft.batches import (
    Batch,
    KraftLogError,
    MetadataRecord,
    Record,
    Undecodable,
    build_batch,
    iter_batches,
    seek_offset,
)
from kafka_zk_audit.snapshot.kraft.records import CONTROL_TYPE_IDS

SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
CHECKPOINT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_NAME = "bootstrap.checkpoint"
SNAPSHOT_HEADER = CONTROL_TYPE_IDS["SnapshotHeaderRecord"]
SNAPSHOT_FOOTER = CONTROL_TYPE_IDS["SnapshotFooterRecord"]


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def checkpoint_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


@dataclass(frozen=True)
class LogFile:
    """A ``%020d.log`` segment; ``base_offset`` is the number in its name."""

    path: Path
    base_offset: int

    @classmethod
    def at(cls, path: str | Path) -> LogFile:
        path = Path(path)
        match = SEGMENT_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path.name} is not a log segment name (20 digits + .log)")
        return cls(path, int(match.group(1)))

    def batches(self, *, from_offset: int | None = None, stop_offset: int | None = None,
                decode: bool = True) -> Iterator[Batch]:
        """Its batches in order, from the one holding ``from_offset`` (the ones before are skipped unread) to the one
        holding ``stop_offset``; raises KraftLogError."""
        data = read_bytes(self.path)
        start = seek_offset(data, from_offset) if from_offset is not None else 0
        yield from iter_batches(data, str(self.path), start=start, stop_offset=stop_offset, decode=decode)

    def records(self, *, stop_offset: int | None = None) -> Iterator[Record]:
        for batch in self.batches(stop_offset=stop_offset):
            yield from batch.records


@dataclass(frozen=True)
class Checkpoint:
    """A snapshot file: ``end_offset``/``epoch`` from its name (``bootstrap.checkpoint``: both None)."""

    path: Path
    end_offset: int | None
    epoch: int | None
    _batches: list[Batch] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def at(cls, path: str | Path) -> Checkpoint:
        path = Path(path)
        if path.name == BOOTSTRAP_NAME:
            return cls(path, None, None)
        match = CHECKPOINT_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path.name} is not a checkpoint name (20-digit end offset - 10-digit epoch .checkpoint)")
        return cls(path, int(match.group(1)), int(match.group(2)))

    @property
    def bootstrap(self) -> bool:
        return self.end_offset is None

    def batches(self) -> list[Batch]:
        """Every batch, read and checked once (magic, CRC, framing; not yet the header/footer shape)."""
        if not self._batches:
            self._batches.extend(iter_batches(read_bytes(self.path), str(self.path)))
        return self._batches

    def records(self) -> Iterator[Record]:
        for batch in self.batches():
            yield from batch.records

    def validate(self) -> MetadataRecord:
        """Checks the snapshot's shape and returns its SnapshotHeader; raises KraftLogError when it is unusable."""
        batches = self.batches()
        name = str(self.path)
        if not batches:
            raise KraftLogError(name, 0, None, "the checkpoint is empty", _REPLACE)
        first, last = batches[0], batches[-1]
        header = first.records[0] if first.records else None
        if not (first.control and isinstance(header, MetadataRecord) and header.api_key == SNAPSHOT_HEADER):
            raise KraftLogError(name, 0, first.base_offset, "the first record is not a SnapshotHeader", _REPLACE)
        footer = last.records
        if not (last.control and len(footer) == 1 and isinstance(footer[0], MetadataRecord)
                and footer[0].api_key == SNAPSHOT_FOOTER):
            raise KraftLogError(name, last.position, last.base_offset, "the last batch is not a lone SnapshotFooter "
                                "(the snapshot was not finished)", _REPLACE)
        expected = 0
        for batch in batches:
            if batch.base_offset != expected:
                raise KraftLogError(name, batch.position, batch.base_offset, f"a batch at offset {batch.base_offset} "
                                    f"where the snapshot's offset {expected} was expected", _REPLACE)
            expected = batch.last_offset + 1
        return header


_REPLACE = "the snapshot is unusable: an older .checkpoint or the log from offset 0 is needed instead"


def read_log(path: str | Path) -> Iterator[Record]:
    """Every record of one ``.log`` or ``.checkpoint`` file, in file order (an Undecodable where decoding fails)."""
    for batch in iter_batches(read_bytes(Path(path)), str(path)):
        yield from batch.records


def read_bytes(path: Path) -> bytes:
    """A file's bytes; KraftLogError when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KraftLogError(str(path), 0, None, f"cannot read the file ({exc.strerror})",
                            "check the path and its permissions") from exc


# -- writing -------------------------------------------------------------------------------------------------

RecordInput = MetadataRecord | Undecodable | tuple[int, int, dict[str, Any]] | bytes


def write_segment(directory: str | Path, batches: Iterable[bytes], base_offset: int | None = None) -> Path:
    """Writes batches (from ``build_batch``) as a segment named after ``base_offset`` (default: the first batch's)."""
    data = b"".join(batches)
    if base_offset is None:
        base_offset = int.from_bytes(data[:8], "big", signed=True) if data else 0
    path = Path(directory) / segment_name(base_offset)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_checkpoint(path: str | Path, records: Iterable[RecordInput], end_offset: int, epoch: int, *,
                     timestamp: int = 0, last_contained_timestamp: int | None = None,
                     batch_records: int = 1024, control_records: Iterable[RecordInput] = ()) -> Path:
    """Writes a snapshot as ``RecordsSnapshotWriter`` does: header batch, data batches, footer batch.

    ``path`` is the file, or a directory to write ``checkpoint_name(end_offset, epoch)`` into. ``records`` are the
    image's metadata records, ``control_records`` extra header-batch records (KRaftVersion, Voters).
    """
    target = Path(path)
    if target.is_dir():
        target = target / checkpoint_name(end_offset, epoch)
    contained = timestamp if last_contained_timestamp is None else last_contained_timestamp
    header = [(SNAPSHOT_HEADER, 0, {"Version": 0, "LastContainedLogTimestamp": contained}), *control_records]
    batches = [build_batch(header, 0, epoch, timestamp, control=True)]
    offset = len(header)
    chunk: list[RecordInput] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == batch_records:
            batches.append(build_batch(chunk, offset, epoch, timestamp))
            offset += len(chunk)
            chunk = []
    if chunk:
        batches.append(build_batch(chunk, offset, epoch, timestamp))
        offset += len(chunk)
    batches.append(build_batch([(SNAPSHOT_FOOTER, 0, {"Version": 0})], offset, epoch, timestamp, control=True))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(batches))
    return target
