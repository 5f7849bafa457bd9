"""The migration diff of a paired cluster in the DAG: its ZooKeeper snapshot against the KRaft log its migration wrote.

Right after the snapshot task wrote a migrating cluster's ZooKeeper snapshot, ``prepare_snapshot`` reads that
snapshot back from the warehouse (its secrets fingerprinted already, broker passwords decoded first when the brokers'
``password.encoder.secret`` was given), replays the cluster's KRaft metadata directory (read-only, offline) to the
offset ``/migration`` names and lays both sides out as entries under the release's mapping rules
(``diff.prepare_migration``), fingerprinting the KRaft side with the warehouse key. The entries go to the keyed table
``tables/migration_entries/snapshot_id=<id>/side=<zk|kraft>/``, and the prepared verdict
(offset, lag, the state findings, notes; ``status`` ``prepared``) to ``runs/<snapshot id>/migration_diff.json``. The
audit then compares the entries of every paired snapshot of its batch in one Spark plan (``audit.paired``), completes
the verdict and merges its findings into the snapshot's. A KRaft side that cannot be read gives an unverified verdict
with a ``migration_unverifiable`` finding (``write_unverified``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.migration_checks import ENTRY_FIELDS, INT_ENTRY_FIELDS, PREPARED, SIDES, UNVERIFIED
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.migration.compare import Finding
from kafka_zk_audit.snapshot.migration.diff import LagLimits, Prepared, prepare_migration
from kafka_zk_audit.snapshot.migration.mapping import Entry
from kafka_zk_audit.snapshot.migration.tree import ZkNode
from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder
from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key

log = logging.getLogger(__name__)

DEFAULT_RELEASE = "3.9"  # the settings' default (clusters[].migration.release)
TREE_COLUMNS = ["path", "data", "version", "mzxid", "mtime"]
ENTRIES_FILE = "part-0.parquet"


def entries_schema() -> Any:
    """The Arrow schema of the entries table's files: the entry's fields (the side is the folder)."""
    import pyarrow as pa

    return pa.schema([(name, pa.int32() if name in INT_ENTRY_FIELDS else pa.string()) for name in ENTRY_FIELDS])


def snapshot_tree(warehouse: Warehouse, snapshot_id: str, fingerprinter: Fingerprinter | None = None,
                  ) -> dict[str, ZkNode]:
    """The znodes of a stored snapshot (paths relative to its chroot), read on this machine; ``fingerprinter``
    scrubs secrets a snapshot with ``copy_secrets`` kept in clear text."""
    import pyarrow.parquet as pq

    fs = warehouse.fs
    tree: dict[str, ZkNode] = {}
    for path in sorted(fs.ls(warehouse.fs_path(warehouse.snapshot_dir(snapshot_id)), detail=False)):
        if not path.endswith(".parquet") or path.rsplit("/", 1)[-1].startswith(("_", ".")):
            continue
        with fs.open(path, "rb") as handle:
            rows = pq.read_table(handle, columns=TREE_COLUMNS).to_pydict()
        for znode, data, version, mzxid, mtime in zip(*(rows[c] for c in TREE_COLUMNS), strict=True):
            if fingerprinter is not None:
                data, _ = fingerprinter.scrub(znode, data)
            tree[znode] = ZkNode(data, version or 0, mzxid or 0, mtime or 0)
    return tree


def write_entries(warehouse: Warehouse, snapshot_id: str, zk: list[Entry], kraft: list[Entry]) -> None:
    """Both sides' entries as the snapshot's folder of the entries table, one ``side=`` folder each (an earlier one
    replaced): the audit reads each side's files only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = warehouse.migration_entries_dir(snapshot_id)
    warehouse.remove(folder)
    for side, entries in zip(SIDES, (zk, kraft), strict=True):
        columns = {name: [getattr(entry, name) for entry in entries] for name in ENTRY_FIELDS}
        warehouse.fs.makedirs(warehouse.fs_path(f"{folder}/side={side}"), exist_ok=True)
        with warehouse.fs.open(warehouse.fs_path(f"{folder}/side={side}/{ENTRIES_FILE}"), "wb") as handle:
            pq.write_table(pa.table(columns, schema=entries_schema()), handle)


def _limits(migration: Mapping[str, Any]) -> LagLimits:
    return LagLimits(int(migration.get("max_lag_records", LagLimits.records)),
                     int(migration.get("max_lag_ms", LagLimits.ms)))


def prepared_verdict(snapshot_id: str, cluster: str | None, prepared: Prepared, limits: LagLimits,
                     ) -> dict[str, Any]:
    """The verdict before the audit compares the entries: where it stood, the state findings, the notes."""
    return {"snapshot_id": snapshot_id, "cluster": cluster, "status": PREPARED, "release": prepared.release,
            "offset": prepared.offset, "log_end_offset": prepared.log_end_offset,
            "migration_state": prepared.migration_state, "lag_records": prepared.lag_records,
            "lag_ms": prepared.lag_ms, "max_lag_records": limits.records, "max_lag_ms": limits.ms,
            "verified": False, "equal": {}, "notes": list(prepared.notes), "error": None,
            "entries": {"zk": len(prepared.zk), "kraft": len(prepared.kraft)},
            "findings": [finding.as_row() for finding in prepared.findings],
            "summary": "migration diff prepared: the audit compares the two sides"}


