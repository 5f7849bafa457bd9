"""The DAG's history of one cluster, planned (no Airflow, no Spark): whether it runs, its window, the history app's
arguments and what the task returns.

The history app (``spark_apps/zk_history.py``) reads the cluster's transaction logs from the zxid after its
previous history (:func:`next_history_zxid`) to their end, so consecutive runs cover the logs with no gap and no
overlap. A log that could not be read to its end (the app's exit 1, ``history.json`` written) is a warning, not a
failure.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kafka_zk_audit.contract.settings import HistoryConfig, seconds_text
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.files.sources import FilesSourceError, StagedFiles

log = logging.getLogger(__name__)

# fetch(at_zxid=…, logs_to_end=…) -> the cluster's files on this machine for a ``with`` block
Fetch = Callable[..., AbstractContextManager[StagedFiles]]


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


def _who(cluster: str | None) -> str:
    """A cluster as the task's messages name it."""
    return f"cluster {cluster}" if cluster else "this cluster"


def history_skip_reason(cluster: str | None, files: Mapping[str, Any] | None, settings: HistoryConfig,
                        at_zxid: int | str | None = None, at_time: str | None = None) -> str | None:
    """Why the cluster gets no history this run, or None: no ``files`` setting, ``history.enabled`` false, or a run
    rebuilding a past point in time (``at_zxid``/``at_time``)."""
    who = _who(cluster)
    if not (files and files.get("data_dir")):
        return f"{who} has no files setting: no history (it is read from ZooKeeper's transaction logs)"
    if not settings.enabled:
        return f"the setting history.enabled is false: no history of {who}"
    if at_zxid not in (None, "") or at_time:
        return f"this run rebuilds {who} at a past point in time (at_zxid/at_time): it does not extend the history"
    return None


def logged_since(staged: StagedFiles, from_zxid: int | None) -> bool:
    """Whether the staged logs hold a transaction at or after ``from_zxid`` (always true the first time, or when a
    log cannot be read: the app then reports it). Only the newest logs are read, and only up to the first such
    transaction: no Spark application for a window the cluster wrote nothing in."""
    from kafka_zk_audit.snapshot.files.txnlog import TxnLogError, iter_txns, log_files, log_start_zxid

    if from_zxid is None:
        return True
    for path in reversed(log_files(staged.log_dir or staged.data_dir)):
        try:
            if next(iter_txns(path, after_zxid=from_zxid - 1), None) is not None:
                return True
        except TxnLogError:
            return True
        if log_start_zxid(path) <= from_zxid:  # older logs end before this one starts
            return False
    return False


@dataclass(frozen=True)
class HistoryPlan:
    """One history of one cluster: its id, its window's first zxid (None: every retained log) and its settings."""

    warehouse: Warehouse
    cluster: str | None
    history_id: str
    from_zxid: int | None
    chroot: str
    min_interval: timedelta

    @property
    def who(self) -> str:
        """The cluster as the task's log names it."""
        return _who(self.cluster)

    @property
    def summary_path(self) -> str:
        """Where the app writes the history's ``history.json`` (last, once the history is complete)."""
        return f"{self.warehouse.history_dir(self.history_id)}/history.json"

    def description(self) -> str:
        """The task's log line: which history of which cluster, from where, and the floor of a listed interval."""
        who = self.who
        start = f"zxid {self.from_zxid:#x}" if self.from_zxid is not None else "the oldest retained"
        return (f"history {self.history_id} of {who}: the logs from {start}, chroot {self.chroot or '/'}, intervals "
                f"under {seconds_text(self.min_interval)} s counted, not listed")

    def app_args(self, staged: StagedFiles) -> list[str]:
        """The history app's arguments over the staged files."""
        return [
            "--warehouse", self.warehouse.root, "--files", staged.data_dir, "--history-id", self.history_id,
            "--min-interval", seconds_text(self.min_interval),
            *(["--log-dir", staged.log_dir] if staged.log_dir else []),
            *(["--cluster", self.cluster] if self.cluster else []),
            *(["--chroot", self.chroot] if self.chroot else []),
            *(["--from-zxid", str(self.from_zxid)] if self.from_zxid is not None else []),
            *(["--origin", staged.origin] if staged.fetched else []),  # the staging folder goes afterwards
        ]

    def ended_on_log_errors(self) -> bool:
        """Whether a failed app still wrote the history, with logs it could not read to their end (a warning)."""
        return self.warehouse.exists(self.summary_path) and bool(
            self.warehouse.read_json(self.summary_path).get("log_errors"))

    def result(self, task_log: Any = None) -> dict[str, Any]:
        """What the task returns (:func:`describe_history`); each unreadable log is a warning on ``task_log``."""
        summary = self.warehouse.read_json(self.summary_path)
        for error in summary["log_errors"]:
            (task_log or log).warning(
                "history %s: %s could NOT be read to its end (after zxid %s): %s; the changes before it are in the "
                "history", self.history_id, error["file"], error["after_zxid"], error["error"])
        return describe_history(summary, self.from_zxid)


def plan_history(warehouse: Warehouse, cluster: str | None, settings: HistoryConfig, chroot: str = "",
                 history_id: str | None = None) -> HistoryPlan:
    """The next history of ``cluster``: a new id, and its window from the cluster's previous history on."""
    if history_id is None:
        from kafka_zk_audit.history.job import new_history_id

        history_id = new_history_id()
    return HistoryPlan(warehouse, cluster, history_id, next_history_zxid(warehouse, cluster), chroot or "",
                       settings.min_interval)


def stage_window(stack: ExitStack, fetch: Fetch, from_zxid: int | None, task_log: Any = None) -> StagedFiles:
    """The cluster's files on this machine until ``stack`` closes: the snapshot before ``from_zxid`` (the state the
    window starts from) and every log after it; the first time, or when the files no longer go back that far, what a
    rebuild of the newest state needs."""
    if from_zxid is not None:
        try:
            return stack.enter_context(fetch(at_zxid=from_zxid - 1, logs_to_end=True))
        except FilesSourceError as exc:
            (task_log or log).warning("%s; the history reads the logs the newest snapshots need instead: the changes "
                                      "since zxid %#x they do not hold are missing from it", exc, from_zxid)
    return stack.enter_context(fetch())
