"""Where a KRaft cluster's metadata directory comes from: a local folder (read in place), an fsspec URL or a host
over SFTP (both staged in a temporary folder, removed after use).

Only what a replay reads is copied: ``meta.properties``, ``quorum-state`` and ``bootstrap.checkpoint`` of the
``metadata.log.dir`` and, of ``__cluster_metadata-0/``, every log segment and ``.checkpoint``. Indexes, producer
snapshots and half-written checkpoints stay behind. The controller is never contacted: reading its files is all.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_zk_audit.snapshot.files.sources import (
    FilesSourceError,
    FileStore,
    FsspecStore,
    StagedFiles,
    check_location,
    safe_location,
    staging_dir,
)

METADATA_PARTITION = "__cluster_metadata-0"
ROOT_FILES = ("meta.properties", "quorum-state", "bootstrap.checkpoint")


def _wanted_in_partition(name: str) -> bool:
    return name.endswith(".log") or (name.endswith(".checkpoint") and name[:1].isdigit()) or name == "quorum-state"


def stage_kraft(store: FileStore, location: str, staging: Path, origin: str) -> StagedFiles:
    """Copy what a replay reads from ``location`` (the ``metadata.log.dir`` or its ``__cluster_metadata-0/``) on
    ``store`` into ``staging``; FilesSourceError naming the location when it holds no metadata log."""
    try:
        entries = store.list(location)
    except (OSError, FileNotFoundError) as exc:
        raise FilesSourceError(f"{origin}: cannot list the metadata directory ({exc}); check the path") from None
    names = {entry.name: entry for entry in entries}
    if METADATA_PARTITION in names and names[METADATA_PARTITION].is_dir:
        root, partition_dir = location, f"{location.rstrip('/')}/{METADATA_PARTITION}"
        partition_entries = store.list(partition_dir)
    elif any(_wanted_in_partition(name) for name in names):
        root, partition_dir, partition_entries = None, location, entries
    else:
        raise FilesSourceError(f"{origin}: no KRaft metadata log here (no {METADATA_PARTITION}/, no .log or "
                               ".checkpoint files); give a controller's metadata.log.dir")
    target = staging / METADATA_PARTITION
    target.mkdir(parents=True, exist_ok=True)
    staged = StagedFiles(str(staging), None, origin)
    copies = [(partition_dir, entry.name, target / entry.name) for entry in partition_entries
              if not entry.is_dir and _wanted_in_partition(entry.name)]
    if root is not None:
        copies += [(root, entry.name, staging / entry.name) for entry in entries
                   if not entry.is_dir and entry.name in ROOT_FILES]
    for directory, name, path in copies:
        with store.open(directory, name) as source, open(path, "wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
        staged.fetched.append(name)
        staged.bytes += path.stat().st_size
    return staged


@contextmanager
def kraft_files(location: str, *, staging_parent: str | None = None) -> Iterator[StagedFiles]:
    """A KRaft metadata directory on this machine for the ``with`` block: a local folder in place, a URL fetched
    into a temporary folder removed afterwards (``data_dir`` of the result is the folder to read)."""
    check_location(location)
    if "://" not in location:
        if not Path(location).is_dir():
            raise FilesSourceError(f"{location}: no such directory; give a KRaft controller's metadata.log.dir "
                                   f"(the folder holding {METADATA_PARTITION}/)")
        yield StagedFiles(location, None, location)
        return
    store = FsspecStore(location)
    with staging_dir(staging_parent) as staging:
        yield stage_kraft(store, location, staging, safe_location(location))
