"""The warehouse layout of the contract, on a local path or any fsspec/Spark URL.

```
<warehouse>/snapshots/snapshot_id=<id>/…        one row per znode, _MANIFEST.json written last
<warehouse>/tables/<table>/snapshot_id=<id>/…   normalized and audit tables
<warehouse>/findings/snapshot_id=<id>/…         findings
<warehouse>/runs/<id>/summary.json              run summary
<warehouse>/data_docs/index.html                Great Expectations Data Docs
```
A snapshot without its ``_MANIFEST.json`` does not exist for any reader.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import fsspec

MANIFEST = "_MANIFEST.json"
SNAPSHOT_ID_RE = re.compile(r"^\d{8}T\d{6}Z(-[A-Za-z0-9_.-]+)?$")
WAREHOUSE_ENV = "KAFKA_ZK_AUDIT_WAREHOUSE"
ZOOKEEPER_DEFAULT_PORT = 2181
_HAS_PORT = re.compile(r"(^[^:\[]+|\])(:\d+)$")


def default_warehouse() -> str:
    return os.environ.get(WAREHOUSE_ENV) or os.path.abspath("warehouse")


def new_snapshot_id(now: datetime | None = None, suffix: str = "") -> str:
    """``YYYYMMDDTHHMMSSZ`` of the UTC start time, optionally ``-suffix``; ids sort in time order."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{suffix}" if suffix else stamp


def validate_snapshot_id(snapshot_id: str) -> str:
    if not SNAPSHOT_ID_RE.match(snapshot_id):
        raise ValueError(f"snapshot id {snapshot_id!r} is not YYYYMMDDTHHMMSSZ[-suffix]")
    return snapshot_id


def fsspec_url(url: str) -> str:
    """Spark's ``s3a://`` is fsspec's ``s3://``; everything else is the same."""
    return "s3://" + url[len("s3a://"):] if url.startswith("s3a://") else url


