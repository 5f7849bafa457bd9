"""A real Spark standalone cluster (one master, one or more workers) on 127.0.0.1, from the pyspark install."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pyspark

from kafka_zk_audit_testing.zk_server import free_port

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"


def _start(args: list[str], log: Path, extra_env: Mapping[str, str]) -> subprocess.Popen:
    env = {**os.environ, **extra_env, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    with log.open("wb") as out:
        return subprocess.Popen([str(SPARK_CLASS), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait_for(log: Path, text: str, process: subprocess.Popen, timeout: float = 90) -> str:
    """Wait until the daemon's log holds ``text``; return the log so far."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in (logged := log.read_text(errors="replace")):
            return logged
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"Spark {log.stem} did not log {text!r}; log tail:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@contextmanager
def standalone_cluster(work_dir: Path, cores: int = 2, memory: str = "2g", workers: int = 1,
                       env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Yield the master URL ``spark://127.0.0.1:<port>`` of a running master with ``workers`` registered
    workers of ``cores`` cores each. ``env`` adds to the daemons' environment, which the executors a worker
    launches inherit (e.g. ``PYSPARK_PYTHON``, ``JAVA_TOOL_OPTIONS``)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(free_port()),
                     "--webui-port", str(free_port())], work_dir / "master.log", env or {})
    started: list[subprocess.Popen] = []
    try:
        logged = _wait_for(work_dir / "master.log", "I have been elected leader", master)
        # the URL the master logs, not the port asked for: a port taken meanwhile makes Spark bind the next one
        master_url = re.search(r"Starting Spark master at (spark://\S+)", logged).group(1)
        names = ["worker" if index == 0 else f"worker{index + 1}" for index in range(workers)]
        for index, name in enumerate(names):  # the workers' JVMs start side by side, then each registers
            started.append(_start(["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                                   "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                                   "--work-dir", str(work_dir / name / "work" if index else work_dir / "work")],
                                  work_dir / f"{name}.log", env or {}))
        for name, worker in zip(names, started, strict=True):
            _wait_for(work_dir / f"{name}.log", "Successfully registered with master", worker)
        yield master_url
    finally:
        for worker in reversed(started):
            _stop(worker)
        _stop(master)
