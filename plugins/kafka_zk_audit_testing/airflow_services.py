"""A real Airflow on loopback: API server (execution API), scheduler, DAG processor and (optionally) triggerer, on a
SQLite DB.

What only a scheduler does (timetables, retries with their delay, mapped task instances, Asset-triggered runs,
``max_active_runs``, the triggerer's Asset watchers) is proven against these processes. Each runs in its own process
group with its output in ``<airflow_home>/services/<name>.log``; :meth:`AirflowServices.stop` ends them with SIGTERM
(then SIGKILL), so no child survives a test.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kafka_zk_audit_testing.zk_server import free_port

T = TypeVar("T")


class AirflowServices:
    """``airflow api-server --apps execution``, ``airflow scheduler``, ``airflow dag-processor`` and, with
    ``triggerer``, ``airflow triggerer``."""

    def __init__(self, env: dict[str, str], parallelism: int = 4, triggerer: bool = False,
                 airflow: str | Path | None = None) -> None:
        """``airflow``: the ``airflow`` command to run (another venv's, e.g. an installed wheel's); default this
        interpreter's."""
        self.triggerer = triggerer
        self.airflow = str(airflow or Path(sys.executable).parent / "airflow")
        self.home = Path(env["AIRFLOW_HOME"])
        self.port = free_port()
        self.env = dict(env)
        self.env.update({
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.port}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
            # the API server signs the tasks' tokens, the scheduler asks for them: one key for both
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            # the DAG files do not change while the services run: parse each once, not again every 30 s (each
            # parse is a new Python process that imports Airflow and the DAG's modules)
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
        })
        if triggerer:  # its log server's port (default 8794, on every interface): a free one on loopback
            self.env["AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"] = str(free_port())
        self.logs = self.home / "services"
        self.processes: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, *args: str) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        cmd = [self.airflow, *args]
        with open(self.logs / f"{name}.log", "w") as log:
            self.processes[name] = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                    start_new_session=True)

    def start(self, timeout_s: float = 180.0) -> AirflowServices:
        """Start them and wait until the API server answers; raise with its log if one dies."""
        self._start("api-server", "api-server", "--apps", "execution", "--host", "127.0.0.1",
                    "--port", str(self.port), "--workers", "1")
        self._start("dag-processor", "dag-processor")
        self._start("scheduler", "scheduler")
        if self.triggerer:
            self._start("triggerer", "triggerer")
        self.wait_for(self._api_answers, timeout_s, "the API server to answer")
        return self

    def _api_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/execution/health", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    def check_alive(self) -> None:
        """Raise, with the tail of its log, when one of the services has exited."""
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-4000:]
                raise RuntimeError(f"airflow {name} exited with {proc.returncode}:\n{tail}")

    def wait_for(self, probe: Callable[[], T], timeout_s: float, what: str, poll_s: float = 1.0) -> T:
        """Poll ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check_alive()
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout_s:.0f} s for {what}; service logs in {self.logs}")
            time.sleep(poll_s)

    def query(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        """Rows of the metadata DB (read-only, so it never blocks the scheduler for long)."""
        db = sqlite3.connect(f"file:{self.home / 'airflow.db'}?mode=ro", uri=True, timeout=30)
        db.row_factory = sqlite3.Row
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def stop(self) -> None:
        """SIGTERM each process group, SIGKILL what is left after 30 s."""
        for proc in self.processes.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.processes.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self) -> AirflowServices:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
