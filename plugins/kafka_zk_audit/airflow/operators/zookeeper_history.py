"""What happened to a cluster between two runs: the history app spark-submitted on its ZooKeeper files.

One task per cluster. A cluster with a ``files`` setting has its files fetched the way the snapshot task fetches
them (SFTP, fsspec or a local folder, :func:`~kafka_zk_audit.airflow.hooks.zookeeper_files.cluster_zookeeper_files`)
and the packaged ``zk_history.py`` reads the transaction logs from the zxid after the cluster's previous history to
their end; :mod:`kafka_zk_audit.history.task` decides whether it runs, its window and the app's arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import ExitStack
from importlib import resources
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from kafka_zk_audit.airflow.hooks.zookeeper import connection_settings
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.contract.settings import load_config
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse

HISTORY_APP = "zk_history.py"


def history_app_path() -> str:
    """The history app shipped in the package (``spark_apps/zk_history.py`` in the repo)."""
    return str(resources.files("kafka_zk_audit.spark_apps").joinpath(HISTORY_APP))


class ZooKeeperHistoryOperator(AuditSparkSubmitOperator):
    """spark-submit ``zk_history.py`` on the ZooKeeper files of ``cluster`` (its ``files`` setting); returns what
    the history found (its id, page, window and interval counts).

    Skipped (AirflowSkipException) for a cluster without files, when the setting ``history.enabled`` is false, for
    a run pinned to a past point in time (``at_zxid``/``at_time``), and when the logs hold no transaction after the
    previous history's (no Spark application). The floor of a listed interval is the
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
                 at_zxid: int | str | None = None, at_time: str | None = None,
                 kraft: dict[str, str | None] | None = None, at_offset: int | str | None = None,
                 migration: dict[str, Any] | None = None, **kwargs: Any) -> None:
        del migration  # a migrating cluster's history is its ZooKeeper's, like any other's
        kwargs.setdefault("application", history_app_path())
        kwargs.setdefault("name", "kafka-zk-audit-history")
        super().__init__(**kwargs)
        self.warehouse = warehouse
        self.audit_config = audit_config
        self.cluster = cluster
        self.zk_conn_id = zk_conn_id
        self.zookeeper_files = files or None  # not ``files``: SparkSubmitOperator's own (spark-submit --files)
        self.kraft = kraft or None  # a KRaft cluster: its history is read from its metadata log
        self.at_offset = at_offset
        self.at_zxid = at_zxid
        self.at_time = at_time

    def execute(self, context: Any) -> dict[str, Any]:
        if self.kraft and self.kraft.get("metadata_dir"):
            return self._kraft_history()
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_zookeeper_files
        from kafka_zk_audit.history.task import (
            history_skip_reason,
            logged_since,
            plan_history,
            stage_window,
        )

        settings = load_config(self.audit_config or None).history
        reason = history_skip_reason(self.cluster, self.zookeeper_files, settings, self.at_zxid, self.at_time)
        if reason:
            self.log.info("skipped: %s", reason)
            raise AirflowSkipException(reason)
        connection = connection_settings(self.zk_conn_id)
        plan = plan_history(Warehouse(self.warehouse or default_warehouse()), self.cluster, settings,
                            chroot=connection.chroot if connection is not None else "")
        self.log.info("%s", plan.description())
        with ExitStack() as stack:
            fetch = functools.partial(cluster_zookeeper_files, self.zookeeper_files or {})
            staged = stage_window(stack, fetch, plan.from_zxid, self.log)
            if not logged_since(staged, plan.from_zxid):
                reason = f"no transaction in the logs of {plan.who} since zxid {plan.from_zxid:#x}: no new history"
                self.log.info("skipped: %s", reason)
                raise AirflowSkipException(reason)
            self.application_args = plan.app_args(staged)
            try:
                super().execute(context)
            except Exception:
                if not plan.ended_on_log_errors():
                    raise
        return plan.result(self.log)

    def _kraft_history(self) -> dict[str, Any]:
        """A KRaft cluster's history, read from its metadata log in this process (no Spark application: the replay
        is the scan): the intervals still open at, or started after, the previous history's end."""
        from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_kraft_files
        from kafka_zk_audit.history.job import new_history_id
        from kafka_zk_audit.history.kraft_log import write_kraft_history
        from kafka_zk_audit.history.task import describe_history, next_history_zxid

        settings = load_config(self.audit_config or None).history
        who = f"cluster {self.cluster}" if self.cluster else "this cluster"
        if not settings.enabled:
            raise AirflowSkipException(f"the setting history.enabled is false: no history of {who}")
        if self.at_time or self.at_offset not in (None, ""):
            raise AirflowSkipException(f"this run replays {who} up to a past point (at_offset/at_time): it does "
                                       "not extend the history")
        warehouse = Warehouse(self.warehouse or default_warehouse())
        from_offset = next_history_zxid(warehouse, self.cluster)
        with cluster_kraft_files(self.kraft or {}) as staged:
            summary = write_kraft_history(warehouse, staged.data_dir, history_id=new_history_id(),
                                          cluster=self.cluster, from_offset=from_offset,
                                          min_interval_ms=int(settings.min_interval.total_seconds() * 1000),
                                          origin=staged.origin if staged.fetched else None)
        if summary is None:
            raise AirflowSkipException(f"no record in the metadata log of {who} since offset {from_offset}: no new "
                                       "history")
        self.log.info("history %s of %s: offsets %s-%s, %s", summary["history_id"], who, summary["first_zxid"],
                      summary["last_zxid"], summary["checks"])
        return describe_history(summary, from_offset)