def prepare_snapshot(warehouse: Warehouse, manifest: Mapping[str, Any], migration: Mapping[str, Any],
                     kraft_dir: str | Path, secrets_in_clear: bool = False,
                     decoder: PasswordDecoder | None = None) -> dict[str, Any]:
    """Lay out the snapshot of ``manifest`` and the KRaft directory (on this machine) under the ``migration``
    target (``snapshot.targets.migration_target``) for the audit's diff; write and return the prepared verdict.
    ``decoder``: the brokers' password.encoder.secret the snapshot was taken with (a copied snapshot's passwords
    are decoded here)."""
    snapshot_id = manifest["snapshot_id"]
    fingerprinter = Fingerprinter(warehouse_key(warehouse), decoder)
    tree = snapshot_tree(warehouse, snapshot_id, fingerprinter if secrets_in_clear else None)
    limits = _limits(migration)
    prepared = prepare_migration(tree, kraft_dir, str(migration.get("release") or DEFAULT_RELEASE),
                                 fingerprinter.fingerprint, limits, decoding=decoder is not None)
    write_entries(warehouse, snapshot_id, prepared.zk, prepared.kraft)
    verdict = prepared_verdict(snapshot_id, manifest.get("cluster"), prepared, limits)
    warehouse.write_json(warehouse.migration_diff_path(snapshot_id), verdict)
    log.info("%s: migration diff prepared at offset %s (%d ZooKeeper, %d KRaft entries; %d state finding(s))",
             snapshot_id, prepared.offset, len(prepared.zk), len(prepared.kraft), len(prepared.findings))
    return verdict


def unverifiable_finding(error: str, where: str | None) -> Finding:
    """The finding that alerts when a pair could not be compared."""
    return Finding("migration_unverifiable", path=where or "/migration",
                   detail=f"the migration could not be verified against the KRaft log at {where or '?'}: {error}")


def write_unverified(warehouse: Warehouse, manifest: Mapping[str, Any], migration: Mapping[str, Any],
                     error: str, where: str | None = None) -> dict[str, Any]:
    """The verdict of a pair whose KRaft side could not be read or compared: no comparison, the reason why and a
    ``migration_unverifiable`` finding (``where``: the KRaft directory as the settings name it)."""
    limits = _limits(migration)
    verdict = {"snapshot_id": manifest["snapshot_id"], "cluster": manifest.get("cluster"), "status": UNVERIFIED,
               "release": str(migration.get("release") or DEFAULT_RELEASE), "verified": False,
               "max_lag_records": limits.records, "max_lag_ms": limits.ms,
               "findings": [unverifiable_finding(error, where).as_row()], "equal": {}, "notes": [],
               "summary": f"migration not verified: {error}", "error": error}
    warehouse.remove(warehouse.migration_entries_dir(manifest["snapshot_id"]))
    warehouse.write_json(warehouse.migration_diff_path(manifest["snapshot_id"]), verdict)
    return verdict


def kraft_location(migration: Mapping[str, Any]) -> str:
    """The KRaft directory as the settings name it (``<sftp conn id>:<path>`` over SFTP): no credentials."""
    where = str(migration.get("metadata_dir") or "?")
    return f"{migration['sftp_conn_id']}:{where}" if migration.get("sftp_conn_id") else where


def prepare_migration_of(warehouse: Warehouse, manifest: Mapping[str, Any], migration: Mapping[str, Any],
                         fetch: Callable[[Mapping[str, Any]], AbstractContextManager[Any]], *,
                         decoder: PasswordDecoder | None = None, secrets_in_clear: bool = False,
                         task_log: Any = None) -> dict[str, Any]:
    """Fetch the paired cluster's KRaft directory (``fetch(migration)``: read-only, staged on this machine) and
    ``prepare_snapshot``; when it cannot be read or laid out, the verdict is unverified, with its finding (the
    ZooKeeper snapshot stands: its own audit goes on)."""
    out = task_log or log
    try:
        with fetch(migration) as staged:
            out.info("migration diff of %s against the KRaft log at %s (Kafka %s): laying out both sides",
                     manifest["snapshot_id"], staged.origin, migration.get("release"))
            return prepare_snapshot(warehouse, manifest, migration, staged.data_dir, secrets_in_clear, decoder)
    except Exception as error:
        reason = f"{type(error).__name__}: {error}"
        out.exception("the migration diff of %s cannot be prepared: %s", manifest["snapshot_id"], reason)
        return write_unverified(warehouse, manifest, migration, reason, kraft_location(migration))
