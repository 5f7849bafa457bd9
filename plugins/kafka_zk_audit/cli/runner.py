"""Run the DAG once with ``airflow dags test``, with an environment that needs no Airflow set-up.

Used by ``kafka-zk-audit run`` (and so ``make demo``) and by the end-to-end tests. The Airflow home
is the caller's ``$AIRFLOW_HOME`` or our own (``~/.kafka-zk-audit/airflow``), with a SQLite
metadata DB; the DAGs folder holds just this project's DAG; spark-submit and the Spark driver's
Python come from the interpreter running this code (the project's venv). When a run ends without
a summary, :func:`first_failed_task` reads the run's log to say which task failed and why. While it runs,
:class:`TaskProgress` reads the log as it comes and says when each task starts and ends, with its duration.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

# the same as the repo's dags/kafka_zk_audit.py (a test keeps the two equal)
DAG_FILE = (
    '"""kafka-zk-audit: the Airflow DAGs ``kafka_zk_audit`` (scheduled) and ``kafka_zk_audit_events``\n'
    "(when the settings' ``events`` are on), auditing the metadata Kafka keeps in ZooKeeper.\n"
    '\n'
    'Copy this file into your DAGs folder; the DAGs are built by the installed ``kafka_zk_audit`` package.\n'
    '"""\n'
    '\n'
    'from kafka_zk_audit.airflow.dag import build_dag, build_event_dag\n'
    '\n'
    'dag = build_dag()\n'
    'events_dag = build_event_dag()  # None when events are off: no second DAG\n'
)
DEFAULT_HOME = Path.home() / ".kafka-zk-audit" / "airflow"


def dags_folder(airflow_home: Path) -> Path:
    """A DAGs folder of our own under the Airflow home, holding just the one-line DAG file."""
    folder = airflow_home / "kafka_zk_audit_dags"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kafka_zk_audit.py"
    if not path.exists() or path.read_text() != DAG_FILE:
        path.write_text(DAG_FILE)
    return folder


def airflow_env(
    airflow_home: Path | None = None,
    connections: dict[str, dict[str, Any]] | None = None,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """Environment for ``airflow`` subprocesses: home, DAGs folder, connections, PATH, loopback Spark."""
    env = dict(base if base is not None else os.environ)
    home = Path(airflow_home or env.get("AIRFLOW_HOME") or DEFAULT_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    bin_dir = str(Path(sys.executable).parent)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder(home)),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": env.get("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO"),
            "GX_ANALYTICS_ENABLED": "false",
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
            "NO_PROXY": "*",
        }
    )
    env.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    for conn_id, conn in (connections or {}).items():
        env[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(conn)
    return env


def ensure_metadata_db(env: dict[str, str]) -> None:
    """``airflow db migrate`` when the SQLite DB does not exist yet (a few seconds, once)."""
    home = Path(env["AIRFLOW_HOME"])
    if "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" not in env and (home / "airflow.db").exists():
        return
    _airflow(env, ["db", "migrate"], check=True)


def airflow_command(args: Sequence[str]) -> list[str]:
    """``airflow <args>`` as this package runs it: Airflow's command line in this Python, the process ended without
    its interpreter's teardown (``kafka_zk_audit.airflow.command_line``)."""
    return [sys.executable, "-m", "kafka_zk_audit.airflow.command_line", *args]


def _airflow(
    env: dict[str, str], args: list[str], check: bool = False, log_path: Path | None = None, echo: bool = False,
    on_line: Callable[[str], None] | None = None,
) -> int:
    cmd = airflow_command(args)
    if log_path is None:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if check and proc.returncode:
            raise RuntimeError(
                f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
            )
        return proc.returncode
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(log_path, "w") as log,
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if echo:
                sys.stderr.write(line)
            if on_line is not None:
                on_line(line)
        return proc.wait()


@dataclass
class DagRunResult:
    returncode: int
    log_path: Path


def run_dag_once(env: dict[str, str], conf: dict[str, Any], log_path: Path, echo: bool = False,
                 on_line: Callable[[str], None] | None = None) -> DagRunResult:
    """``airflow dags test kafka_zk_audit -c <conf>``; the DAG run's log goes to ``log_path`` (and each of its lines,
    as it comes, to ``on_line``: e.g. a :class:`TaskProgress`)."""
    ensure_metadata_db(env)
    code = _airflow(env, ["dags", "test", "kafka_zk_audit", "-c", json.dumps(conf)], log_path=log_path, echo=echo,
                    on_line=on_line)
    return DagRunResult(code, log_path)


# Lines of the ``airflow dags test`` log that matter when a run fails.
_TASK_STARTS = re.compile(r"\[DAG TEST\] starting task_id=(\S+)")
_TASK_FAILED = "Task failed with exception"
_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")  # a new log record (the traceback has ended)
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*): ?(.*)$")
_MAX_ERROR_LINES, _MAX_LINE_CHARS = 4, 400


