"""A cluster's ZooKeeper files on the worker: over SFTP (Airflow's SFTP provider and an Airflow connection), from
an fsspec URL, or a local folder in place; :func:`cluster_zookeeper_files` is what the snapshot and history tasks use.

The SFTP connection (conn type ``sftp``) holds the host, the user and the key file or password; none of them is
logged or passed on a command line. Only what a rebuild needs is fetched (``kafka_zk_audit.snapshot.files.sources``
decides what), into a temporary directory removed after use.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from airflow.providers.sftp.hooks.sftp import SFTPHook
from paramiko import SSHException

from kafka_zk_audit.snapshot.files.sources import (
    FilesSourceError,
    RemoteFile,
    StagedFiles,
    stage,
    staging_dir,
    zookeeper_files,
)

SNAPSHOT_PREFIX = "snapshot."


class SftpStore:
    """A ``FileStore`` over an open paramiko SFTP client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def list(self, directory: str) -> list[RemoteFile]:
        return [
            RemoteFile(
                entry.filename,
                stat.S_ISDIR(entry.st_mode or 0),
                entry.st_size,
                datetime.fromtimestamp(entry.st_mtime, UTC) if entry.st_mtime is not None else None,
            )
            for entry in self.client.listdir_attr(directory)
        ]

    def open(self, directory: str, name: str) -> IO[bytes]:
        handle = self.client.open(f"{directory.rstrip('/')}/{name}", "rb")
        if name.startswith(SNAPSHOT_PREFIX):
            handle.prefetch()  # read whole: pipeline the requests (a log is read only up to its last record)
        return handle


def sftp_origin(sftp_conn_id: str, path: str) -> str:
    """How files on an SFTP connection's server are named in logs and manifests: ``<conn id>:<path>``."""
    return f"{sftp_conn_id}:{path}"


def _fetched_over_sftp(sftp_conn_id: str, origin: str, staging: Path,
                       stage_with: Callable[[SftpStore, Path], StagedFiles]) -> StagedFiles:
    """``stage_with(store, staging)`` over an SFTP connection closed once it returns; SFTP and SSH errors become a
    FilesSourceError naming the connection."""
    hook = SFTPHook(ssh_conn_id=sftp_conn_id)
    try:
        with hook.get_managed_conn() as client:
            return stage_with(SftpStore(client), staging)
    except FilesSourceError:
        raise
    except (OSError, SSHException) as exc:
        reason = getattr(exc, "strerror", None) or exc or type(exc).__name__
        raise FilesSourceError(f"{origin}: cannot fetch the files over SFTP ({reason}); check the "
                               f"connection {sftp_conn_id!r} and the paths") from None


@contextmanager
def sftp_zookeeper_files(sftp_conn_id: str, data_dir: str, *, log_dir: str | None = None,
                         at_zxid: int | None = None, at_time: datetime | None = None,
                         staging_parent: str | None = None, fallbacks: int = 1,
                         logs_to_end: bool = False) -> Iterator[StagedFiles]:
    """The ZooKeeper files under ``data_dir`` (and ``log_dir``) on the server of ``sftp_conn_id``, fetched for
    the ``with`` block into a temporary directory; the connection is closed once they are fetched."""
    origin = sftp_origin(sftp_conn_id, data_dir)
    with staging_dir(staging_parent) as staging:
        yield _fetched_over_sftp(sftp_conn_id, origin, Path(staging), lambda store, folder: stage(
            store, data_dir, folder, log_dir=log_dir, at_zxid=at_zxid, at_time=at_time, fallbacks=fallbacks,
            origin=origin, logs_to_end=logs_to_end))


def cluster_zookeeper_files(files: Mapping[str, str | None], *, at_zxid: int | None = None,
                            at_time: datetime | None = None,
                            logs_to_end: bool = False) -> AbstractContextManager[StagedFiles]:
    """The files of a cluster's ``files`` setting (``data_dir``, ``log_dir``, ``sftp_conn_id``) on this machine for
    a ``with`` block: fetched over SFTP when ``sftp_conn_id`` is set, else from the fsspec URL, a local folder in
    place. What is fetched is what a rebuild at the target needs (``logs_to_end``: and every log after it)."""
    data_dir, log_dir, sftp_conn_id = files["data_dir"], files.get("log_dir"), files.get("sftp_conn_id")
    if not data_dir:
        raise FilesSourceError("the cluster's files setting has no data_dir; give ZooKeeper's dataDir")
    if sftp_conn_id:
        return sftp_zookeeper_files(sftp_conn_id, data_dir, log_dir=log_dir, at_zxid=at_zxid, at_time=at_time,
                                    logs_to_end=logs_to_end)
    return zookeeper_files(data_dir, log_location=log_dir, at_zxid=at_zxid, at_time=at_time, logs_to_end=logs_to_end)


@contextmanager
def sftp_kraft_files(sftp_conn_id: str, metadata_dir: str) -> Iterator[StagedFiles]:
    """A KRaft metadata directory on the server of ``sftp_conn_id``, fetched for the ``with`` block into a temporary
    directory; the connection is closed once the files are fetched."""
    from kafka_zk_audit.snapshot.kraft.sources import stage_kraft

    origin = sftp_origin(sftp_conn_id, metadata_dir)
    with staging_dir() as staging:
        yield _fetched_over_sftp(sftp_conn_id, origin, Path(staging),
                                 lambda store, folder: stage_kraft(store, metadata_dir, folder, origin))


def cluster_kraft_files(kraft: Mapping[str, str | None]) -> AbstractContextManager[StagedFiles]:
    """The metadata directory of a cluster's ``kraft`` setting (``metadata_dir``, ``sftp_conn_id``) on this machine
    for a ``with`` block: over SFTP when ``sftp_conn_id`` is set, else from the fsspec URL or the local folder."""
    from kafka_zk_audit.snapshot.kraft.sources import kraft_files

    metadata_dir, sftp_conn_id = kraft.get("metadata_dir"), kraft.get("sftp_conn_id")
    if not metadata_dir:
        raise FilesSourceError("the cluster's kraft setting has no metadata_dir; give a controller's metadata.log.dir")
    if sftp_conn_id:
        return sftp_kraft_files(sftp_conn_id, metadata_dir)
    return kraft_files(metadata_dir)
