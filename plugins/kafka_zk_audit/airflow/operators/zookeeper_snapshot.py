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

    With ``migration`` (the cluster's ``migration`` setting: its KRaft ``metadata_dir``/``sftp_conn_id``, ``release``,
    lag limits and ``password_encoder_secret_conn_id``) the ZooKeeper snapshot is taken with the brokers'
    ``password.encoder.secret`` (the password of that connection, when set: encoded broker passwords are decoded and
    their clear text fingerprinted) and then laid out with the KRaft log its migration wrote for the audit's diff
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
        decoder = None if self.kraft else self._password_decoder()
        if self.kraft and self.kraft.get("metadata_dir"):
            manifest = self._snapshot_from_kraft(warehouse, suffix)
        elif self.files and self.files.get("data_dir"):
            manifest = self._snapshot_from_files(warehouse, suffix, decoder)
        else:
            manifest = self._snapshot_of_ensemble(warehouse, suffix, decoder)
        if self.migration and not self.kraft:
            self._prepare_migration(warehouse, manifest, decoder)
        context["ti"].xcom_push(key="manifest", value=manifest)
        return manifest["snapshot_id"]

    def _password_decoder(self) -> Any:
        """The brokers' password.encoder.secret as a decoder (the password of the paired cluster's
        ``password_encoder_secret_conn_id``); None without one. The secret stays in this process."""
        conn_id = (self.migration or {}).get("password_encoder_secret_conn_id")
        if not conn_id:
            return None
        from airflow.sdk import BaseHook

        from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder

        secret = BaseHook.get_connection(conn_id).password
        if not secret:
            raise ValueError(f"connection {conn_id!r} (migration.password_encoder_secret_conn_id) has no password: "
                             "set it to the brokers' password.encoder.secret")
        return PasswordDecoder(secret)

    def _snapshot_of_ensemble(self, warehouse: Warehouse, suffix: str, decoder: Any = None) -> dict[str, Any]:
        """Walk the ensemble of the ZooKeeper connection (read-only)."""
        hook = ZooKeeperHook(zk_conn_id=self.zk_conn_id)
        settings = hook.get_settings()
        self.log.info("snapshot of %s%s into %s", settings.ensemble,
                      f" (cluster {self.cluster})" if self.cluster else "", warehouse.root)
        try:
            return write_new_snapshot(hook.get_conn(), settings, warehouse, suffix, self.options, cluster=self.cluster,
                                      decoder=decoder)
        finally:
            hook.close()

    def _snapshot_from_files(self, warehouse: Warehouse, suffix: str, decoder: Any = None) -> dict[str, Any]:
        """Fetch the cluster's ZooKeeper files (SFTP or fsspec) and rebuild the snapshot from them."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_zookeeper_files
        from kafka_zk_audit.snapshot.files.take import snapshot_from_files

        settings = connection_settings(self.zk_conn_id)  # names the ensemble (and its chroot) in the manifest
        if settings is None and self.zk_conn_id:
            self.log.info("no connection %r: the manifest names the files' location instead", self.zk_conn_id)
        return snapshot_from_files(functools.partial(cluster_zookeeper_files, self.files or {}), warehouse, suffix,
                                   at_zxid=self.at_zxid, at_time=self.at_time, options=self.options,
                                   cluster=self.cluster, settings=settings, task_log=self.log, decoder=decoder)

    def _snapshot_from_kraft(self, warehouse: Warehouse, suffix: str) -> dict[str, Any]:
        """Fetch the cluster's KRaft metadata directory (SFTP or fsspec) and replay it into the snapshot."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_kraft_files
        from kafka_zk_audit.snapshot.kraft.take import snapshot_from_kraft

        return snapshot_from_kraft(functools.partial(cluster_kraft_files, self.kraft or {}), warehouse, suffix,
                                   at_offset=self.at_offset, at_time=self.at_time, options=self.options,
                                   cluster=self.cluster, task_log=self.log)

    def _prepare_migration(self, warehouse: Warehouse, manifest: dict[str, Any], decoder: Any) -> None:
        """Lay out the snapshot just written and the KRaft log the cluster's migration wrote (fetched read-only) for
        the audit's diff (``snapshot.migration.paired.prepare_migration_of``)."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_kraft_files
        from kafka_zk_audit.snapshot.migration.paired import prepare_migration_of

        prepare_migration_of(warehouse, manifest, self.migration or {}, cluster_kraft_files, decoder=decoder,
                             secrets_in_clear=self.options.copy_secrets, task_log=self.log)
