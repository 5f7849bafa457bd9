"""The migration diff of a paired cluster in the DAG: its ZooKeeper snapshot against the KRaft log its migration wrote.

Right after the snapshot task wrote a migrating cluster's ZooKeeper snapshot, ``verify_snapshot`` reads that
snapshot back from the warehouse (its secrets fingerprinted already), replays the cluster's KRaft metadata directory
(read-only, offline) to the offset ``/migration`` names and compares the two under the release's mapping rules
(``diff.verify_migration``), fingerprinting the KRaft side with the warehouse key. The verdict (findings with both
sides' evidence, equal counts, offset, lag) is written as ``runs/<snapshot id>/migration_diff.json``; the audit merges
its findings into the snapshot's (``audit.job``) and the readiness page shows its chapter.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.migration.diff import LagLimits, verify_migration
from kafka_zk_audit.snapshot.migration.tree import ZkNode
from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key

log = logging.getLogger(__name__)

DEFAULT_RELEASE = "3.9"  # the settings' default (clusters[].migration.release)

TREE_COLUMNS = ["path", "data", "version", "mzxid", "mtime"]


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


def verify_snapshot(warehouse: Warehouse, manifest: Mapping[str, Any], migration: Mapping[str, Any],
                    kraft_dir: str | Path, secrets_in_clear: bool = False) -> dict[str, Any]:
    """Compare the snapshot of ``manifest`` with the KRaft directory (on this machine) under the ``migration``
    target (``snapshot.targets.migration_target``); write and return its verdict."""
    snapshot_id = manifest["snapshot_id"]
    fingerprinter = Fingerprinter(warehouse_key(warehouse))
    tree = snapshot_tree(warehouse, snapshot_id, fingerprinter if secrets_in_clear else None)
    limits = LagLimits(int(migration.get("max_lag_records", LagLimits.records)),
                       int(migration.get("max_lag_ms", LagLimits.ms)))
    verification = verify_migration(tree, kraft_dir, str(migration.get("release") or DEFAULT_RELEASE),
                                    fingerprinter.fingerprint, limits)
    verdict = {"snapshot_id": snapshot_id, "cluster": manifest.get("cluster"), **verification.as_dict(),
               "summary": verification.summary(), "max_lag_records": limits.records, "max_lag_ms": limits.ms,
               "error": None}
    warehouse.write_json(warehouse.migration_diff_path(snapshot_id), verdict)
    log.info("%s: %s", snapshot_id, verification.summary())
    return verdict


def write_unverified(warehouse: Warehouse, manifest: Mapping[str, Any], migration: Mapping[str, Any],
                     error: str) -> dict[str, Any]:
    """The verdict of a pair whose KRaft side could not be read or compared: no verdict, the reason why."""
    verdict = {"snapshot_id": manifest["snapshot_id"], "cluster": manifest.get("cluster"),
               "release": str(migration.get("release") or DEFAULT_RELEASE), "verified": False, "findings": [],
               "equal": {}, "notes": [], "summary": f"migration not verified: {error}", "error": error}
    warehouse.write_json(warehouse.migration_diff_path(manifest["snapshot_id"]), verdict)
    return verdict
