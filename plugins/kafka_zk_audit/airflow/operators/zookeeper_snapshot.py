"""Snapshot a ZooKeeper tree into the warehouse (read-only against the audited cluster)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse, new_snapshot_id
from kafka_zk_audit.snapshot.walker import SnapshotOptions, write_snapshot


class ZooKeeperSnapshotOperator(BaseOperator):
    """Walk the ensemble of ``zk_conn_id`` into ``<warehouse>/snapshots/``; returns the snapshot id."""

    template_fields: Sequence[str] = ("zk_conn_id", "warehouse", "snapshot_suffix")

    def __init__(self, *, zk_conn_id: str = "zookeeper_default", warehouse: str | None = None,
                 snapshot_suffix: str | None = None, options: SnapshotOptions | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id = zk_conn_id
        self.warehouse = warehouse
        self.snapshot_suffix = snapshot_suffix
        self.options = options

    def execute(self, context: Any) -> str:
        warehouse = Warehouse(self.warehouse or default_warehouse())
        snapshot_id = new_snapshot_id(suffix=self.snapshot_suffix or "")
        hook = ZooKeeperHook(zk_conn_id=self.zk_conn_id)
        settings = hook.get_settings()
        self.log.info("snapshot %s of %s into %s", snapshot_id, settings.ensemble, warehouse.root)
        try:
            manifest = write_snapshot(hook.get_conn(), settings, warehouse, snapshot_id, self.options)
        finally:
            hook.close()
        context["ti"].xcom_push(key="manifest", value=manifest)
        return snapshot_id