@dataclass(frozen=True)
class TaskFailure:
    """A task that failed in a DAG run, and the error it failed with (the exception, then its detail lines)."""

    task_id: str
    error: str


def _error_of(traceback_lines: list[str]) -> str:
    """The exception line of the last traceback in a block (class without module), with its continuation lines."""
    starts = [i for i, line in enumerate(traceback_lines) if line.startswith("Traceback (most recent call last)")]
    lines = traceback_lines[starts[-1] + 1:] if starts else traceback_lines
    body = [line for line in lines if line.strip()]
    first = next((i for i, line in enumerate(body) if not line[:1].isspace()), None)
    if first is None:
        return "no error message in the log"
    message: list[str] = []
    for line in body[first:]:
        if line.startswith("at ") or len(message) == _MAX_ERROR_LINES:  # a Java stack frame, or enough said
            break
        message.append(line.strip()[:_MAX_LINE_CHARS])
    match = _EXCEPTION_LINE.match(message[0])
    if match:
        message[0] = f"{match.group(1)}: {match.group(2)}"
    return "\n".join(message)


def first_failed_task(log_text: str) -> TaskFailure | None:
    """The first task of a ``airflow dags test`` log that failed, with its error; None when none did."""
    current: str | None = None
    lines = log_text.splitlines()
    for index, line in enumerate(lines):
        started = _TASK_STARTS.search(line)
        if started:
            current = started.group(1)
        elif _TASK_FAILED in line and current:
            end = next((j for j in range(index + 1, len(lines)) if _LOG_RECORD.match(lines[j])), len(lines))
            return TaskFailure(current, _error_of(lines[index + 1:end]))
    return None


_TASK_STARTED = re.compile(r"\[DAG TEST\] starting task_id=(\S+) map_index=(-?\d+)")
_TASK_ENDED = re.compile(r"\[DAG TEST\] end task task_id=(\S+) map_index=(-?\d+)")
_TASK_SKIPPED = "Skipping task."


@dataclass
class TaskProgress:
    """Reads an ``airflow dags test`` log line by line (``__call__``) and writes one line when a task starts and one
    when it ends, with how long it ran: ``[12:00:01] snapshot[alpha] started``, ``[12:00:04] snapshot[alpha] done
    in 3.2s`` (``failed after``, ``skipped after``). A mapped task is named by its cluster (``clusters``: the run's
    cluster names, in the order the DAG maps them), else by its map index."""

    clusters: Sequence[str] = ()
    out: TextIO | None = None  # None: sys.stderr at the time of writing
    clock: Callable[[], float] = time.monotonic
    stamp: Callable[[], str] = field(default=lambda: time.strftime("%H:%M:%S"))
    _started: dict[str, float] = field(default_factory=dict)
    _outcome: dict[str, str] = field(default_factory=dict)
    _current: str | None = None

    def name(self, task_id: str, map_index: int) -> str:
        if map_index < 0:
            return task_id
        return f"{task_id}[{self.clusters[map_index] if map_index < len(self.clusters) else map_index}]"

    def say(self, message: str) -> None:
        print(f"[{self.stamp()}] {message}", file=self.out or sys.stderr, flush=True)

    def __call__(self, line: str) -> None:
        started = _TASK_STARTED.search(line)
        if started:
            task = self._current = self.name(started.group(1), int(started.group(2)))
            self._started[task], self._outcome[task] = self.clock(), "done in"
            self.say(f"{task} started")
            return
        ended = _TASK_ENDED.search(line)
        if ended:
            task = self.name(ended.group(1), int(ended.group(2)))
            if task in self._started:
                seconds = self.clock() - self._started.pop(task)
                self.say(f"{task} {self._outcome.pop(task)} {seconds:.1f}s")
            self._current = None
        elif self._current is not None and _TASK_FAILED in line:
            self._outcome[self._current] = "failed after"
        elif self._current is not None and _TASK_SKIPPED in line:
            self._outcome[self._current] = "skipped after"
