"""What happened to a cluster between two runs: the history app spark-submitted on its ZooKeeper files.

One task per cluster. A cluster with a ``files`` setting has its files fetched the way the snapshot task fetches
them (SFTP, fsspec or a local folder, :func:`~kafka_zk_audit.airflow.hooks.zookeeper_files.cluster_zookeeper_files`)
and the packaged ``zk_history.py`` reads the transaction logs from the zxid after the cluster's previous history
(:func:`next_history_zxid`) to their end, so consecutive runs cover the logs with no gap and no overlap.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from importlib import resources
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from kafka_zk_audit.airflow.hooks.zookeeper import connection_settings
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.contract.settings import load_config, seconds_text
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
from kafka_zk_audit.offline.sources import FilesSourceError, StagedFiles

log = logging.getLogger(__name__)

HISTORY_APP = "zk_history.py"


def history_app_path() -> str:
    """The history app shipped in the package (``spark_apps/zk_history.py`` in the repo)."""
    return str(resources.files("kafka_zk_audit.spark_apps").joinpath(HISTORY_APP))


def previous_history(warehouse: Warehouse, cluster: str | None) -> dict[str, Any] | None:
    """The newest history (by id) of ``cluster`` in the warehouse that read a transaction, or None.

    Histories of other clusters, unfinished ones (no ``history.json``) and unreadable summaries are ignored."""
    pattern = warehouse.fs_path(f"{warehouse.history_dir()}/*/history.json")
    paths = sorted(warehouse.fs.glob(pattern), key=lambda path: path.rstrip("/").split("/")[-2], reverse=True)
    for path in paths:
        try:
            with warehouse.fs.open(path, "r", encoding="utf-8") as handle:
                summary = json.load(handle)
        except (OSError, ValueError) as exc:
            log.warning("history summary %s ignored: %s", path, exc)
            continue
        if isinstance(summary, dict) and summary.get("cluster") == cluster and summary.get("last_zxid") is not None:
            return summary
    return None


def next_history_zxid(warehouse: Warehouse, cluster: str | None) -> int | None:
    """The first zxid of the cluster's next history: its previous history's ``last_zxid + 1``; None the first time
    (every retained log is read)."""
    previous = previous_history(warehouse, cluster)
    return None if previous is None else int(previous["last_zxid"]) + 1


def describe_history(summary: Mapping[str, Any], from_zxid: int | None) -> dict[str, Any]:
    """What the history task returns (and the summary task prints): ids, page, window and interval counts."""
    checks = summary.get("checks") or {}
    return {
        "cluster": summary.get("cluster"), "history_id": summary["history_id"], "page": summary["page"],
        "path": summary["path"], "from_zxid": from_zxid, "first_zxid": summary.get("first_zxid"),
        "last_zxid": summary.get("last_zxid"), "txns": summary.get("txns", 0),
        "listed": sum(counts.get("listed", 0) for counts in checks.values()),
        "short": sum(counts.get("short", 0) for counts in checks.values()),
        "log_errors": len(summary.get("log_errors") or []),
    }


class ZooKeeperHistoryOperator(AuditSparkSubmitOperator):
    """spark-submit ``zk_history.py`` on the ZooKeeper files of ``cluster`` (its ``files`` setting); returns what
    the history found (its id, page, window and interval counts).

    Skipped (AirflowSkipException) for a cluster without files, when the setting ``history.enabled`` is false, and
    for a run pinned to a past point in time (``at_zxid``/``at_time``). The floor of a listed interval is the
    setting ``history.min_interval``; the chroot is that of the cluster's ZooKeeper connection, as for the snapshot
    from files. A log that could not be read to its end (the app's exit 1, ``history.json`` written) is a warning,
    not a failure.
    """

    template_fields: Sequence[str] = (
        *AuditSparkSubmitOperator.template_fields, "warehouse", "audit_config", "cluster", "zk_conn_id", "at_zxid",
        "at_time",
    )

    def __init__(self, *, warehouse: str | None = None, audit_config: str | None = None, cluster: str | None = None,
                 zk_conn_id: str | None = None, files: dict[str, str | None] | None = None,
                 at_zxid: int | str | None = None, at_time: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("application", history_app_path())
        kwargs.setdefault("name", "kafka-zk-audit-history")
        super().__init__(**kwargs)
        self.warehouse = warehouse
        self.audit_config = audit_config
        self.cluster = cluster
        self.zk_conn_id = zk_conn_id
        self.zookeeper_files = files or None  # not ``files``: SparkSubmitOperator's own (spark-submit --files)
        self.at_zxid = at_zxid
        self.at_time = at_time

    def execute(self, context: Any) -> dict[str, Any]:
        from kafka_zk_audit.offline.history import history_dir, new_history_id

        who = f"cluster {self.cluster}" if self.cluster else "this cluster"
        if not (self.zookeeper_files and self.zookeeper_files.get("data_dir")):
            self._skip(f"{who} has no files setting: no history (it is read from ZooKeeper's transaction logs)")
        settings = load_config(self.audit_config or None).history
        if not settings.enabled:
            self._skip(f"the setting history.enabled is false: no history of {who}")
        if self.at_zxid not in (None, "") or self.at_time:
            self._skip(f"this run rebuilds {who} at a past point in time (at_zxid/at_time): it does not extend the "
                       "history")
        warehouse = Warehouse(self.warehouse or default_warehouse())
        from_zxid = next_history_zxid(warehouse, self.cluster)
        connection = connection_settings(self.zk_conn_id)
        chroot = connection.chroot if connection is not None else ""
        history_id = new_history_id()
        summary_path = f"{history_dir(warehouse, history_id)}/history.json"
        self.log.info("history %s of %s: the logs from %s, chroot %s, intervals under %s s counted, not listed",
                      history_id, who, f"zxid {from_zxid:#x}" if from_zxid is not None else "the oldest retained",
                      chroot or "/", seconds_text(settings.min_interval))
        with ExitStack() as stack:
            staged = self._fetch(stack, from_zxid)
            self.application_args = [
                "--warehouse", warehouse.root, "--files", staged.data_dir, "--history-id", history_id,
                "--min-interval", seconds_text(settings.min_interval),
                *(["--log-dir", staged.log_dir] if staged.log_dir else []),
                *(["--cluster", self.cluster] if self.cluster else []),
                *(["--chroot", chroot] if chroot else []),
                *(["--from-zxid", str(from_zxid)] if from_zxid is not None else []),
                *(["--origin", staged.origin] if staged.fetched else []),  # the staging folder goes afterwards
            ]
            try:
                super().execute(context)
            except Exception:
                if not warehouse.exists(summary_path) or not warehouse.read_json(summary_path).get("log_errors"):
                    raise
        summary = warehouse.read_json(summary_path)
        for error in summary["log_errors"]:
            self.log.warning("history %s: %s could NOT be read to its end (after zxid %s): %s; the changes before "
                             "it are in the history", history_id, error["file"], error["after_zxid"], error["error"])
        return describe_history(summary, from_zxid)

    def _skip(self, reason: str) -> None:
        self.log.info("skipped: %s", reason)
        raise AirflowSkipException(reason)

    def _fetch(self, stack: ExitStack, from_zxid: int | None) -> StagedFiles:
        """The cluster's files on this machine until ``stack`` closes: the snapshot before ``from_zxid`` (the state
        the window starts from) and every log after it; the first time, what a rebuild of the newest state needs."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_zookeeper_files

        files = self.zookeeper_files or {}
        if from_zxid is not None:
            try:
                return stack.enter_context(cluster_zookeeper_files(files, at_zxid=from_zxid - 1, logs_to_end=True))
            except FilesSourceError as exc:
                self.log.warning("%s; the history reads the logs the newest snapshots need instead: the changes "
                                 "since zxid %#x they do not hold are missing from it", exc, from_zxid)
        return stack.enter_context(cluster_zookeeper_files(files))
