"""The clusters one DAG run audits, and where each reads its tree from: the live ensemble or ZooKeeper's files.

:func:`plan_targets` is the DAG's ``clusters`` task: one target per cluster of the settings (else one ``default``
cluster on the run's ZooKeeper connection), with the run's ``from_files``, ``at_zxid`` and ``at_time`` params applied
by :func:`plan_files`. A target is what the mapped snapshot and history tasks are expanded with:
``{"cluster", "zk_conn_id", "files", "at_zxid", "at_time"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_zk_audit.contract.settings import AuditConfig
from kafka_zk_audit.snapshot.files.sources import FilesSourceError, parse_at_time, parse_at_zxid

DEFAULT_CLUSTER = "default"


def cluster_targets(cfg: AuditConfig, zk_conn_id: str | None) -> list[dict[str, Any]]:
    """One entry per cluster to audit: the settings' clusters, else ``default`` on ``zk_conn_id``."""
    if not cfg.clusters:
        return [{"cluster": DEFAULT_CLUSTER, "zk_conn_id": zk_conn_id or None, "files": None}]
    return [{"cluster": c.name, "zk_conn_id": c.zk_conn_id, "files": c.files.model_dump() if c.files else None}
            for c in cfg.clusters]


def plan_files(targets: list[dict[str, Any]], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The targets with the run's ``from_files``, ``at_zxid`` and ``at_time`` params applied; ``FilesSourceError``
    when they cannot apply (several clusters for one folder of files, a point in time without files)."""
    from_files = (params.get("from_files") or "").strip()
    at_zxid, at_time = params.get("at_zxid"), params.get("at_time")
    parse_at_zxid(at_zxid)
    parse_at_time(at_time)
    if from_files:
        if len(targets) > 1:
            raise FilesSourceError(
                f"from_files names one cluster's files, but the settings list {len(targets)} clusters; give each "
                "cluster its files: setting instead")
        targets = [{**targets[0], "files": {"data_dir": from_files, "log_dir": None, "sftp_conn_id": None}}]
    from_disk = [t for t in targets if t.get("files")]
    if (at_zxid not in (None, "") or at_time) and not from_disk:
        raise FilesSourceError("at_zxid and at_time rebuild ZooKeeper's files at a point in time: give from_files, "
                               "or clusters with a files: setting")
    if at_zxid not in (None, "") and len(from_disk) > 1:
        raise FilesSourceError("at_zxid is a zxid of one ensemble, but several clusters read files; use at_time")
    return [{**t, "at_zxid": at_zxid if t.get("files") else None, "at_time": at_time if t.get("files") else None}
            for t in targets]


def plan_targets(cfg: AuditConfig, zk_conn_id: str | None, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's targets: :func:`cluster_targets` with :func:`plan_files` applied."""
    return plan_files(cluster_targets(cfg, zk_conn_id), params)
