"""Where a cluster's ZooKeeper files come from: a local directory (read in place) or any fsspec URL.

A remote ``dataDir`` (and ``dataLogDir``) is staged in a temporary directory, removed after use, with only
what a rebuild needs: the newest snapshot at or before the target (plus ``fallbacks`` older ones, in case
it is corrupt) and every log from the last one that starts at or before the oldest of them. A log is
copied up to its last record: the zeros ZooKeeper preallocates after it (64 MiB blocks) stay behind.
The SFTP source (an Airflow connection) lives in ``kafka_zk_audit.airflow.hooks.zookeeper_files`` and
reuses :func:`stage` with its own :class:`FileStore`.
"""

from __future__ import annotations

import logging
import re
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

log = logging.getLogger(__name__)

VERSION_DIR = "version-2"
ZOOKEEPER_FILE = re.compile(r"^(snapshot|log)\.([0-9a-fA-F]+)(\.gz|\.snappy)?$")
LOG_MAGIC = b"ZKLG"
LOG_HEADER_BYTES = 16  # magic, version, dbid
RECORD_HEAD = struct.Struct(">qi")  # checksum, payload length
CHUNK_BYTES = 1 << 20


class FilesSourceError(ValueError):
    """The ZooKeeper files cannot be found or fetched; the message says where and what to do."""


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """One entry of a listed directory: its base name, size and modification time when the store says."""

    name: str
    is_dir: bool = False
    size: int | None = None
    mtime: datetime | None = None

    @property
    def kind(self) -> str | None:
        """``snapshot`` or ``log`` for ZooKeeper's files, else None."""
        match = ZOOKEEPER_FILE.match(self.name)
        if not match or self.is_dir or (match.group(1) == "log" and match.group(3)):
            return None
        return match.group(1)

    @property
    def zxid(self) -> int:
        """The zxid in the file's name (a snapshot's start, a log's first txn)."""
        return int(self.name.split(".")[1], 16)


class FileStore(Protocol):
    """A place ZooKeeper's files can be listed and read from."""

    def list(self, directory: str) -> list[RemoteFile]: ...

    def open(self, directory: str, name: str) -> IO[bytes]: ...


@dataclass(frozen=True)
class FetchPlan:
    """The files a rebuild needs: snapshots newest first, logs by start zxid."""

    snapshots: list[RemoteFile]
    logs: list[RemoteFile]


@dataclass
class StagedFiles:
    """ZooKeeper files ready for a rebuild: ``data_dir`` (and ``log_dir``) on this machine.

    ``origin`` names where they came from (safe to log and to record: no credentials, no query string);
    ``fetched`` lists the files copied and ``bytes`` their size (both empty for a local directory).
    """

    data_dir: str
    log_dir: str | None
    origin: str
    fetched: list[str] = field(default_factory=list)
    bytes: int = 0


def safe_location(location: str) -> str:
    """A path or URL without credentials or query string, fit for logs and manifests."""
    if "://" not in location:
        return location
    parts = urlsplit(location)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.username:
        host = f"{parts.username}@{host}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_location(location: str) -> None:
    """Refuse a URL that carries a password: it would reach process arguments and logs."""
    if "://" in location and urlsplit(location).password:
        raise FilesSourceError(
            f"{safe_location(location)}: the URL carries a password; give credentials the way the "
            "filesystem package reads them (its environment variables or config file), never in the URL"
        )


