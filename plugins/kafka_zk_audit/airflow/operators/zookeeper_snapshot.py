"""Snapshot a ZooKeeper tree into the warehouse: read-only against the audited cluster, or rebuilt from its files."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook, connection_settings
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
from kafka_zk_audit.snapshot.live import write_new_snapshot


class ZooKeeperSnapshotOperator(BaseOperator):
    """Walk the ensemble of ``zk_conn_id`` into ``<warehouse>/snapshots/``; returns the snapshot id.

    ``options`` is the whole ``SnapshotOptions``; the keyword arguments below override single fields of
    it (None keeps the default): how gently to read (``max_reads_in_flight``, ``max_bytes_in_flight``,
    ``reads_per_second``, ``batch_ops``), how long to try to resume after a fault (``max_reconnects``,
    ``reconnect_timeout_s``), whether to copy secrets instead of fingerprinting them (``copy_secrets``) and over
    how many connections to walk (``parallel_connections``).

    With ``files`` (``{"data_dir": …, "log_dir": …, "sftp_conn_id": …}``, the cluster's ``files`` setting) the
    tree is rebuilt from ZooKeeper's snapshot and logs instead, at ``at_zxid`` or ``at_time`` (default: the
    newest state): the same snapshot table and manifest, so the rest of the DAG runs unchanged. The ensemble is
    not contacted; ``zk_conn_id``, when that connection exists, only names it in the manifest.

    With ``kraft`` (``{"metadata_dir": …, "sftp_conn_id": …}``, the cluster's ``kraft`` setting) the snapshot is the
    KRaft metadata image replayed from a controller's metadata log, at ``at_offset`` or ``at_time`` (default: the
    newest state), laid out as the same snapshot table.

    With ``migration`` (the cluster's ``migration`` setting: its KRaft ``metadata_dir``/``sftp_conn_id``, ``release``
    and lag limits) the ZooKeeper snapshot is then compared with the KRaft log its migration wrote
    (``snapshot.migration.paired``).
    """

    template_fields: Sequence[str] = ("zk_conn_id", "warehouse", "snapshot_suffix", "cluster", "at_zxid", "at_time",
                                      "at_offset")

    def __init__(self, *, zk_conn_id: str | None = "zookeeper_default", warehouse: str | None = None,
                 snapshot_suffix: str | None = None, cluster: str | None = None,
                 files: dict[str, str | None] | None = None, at_zxid: int | str | None = None,
                 at_time: str | None = None, kraft: dict[str, str | None] | None = None,
                 at_offset: int | str | None = None, migration: dict[str, Any] | None = None,
                 options: SnapshotOptions | None = None,
                 max_reads_in_flight: int | None = None, max_bytes_in_flight: int | None = None,
                 reads_per_second: float | None = None, batch_ops: int | None = None,
                 max_reconnects: int | None = None, reconnect_timeout_s: float | None = None,
                 copy_secrets: bool | None = None, parallel_connections: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id = zk_conn_id
        self.warehouse = warehouse
        self.snapshot_suffix = snapshot_suffix
        self.cluster = cluster
        self.files = files or None
        self.at_zxid = at_zxid
        self.at_time = at_time
        self.kraft = kraft or None
        self.at_offset = at_offset
        self.migration = migration or None
        overrides = {
            "max_reads_in_flight": max_reads_in_flight, "max_bytes_in_flight": max_bytes_in_flight,
            "reads_per_second": reads_per_second, "batch_ops": batch_ops, "max_reconnects": max_reconnects,
            "reconnect_timeout_s": reconnect_timeout_s, "copy_secrets": copy_secrets,
            "parallel_connections": parallel_connections,
        }
        # Built here so that a bad value fails when the DAG is parsed, not when the task runs.
        self.options = dataclasses.replace(
            options or SnapshotOptions(), **{k: v for k, v in overrides.items() if v is not None}
        )

    def execute(self, context: Any) -> str:
        warehouse = Warehouse(self.warehouse or default_warehouse())
        suffix = "-".join(part for part in (self.cluster, self.snapshot_suffix) if part)
        if self.kraft and self.kraft.get("metadata_dir"):
            manifest = self._snapshot_from_kraft(warehouse, suffix)
        elif self.files and self.files.get("data_dir"):
            manifest = self._snapshot_from_files(warehouse, suffix)
        else:
            manifest = self._snapshot_of_ensemble(warehouse, suffix)
        if self.migration and not self.kraft:
            self._verify_migration(warehouse, manifest)
        context["ti"].xcom_push(key="manifest", value=manifest)
        return manifest["snapshot_id"]

    def _snapshot_of_ensemble(self, warehouse: Warehouse, suffix: str) -> dict[str, Any]:
        """Walk the ensemble of the ZooKeeper connection (read-only)."""
        hook = ZooKeeperHook(zk_conn_id=self.zk_conn_id)
        settings = hook.get_settings()
        self.log.info("snapshot of %s%s into %s", settings.ensemble,
                      f" (cluster {self.cluster})" if self.cluster else "", warehouse.root)
        try:
            return write_new_snapshot(hook.get_conn(), settings, warehouse, suffix, self.options, cluster=self.cluster)
        finally:
            hook.close()

    def _snapshot_from_files(self, warehouse: Warehouse, suffix: str) -> dict[str, Any]:
        """Fetch the cluster's ZooKeeper files (SFTP or fsspec) and rebuild the snapshot from them."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_zookeeper_files
        from kafka_zk_audit.snapshot.files.take import snapshot_from_files

        settings = connection_settings(self.zk_conn_id)  # names the ensemble (and its chroot) in the manifest
        if settings is None and self.zk_conn_id:
            self.log.info("no connection %r: the manifest names the files' location instead", self.zk_conn_id)
        return snapshot_from_files(functools.partial(cluster_zookeeper_files, self.files or {}), warehouse, suffix,
                                   at_zxid=self.at_zxid, at_time=self.at_time, options=self.options,
                                   cluster=self.cluster, settings=settings, task_log=self.log)

    def _snapshot_from_kraft(self, warehouse: Warehouse, suffix: str) -> dict[str, Any]:
        """Fetch the cluster's KRaft metadata directory (SFTP or fsspec) and replay it into the snapshot."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_kraft_files
        from kafka_zk_audit.snapshot.kraft.take import snapshot_from_kraft

        return snapshot_from_kraft(functools.partial(cluster_kraft_files, self.kraft or {}), warehouse, suffix,
                                   at_offset=self.at_offset, at_time=self.at_time, options=self.options,
                                   cluster=self.cluster, task_log=self.log)

    def _verify_migration(self, warehouse: Warehouse, manifest: dict[str, Any]) -> None:
        """Compare the snapshot just written with the KRaft log the cluster's migration wrote (fetched read-only);
        the verdict goes to ``runs/<id>/migration_diff.json``. A KRaft side that cannot be read is recorded as
        unverified (the snapshot is kept: its own audit goes on)."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_kraft_files
        from kafka_zk_audit.snapshot.migration.paired import verify_snapshot, write_unverified

        migration = self.migration or {}
        try:
            with cluster_kraft_files(migration) as staged:
                self.log.info("migration diff of %s against the KRaft log at %s (Kafka %s)",
                              manifest["snapshot_id"], staged.origin, migration.get("release"))
                verify_snapshot(warehouse, manifest, migration, staged.data_dir,
                                secrets_in_clear=self.options.copy_secrets)
        except Exception as error:  # the ZooKeeper snapshot stands; the pair is reported unverified
            reason = f"{type(error).__name__}: {error}"
            self.log.exception("the migration diff of %s failed: %s", manifest["snapshot_id"], reason)
            write_unverified(warehouse, manifest, migration, reason)