@dataclass(frozen=True)
class Warehouse:
    """Paths of the contract's layout under one root (local path or URL)."""

    root: str

    def __post_init__(self) -> None:
        root = self.root.rstrip("/")
        if "://" not in root:
            root = os.path.abspath(root)
        object.__setattr__(self, "root", root)

    @property
    def is_local(self) -> bool:
        """A path on this machine (plain or ``file://``), where locks and atomic creates work."""
        return "://" not in self.root or self.root.startswith("file://")

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        fs, _ = fsspec.core.url_to_fs(fsspec_url(self.root))
        return fs

    def fs_path(self, url: str) -> str:
        """The path of ``url`` as the fsspec filesystem names it."""
        return fsspec.core.url_to_fs(fsspec_url(url))[1]

    def snapshot_dir(self, snapshot_id: str) -> str:
        return f"{self.root}/snapshots/snapshot_id={snapshot_id}"

    def history_dir(self, history_id: str | None = None) -> str:
        """Where the histories from ZooKeeper's files are (one folder each, ``history/<history_id>/``)."""
        return f"{self.root}/history/{history_id}" if history_id else f"{self.root}/history"

    def table_dir(self, table: str, snapshot_id: str | None = None) -> str:
        base = f"{self.root}/tables/{table}"
        return f"{base}/snapshot_id={snapshot_id}" if snapshot_id else base

    def findings_dir(self, snapshot_id: str | None = None) -> str:
        base = f"{self.root}/findings"
        return f"{base}/snapshot_id={snapshot_id}" if snapshot_id else base

    def run_dir(self, run_id: str) -> str:
        return f"{self.root}/runs/{run_id}"

    def summary_path(self, run_id: str) -> str:
        return f"{self.run_dir(run_id)}/summary.json"

    def migration_diff_path(self, snapshot_id: str) -> str:
        """A paired cluster's migration verdict for its ZooKeeper snapshot (snapshot.migration.paired)."""
        return f"{self.run_dir(snapshot_id)}/migration_diff.json"

    def migration_entries_dir(self, snapshot_id: str | None = None) -> str:
        """Both sides of a paired snapshot laid out for the audit's migration diff (``snapshot.migration.paired``):
        one keyed table, ``tables/migration_entries/snapshot_id=<id>/``, pruned with the snapshot's tables."""
        return self.table_dir("migration_entries", snapshot_id)

    def read_migration_diff(self, snapshot_id: str) -> dict[str, Any] | None:
        """That verdict, None when the snapshot's cluster is not paired with a KRaft log."""
        path = self.migration_diff_path(snapshot_id)
        return self.read_json(path) if self.exists(path) else None

    def alert_state_path(self, cluster: str) -> str:
        """A cluster's alert state: which findings fire (``alerts/<cluster>/state.json``)."""
        return f"{self.root}/alerts/{cluster}/state.json"

    def alerts_path(self, snapshot_id: str) -> str:
        """What the alerts of one audited snapshot found and sent (``runs/<id>/alerts.json``)."""
        return f"{self.run_dir(snapshot_id)}/alerts.json"

    @property
    def data_docs_dir(self) -> str:
        return f"{self.root}/data_docs"

    @property
    def data_docs_index(self) -> str:
        return f"{self.data_docs_dir}/index.html"

    def history_page(self, history_id: str | None = None) -> str:
        """A history's page inside the Data Docs site; without an id, the site's list of histories."""
        return f"{self.data_docs_dir}/history/{history_id or 'index'}.html"

    def manifest_path(self, snapshot_id: str) -> str:
        return f"{self.snapshot_dir(snapshot_id)}/{MANIFEST}"

    def read_json(self, url: str) -> dict[str, Any]:
        with self.fs.open(self.fs_path(url), "r") as handle:
            return json.load(handle)

    def write_text(self, url: str, text: str) -> None:
        """Write a text file so a reader sees the whole file or none (temp file, then move)."""
        fs, path = self.fs, self.fs_path(url)
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        tmp = f"{path}.tmp"
        with fs.open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        fs.mv(tmp, path)

    def write_json(self, url: str, payload: dict[str, Any]) -> None:
        """Write JSON so a reader sees the whole file or none (``write_text``)."""
        self.write_text(url, json.dumps(payload, indent=2, sort_keys=False) + "\n")

    def exists(self, url: str) -> bool:
        return self.fs.exists(self.fs_path(url))

    def complete_snapshots(self) -> list[str]:
        """Ids of the snapshots that have their manifest, oldest first."""
        base = self.fs_path(f"{self.root}/snapshots")
        if not self.fs.exists(base):
            return []
        ids = []
        for entry in self.fs.ls(base, detail=False):
            name = entry.rstrip("/").rsplit("/", 1)[-1]
            if name.startswith("snapshot_id=") and self.fs.exists(f"{entry.rstrip('/')}/{MANIFEST}"):
                ids.append(name.removeprefix("snapshot_id="))
        return sorted(ids)

    def audited_snapshots(self) -> list[str]:
        """Complete snapshots whose findings were written (the baselines for history checks)."""
        return [sid for sid in self.complete_snapshots() if self.exists(f"{self.findings_dir(sid)}/_SUCCESS")]

    def previous_audited(self, snapshot_id: str) -> str | None:
        """The baseline of ``snapshot_id``: the newest audited snapshot of the same ensemble and chroot
        that started before it (see ``choose_baseline``), or None."""
        return self.baselines([snapshot_id])[snapshot_id]

    def baselines(self, snapshot_ids: Iterable[str]) -> dict[str, str | None]:
        """``previous_audited`` of several snapshots, reading each audited snapshot's manifest once."""
        audited = [(sid, self.read_json(self.manifest_path(sid))) for sid in self.audited_snapshots()]
        return {
            snapshot_id: choose_baseline(snapshot_id, self.read_json(self.manifest_path(snapshot_id)),
                                         ((sid, m) for sid, m in audited if sid != snapshot_id))
            for snapshot_id in snapshot_ids
        }

    def claim_snapshot_dir(self, snapshot_id: str) -> bool:
        """Create the snapshot's directory for this writer alone; False when it exists (written or being written).

        Local warehouses claim with one ``mkdir`` (atomic: of two runs starting in the same second, one wins). An
        object store has no atomic create: there an existing prefix is refused, and ``max_active_runs=1`` keeps
        two runs of the DAG apart."""
        target = self.snapshot_dir(snapshot_id)
        if self.is_local:
            path = self.fs_path(target)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                os.mkdir(path)
            except FileExistsError:
                return False
            return True
        if self.exists(target):
            return False
        self.fs.makedirs(self.fs_path(target), exist_ok=True)
        return True

    def remove(self, url: str) -> None:
        path = self.fs_path(url)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)