def parse_at_time(value: str | datetime | None) -> datetime | None:
    """An ISO 8601 moment (naive = UTC) as an aware datetime; None stays None."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    text = value.strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise FilesSourceError(f"at_time {value!r}: write an ISO 8601 time such as 2026-11-22T08:30:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_at_zxid(value: str | int | None) -> int | None:
    """A zxid given as a number or text (decimal, or hex with 0x); None or empty: no target."""
    if value is None or isinstance(value, int):
        return value
    text = value.strip()
    if not text:
        return None
    try:
        zxid = int(text, 0)
    except ValueError:
        raise FilesSourceError(f"at_zxid {value!r}: write a zxid in decimal or hex (0x...)") from None
    if zxid < 0:
        raise FilesSourceError(f"at_zxid {value!r}: a zxid is never negative")
    return zxid


def plan_fetch(entries: list[RemoteFile], log_entries: list[RemoteFile] | None = None, *,
               at_zxid: int | None = None, at_time: datetime | None = None, fallbacks: int = 1,
               logs_to_end: bool = False) -> FetchPlan:
    """What to fetch for a rebuild at the target (None: the newest state).

    Snapshots at or before the target (by name for ``at_zxid``; by modification time, when known, for
    ``at_time``): the newest and ``fallbacks`` older ones. Logs: the last starting at or before the oldest
    chosen snapshot, and every later one (for ``at_zxid``, none starting after it, unless ``logs_to_end``: a
    history reads every change after the target).
    """
    snapshots = sorted((e for e in entries if e.kind == "snapshot"), key=lambda e: e.zxid, reverse=True)
    logs = sorted((e for e in (entries if log_entries is None else log_entries) if e.kind == "log"),
                  key=lambda e: e.zxid)
    if at_zxid is not None:
        snapshots = [s for s in snapshots if s.zxid <= at_zxid]
    if at_time is not None:
        snapshots = [s for s in snapshots if s.mtime is None or s.mtime <= at_time]
    if not snapshots:
        target = "" if at_zxid is None and at_time is None else " at or before the target"
        raise FilesSourceError(f"no snapshot.<zxid> file{target} in these files; a rebuild starts from one "
                               "(check the directory: ZooKeeper's dataDir or its version-2/ folder)")
    chosen = snapshots[: 1 + max(fallbacks, 0)]
    oldest = chosen[-1].zxid
    start = max((i for i, entry in enumerate(logs) if entry.zxid <= oldest), default=0)
    needed = logs[start:]
    if at_zxid is not None and not logs_to_end:
        needed = [entry for entry in needed if entry.zxid <= at_zxid]
    return FetchPlan(chosen, needed)


class _Reader:
    """Buffered exact reads over a file-like object, in big chunks (each a round trip on a remote store)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.buffer = bytearray()

    def take(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.handle.read(max(CHUNK_BYTES, count - len(self.buffer)))
            if not chunk:
                break
            self.buffer += chunk
        taken = bytes(self.buffer[:count])
        del self.buffer[:count]
        return taken

    def rest(self) -> Iterator[bytes]:
        if self.buffer:
            yield bytes(self.buffer)
            self.buffer.clear()
        while chunk := self.handle.read(CHUNK_BYTES):
            yield chunk


def copy_log(source: IO[bytes], target: IO[bytes]) -> int:
    """Copy a transaction log up to its end marker (a zero-length record) or EOF; bytes written.

    Only the records' framing is followed (no checksums): anything unexpected (not a log, a negative length)
    copies the rest whole, so that the parser, not the copy, reports it.
    """
    reader = _Reader(source)
    written = 0

    def put(data: bytes) -> None:
        nonlocal written
        target.write(data)
        written += len(data)

    header = reader.take(LOG_HEADER_BYTES)
    put(header)
    if len(header) < LOG_HEADER_BYTES or not header.startswith(LOG_MAGIC):
        for chunk in reader.rest():
            put(chunk)
        return written
    while True:
        head = reader.take(RECORD_HEAD.size)
        put(head)
        if len(head) < RECORD_HEAD.size:
            return written
        _, length = RECORD_HEAD.unpack(head)
        if length == 0:
            return written  # the end marker: what follows is preallocated zeros
        if length < 0:
            for chunk in reader.rest():
                put(chunk)
            return written
        body = reader.take(length + 1)  # payload and the 0x42 end-of-record byte
        put(body)
        if len(body) < length + 1:
            return written


def _copy_whole(source: IO[bytes], target: IO[bytes]) -> int:
    written = 0
    while chunk := source.read(CHUNK_BYTES):
        target.write(chunk)
        written += len(chunk)
    return written


def _zookeeper_folder(store: FileStore, directory: str, origin: str) -> tuple[str, list[RemoteFile]]:
    """The folder holding the files (``directory`` or its ``version-2/``) and its listing."""
    try:
        entries = store.list(directory)
    except FileNotFoundError:
        raise FilesSourceError(f"{origin}: no such directory; give ZooKeeper's dataDir (or its version-2/)") from None
    except OSError as exc:
        raise FilesSourceError(f"{origin}: cannot list it ({exc.strerror or exc}); check the location and "
                               "the credentials") from None
    if not any(e.kind for e in entries) and any(e.is_dir and e.name == VERSION_DIR for e in entries):
        directory = f"{directory.rstrip('/')}/{VERSION_DIR}"
        entries = store.list(directory)
    return directory, entries


def stage(store: FileStore, data_dir: str, staging: Path, *, log_dir: str | None = None,
          log_store: FileStore | None = None, at_zxid: int | None = None, at_time: datetime | None = None,
          fallbacks: int = 1, origin: str | None = None, logs_to_end: bool = False) -> StagedFiles:
    """Fetch what a rebuild needs from ``store`` (logs from ``log_store``/``log_dir`` when the cluster keeps
    them apart) into ``staging/version-2``; the staged files."""
    origin = origin or data_dir
    log_store = log_store or store
    data_folder, entries = _zookeeper_folder(store, data_dir, origin)
    log_folder, log_entries = (
        (data_folder, entries) if not log_dir else _zookeeper_folder(log_store, log_dir, safe_location(log_dir))
    )
    plan = plan_fetch(entries, log_entries, at_zxid=at_zxid, at_time=at_time, fallbacks=fallbacks,
                      logs_to_end=logs_to_end)
    target = staging / VERSION_DIR
    target.mkdir(parents=True, exist_ok=True)
    staged = StagedFiles(str(staging), None, origin)
    wanted = [*((store, data_folder, s) for s in plan.snapshots), *((log_store, log_folder, lg) for lg in plan.logs)]
    for source_store, folder, entry in wanted:
        with source_store.open(folder, entry.name) as source, open(target / entry.name, "wb") as sink:
            copied = copy_log(source, sink) if entry.kind == "log" else _copy_whole(source, sink)
        staged.fetched.append(entry.name)
        staged.bytes += copied
    log.info("fetched %d ZooKeeper files (%d bytes) from %s: %s", len(staged.fetched), staged.bytes, origin,
             ", ".join(staged.fetched))
    return staged


class FsspecStore:
    """A :class:`FileStore` over an fsspec filesystem (``s3://``, ``gs://``, ``http(s)://``, ``file://`` …)."""

    def __init__(self, url: str) -> None:
        import fsspec
        from fsspec.core import split_protocol

        protocol = split_protocol(url)[0] or "file"
        try:
            fsspec.get_filesystem_class(protocol)
        except ImportError as exc:
            raise FilesSourceError(f"{safe_location(url)}: reading {protocol}:// URLs needs a package that is not "
                                   f"installed: {exc}. Install it in the environment that runs the audit") from None
        except ValueError:
            raise FilesSourceError(f"{safe_location(url)}: fsspec knows no protocol {protocol!r}") from None
        self.fs, _ = fsspec.core.url_to_fs(url)
        self.protocol = protocol

    def _path(self, directory: str) -> str:
        return directory if self.protocol in ("http", "https") else self.fs._strip_protocol(directory)

    def list(self, directory: str) -> list[RemoteFile]:
        path = self._path(directory)
        entries = []
        for info in self.fs.ls(path, detail=True):
            name = info["name"].rstrip("/").rsplit("/", 1)[-1]
            entries.append(RemoteFile(name, info.get("type") == "directory", info.get("size"), _mtime_of(info)))
        return entries

    def open(self, directory: str, name: str) -> IO[bytes]:
        return self.fs.open(f"{self._path(directory).rstrip('/')}/{name}", "rb")


def _mtime_of(info: dict[str, Any]) -> datetime | None:
    """The modification time in an fsspec listing entry, whatever the backend calls it."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified"):
        value = info.get(key)
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


@contextmanager
def staging_dir(parent: str | None = None) -> Iterator[Path]:
    """A fresh temporary directory (under ``parent`` when given), removed afterwards."""
    if parent:
        Path(parent).mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-files-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def zookeeper_files(location: str, *, log_location: str | None = None, at_zxid: int | None = None,
                    at_time: datetime | None = None, staging_parent: str | None = None,
                    fallbacks: int = 1, logs_to_end: bool = False) -> Iterator[StagedFiles]:
    """A cluster's ZooKeeper files on this machine for the ``with`` block: a local directory in place, a URL
    fetched (only what the rebuild at the target needs) into a temporary directory removed afterwards."""
    check_location(location)
    if log_location:
        check_location(log_location)
    if "://" not in location and (not log_location or "://" not in log_location):
        if not Path(location).is_dir():
            raise FilesSourceError(f"{location}: no such directory; give ZooKeeper's dataDir (or its version-2/)")
        yield StagedFiles(location, log_location, location)
        return
    store = FsspecStore(location)
    log_store = FsspecStore(log_location) if log_location else None
    with staging_dir(staging_parent) as staging:
        staged = stage(store, location, staging, log_dir=log_location, log_store=log_store, at_zxid=at_zxid,
                       at_time=at_time, fallbacks=fallbacks, origin=safe_location(location), logs_to_end=logs_to_end)
        yield staged
