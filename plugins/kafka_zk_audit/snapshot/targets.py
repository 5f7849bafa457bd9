"""The clusters one DAG run audits, and where each reads its tree from: the live ensemble or ZooKeeper's files.

:func:`plan_targets` is the DAG's ``clusters`` task: one target per cluster of the settings (else one ``default``
cluster on the run's ZooKeeper connection), with the run's ``from_files``, ``at_zxid`` and ``at_time`` params applied
by :func:`plan_files`. A target is what the mapped snapshot and history tasks are expanded with:
``{"cluster", "zk_conn_id", "files", "kraft", "migration", "at_zxid", "at_offset", "at_time"}``; a cluster with
``kraft`` (its KRaft metadata log) is read from that log, never from ZooKeeper; one with ``migration`` is read from
ZooKeeper and its snapshot is then compared with the KRaft log its migration wrote (``migration_target``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_zk_audit.contract.settings import AuditConfig, ClusterMigrationConfig
from kafka_zk_audit.snapshot.files.sources import FilesSourceError, parse_at_time, parse_at_zxid

DEFAULT_CLUSTER = "default"


def migration_target(migration: ClusterMigrationConfig | None) -> dict[str, Any] | None:
    """A cluster's ``migration`` setting as a target carries it (plain JSON values: an XCom)."""
    if migration is None:
        return None
    return {**migration.kraft.model_dump(), "release": migration.release, "max_lag_records": migration.max_lag_records,
            "max_lag_ms": int(migration.max_lag.total_seconds() * 1000),
            "password_encoder_secret_conn_id": migration.password_encoder_secret_conn_id}


def cluster_targets(cfg: AuditConfig, zk_conn_id: str | None) -> list[dict[str, Any]]:
    """One entry per cluster to audit: the settings' clusters, else ``default`` on ``zk_conn_id``."""
    if not cfg.clusters:
        return [{"cluster": DEFAULT_CLUSTER, "zk_conn_id": zk_conn_id or None, "files": None, "kraft": None,
                 "migration": None}]
    return [{"cluster": c.name, "zk_conn_id": c.zk_conn_id, "files": c.files.model_dump() if c.files else None,
             "kraft": c.kraft.model_dump() if c.kraft else None, "migration": migration_target(c.migration)}
            for c in cfg.clusters]


def plan_files(targets: list[dict[str, Any]], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The targets with the run's ``from_files``, ``at_zxid`` and ``at_time`` params applied; ``FilesSourceError``
    when they cannot apply (several clusters for one folder of files, a point in time without files)."""
    from_files = (params.get("from_files") or "").strip()
    from_kraft = (params.get("from_kraft") or "").strip()
    at_zxid, at_time, at_offset = params.get("at_zxid"), params.get("at_time"), params.get("at_offset")
    parse_at_zxid(at_zxid)
    parse_at_time(at_time)
    parse_at_offset(at_offset)
    if from_files and from_kraft:
        raise FilesSourceError("from_files (ZooKeeper's files) and from_kraft (a KRaft metadata log) each name one "
                               "cluster's source; give one of them")
    if from_files or from_kraft:
        option = "from_files" if from_files else "from_kraft"
        if len(targets) > 1:
            raise FilesSourceError(
                f"{option} names one cluster's source, but the settings list {len(targets)} clusters; give each "
                f"cluster its {'files' if from_files else 'kraft'}: setting instead")
        source = ({"files": {"data_dir": from_files, "log_dir": None, "sftp_conn_id": None}, "kraft": None}
                  if from_files else {"files": None, "kraft": {"metadata_dir": from_kraft, "sftp_conn_id": None}})
        if from_kraft and targets[0].get("migration"):
            source["migration"] = None  # the KRaft log is the cluster's source now: no ZooKeeper to compare
        targets = [{**targets[0], **source}]
    from_disk = [t for t in targets if t.get("files") or t.get("kraft")]
    if (at_zxid not in (None, "") or at_time) and not from_disk:
        raise FilesSourceError("at_zxid and at_time rebuild ZooKeeper's files (or a KRaft log) at a point in time: "
                               "give from_files or from_kraft, or clusters with a files: or kraft: setting")
    if at_zxid not in (None, "") and (len(from_disk) > 1 or any(t.get("kraft") for t in from_disk)):
        raise FilesSourceError("at_zxid is a zxid of one ensemble's files; for several clusters, or a KRaft log, "
                               "use at_time (or at_offset for one KRaft log)")
    krafts = [t for t in targets if t.get("kraft")]
    if at_offset not in (None, "") and (len(krafts) != 1 or len(targets) > 1):
        raise FilesSourceError("at_offset is an offset of one KRaft metadata log: give from_kraft, or one cluster "
                               "with a kraft: setting")
    return [{**t, "at_zxid": at_zxid if t.get("files") else None,
             "at_offset": at_offset if t.get("kraft") else None,
             "at_time": at_time if t.get("files") or t.get("kraft") else None}
            for t in targets]


def parse_at_offset(value: str | int | None) -> int | None:
    """A KRaft log offset given as a number or decimal text (None when empty); FilesSourceError when not one."""
    if value in (None, ""):
        return None
    try:
        offset = int(str(value).strip())
    except ValueError:
        raise FilesSourceError(f"at_offset {value!r} is not a KRaft log offset (a decimal number)") from None
    if offset < 0:
        raise FilesSourceError(f"at_offset {offset} is negative; a KRaft log offset starts at 0")
    return offset


def plan_targets(cfg: AuditConfig, zk_conn_id: str | None, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's targets: :func:`cluster_targets` with :func:`plan_files` applied."""
    return plan_files(cluster_targets(cfg, zk_conn_id), params)