def ensemble_identity(manifest: Mapping[str, Any]) -> str | None:
    """The ensemble a snapshot was taken of: its hosts lower-cased and sorted (a host without a port on
    ZooKeeper's 2181), then its chroot, e.g. ``zk1:2181,zk2:2181/kafka``; None when the manifest names
    no ensemble. A snapshot of a named cluster of the fleet is identified by that name instead
    (``cluster:prod-eu``), so its history survives a change of the ensemble's hosts."""
    if manifest.get("cluster") and manifest["cluster"] != "default":
        return f"cluster:{manifest['cluster']}"
    hosts = manifest.get("ensemble")
    if not hosts:
        return None
    servers = set()
    for host in str(hosts).split(","):
        host = host.strip().lower()
        if host:
            servers.add(host if _HAS_PORT.search(host) else f"{host}:{ZOOKEEPER_DEFAULT_PORT}")
    chroot = "/" + str(manifest.get("chroot") or "").strip("/")
    return ",".join(sorted(servers)) + ("" if chroot == "/" else chroot)


def _start_order(snapshot_id: str, manifest: Mapping[str, Any]) -> tuple[datetime, str]:
    """When a snapshot started: its manifest's ``started_at`` (else the time in its id), then its id."""
    started_at = manifest.get("started_at")
    if started_at:
        moment = datetime.fromisoformat(str(started_at))
    else:
        moment = datetime.strptime(snapshot_id[:16], "%Y%m%dT%H%M%SZ")
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)), snapshot_id


def choose_baseline(
    snapshot_id: str,
    manifest: Mapping[str, Any],
    audited: Iterable[tuple[str, Mapping[str, Any]]],
) -> str | None:
    """The baseline of a snapshot for the history checks: among the audited snapshots (id, manifest),
    the one of the same ensemble identity (``ensemble_identity``) that started last before it, so that
    two clusters sharing a warehouse are never compared with each other."""
    identity = ensemble_identity(manifest)
    start = _start_order(snapshot_id, manifest)
    earlier = [
        _start_order(sid, candidate)
        for sid, candidate in audited
        if ensemble_identity(candidate) == identity and _start_order(sid, candidate) < start
    ]
    return max(earlier)[1] if earlier else None


def manifest_znodes(manifest: Mapping[str, Any]) -> int:
    """A snapshot's znodes, as its manifest counts them (0 when it does not)."""
    return int(manifest.get("znodes") or 0)


def stored_znodes(warehouse: Warehouse, snapshot_ids: Iterable[str]) -> int:
    """The znodes of these stored snapshots, as their manifests count them (a snapshot without a readable manifest
    counts none)."""
    total = 0
    for snapshot_id in snapshot_ids:
        try:
            total += manifest_znodes(read_manifest(warehouse, snapshot_id))
        except (OSError, ValueError, TypeError):
            continue
    return total


def read_manifest(warehouse: Warehouse, snapshot_id: str) -> dict[str, Any]:
    """The manifest of a complete snapshot; ``FileNotFoundError`` when it is incomplete or absent."""
    path = warehouse.manifest_path(snapshot_id)
    if not warehouse.exists(path):
        raise FileNotFoundError(
            f"snapshot {snapshot_id} has no {MANIFEST} in {warehouse.root}: it is incomplete or absent"
        )
    return warehouse.read_json(path)
