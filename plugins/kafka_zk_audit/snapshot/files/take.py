"""The snapshot task of a cluster audited from its ZooKeeper files: fetch them, rebuild the tree into the warehouse.

The same snapshot table and manifest as a live snapshot, so the rest of the DAG runs unchanged. How the files are
fetched (SFTP, fsspec, a local folder) is the caller's ``fetch``; the ensemble is never contacted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.files.sources import StagedFiles, parse_at_time, parse_at_zxid

log = logging.getLogger(__name__)


def describe_target(at_zxid: int | None, at_time: datetime | None) -> str:
    """The state a rebuild targets, as the task's log names it."""
    if at_zxid is None and at_time is None:
        return "the newest state"
    return f"zxid {at_zxid:#x}" if at_zxid is not None else f"{at_time:%Y-%m-%dT%H:%M:%SZ}"


def snapshot_from_files(fetch: Callable[..., AbstractContextManager[StagedFiles]], warehouse: Warehouse,
                        suffix: str = "", *, at_zxid: int | str | None = None, at_time: str | datetime | None = None,
                        options: SnapshotOptions | None = None, cluster: str | None = None,
                        settings: ZkSettings | None = None, task_log: Any = None,
                        decoder: Any = None) -> dict[str, Any]:
    """Fetch the files a rebuild at ``at_zxid``/``at_time`` (default: the newest state) needs with
    ``fetch(at_zxid=…, at_time=…)`` and write the rebuilt snapshot under a new id; returns its manifest.

    ``settings`` (the cluster's ZooKeeper connection, when it has one) names the ensemble and its chroot."""
    from kafka_zk_audit.snapshot.files.rebuild import write_new_offline_snapshot

    zxid, moment = parse_at_zxid(at_zxid), parse_at_time(at_time)
    with fetch(at_zxid=zxid, at_time=moment) as staged:
        (task_log or log).info("snapshot%s from the ZooKeeper files at %s (%s) into %s",
                               f" of cluster {cluster}" if cluster else "", staged.origin,
                               describe_target(zxid, moment), warehouse.root)
        # fetched files are named by where they came from, not by the staging folder that is gone after
        return write_new_offline_snapshot(staged.data_dir, warehouse, suffix, log_dir=staged.log_dir, at_zxid=zxid,
                                          at_time=moment, options=options, cluster=cluster, settings=settings,
                                          origin=staged.origin if staged.fetched else None, decoder=decoder)
