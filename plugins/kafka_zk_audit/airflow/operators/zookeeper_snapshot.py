"""Snapshot a ZooKeeper tree into the warehouse (read-only against the audited cluster)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
from kafka_zk_audit.snapshot.walker import SnapshotOptions, write_new_snapshot


class ZooKeeperSnapshotOperator(BaseOperator):
    """Walk the ensemble of ``zk_conn_id`` into ``<warehouse>/snapshots/``; returns the snapshot id.

    ``options`` is the whole ``SnapshotOptions``; the keyword arguments below override single fields of
    it (None keeps the default): how gently to read (``max_reads_in_flight``, ``max_bytes_in_flight``,
    ``reads_per_second``, ``batch_ops``), how long to try to resume after a fault (``max_reconnects``,
    ``reconnect_timeout_s``), whether to copy secrets instead of fingerprinting them (``copy_secrets``) and over
    how many connections to walk (``parallel_connections``).
    """

    template_fields: Sequence[str] = ("zk_conn_id", "warehouse", "snapshot_suffix", "cluster")

    def __init__(self, *, zk_conn_id: str = "zookeeper_default", warehouse: str | None = None,
                 snapshot_suffix: str | None = None, cluster: str | None = None,
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
        hook = ZooKeeperHook(zk_conn_id=self.zk_conn_id)
        settings = hook.get_settings()
        self.log.info("snapshot of %s%s into %s", settings.ensemble,
                      f" (cluster {self.cluster})" if self.cluster else "", warehouse.root)
        try:
            manifest = write_new_snapshot(hook.get_conn(), settings, warehouse, suffix, self.options,
                                          cluster=self.cluster)
        finally:
            hook.close()
        context["ti"].xcom_push(key="manifest", value=manifest)
        return manifest["snapshot_id"]
