"""The audit through a long-lived Spark Connect server: the server, a component started and stopped like ZooKeeper,
and the audit of a batch of snapshots through it.

An audit app started by spark-submit pays the driver JVM's start and its warm-up at every run: most of an
event-driven audit's time for one small cluster (``bench/bench_connect.py``: a fresh client through a warm server
takes about half the cold app's time, with the same findings). A Spark Connect server
(``org.apache.spark.sql.connect.service.SparkConnectServer``, launched through spark-submit) keeps that JVM warm
between audits; an audit task connects to it as a Spark Connect client (no JVM of its own) and runs the same audit.

``ConnectServer`` runs one on 127.0.0.1 and a port of its own, with its state in one folder (``server.json``: port
and master; ``server.pid``; ``server.log``), and stops it by its recorded pid. ``kafka-zk-audit connect-server
start|stop|status`` is its command line; the event-driven DAG reaches it through the Spark provider's
``spark_connect`` connection named by the settings' ``events.spark_connect_conn_id``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from kafka_zk_audit.audit.session import (
    COMMON_CONF,
    DRIVER_JAVA_OPTIONS_KEY,
    LONG_LIVED_DRIVER_JAVA_OPTIONS,
    LOOPBACK_CONF,
    connect_session,
    is_local,
)
from kafka_zk_audit.contract.process import wait_gone

if TYPE_CHECKING:

    pass

log = logging.getLogger(__name__)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002  # Spark Connect's own default
LOOPBACK = "127.0.0.1"
DEFAULT_DIR_ENV = "KAFKA_ZK_AUDIT_CONNECT_DIR"
WARM_UP_ROUNDS = 5  # audits of the warm-up: the server's JIT is near its steady state after them


def default_dir() -> Path:
    """The server's state folder: ``$KAFKA_ZK_AUDIT_CONNECT_DIR``, else ``~/.kafka-zk-audit/connect-server``."""
    return Path(os.environ.get(DEFAULT_DIR_ENV) or Path.home() / ".kafka-zk-audit" / "connect-server")


def spark_submit_binary() -> str:
    """The spark-submit next to this Python (pyspark's), else the one on the PATH."""
    binary = Path(sys.executable).parent / "spark-submit"
    found = str(binary) if binary.exists() else shutil.which("spark-submit")
    if found is None:
        raise FileNotFoundError("spark-submit is neither next to this Python nor on the PATH")
    return found


def address_of(url: str) -> tuple[str, int]:
    """``(host, port)`` of a Spark Connect URL (``sc://host:port/;params``; the port defaults to 15002)."""
    parsed = urlparse(url)
    return parsed.hostname or LOOPBACK, parsed.port or DEFAULT_PORT


def port_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def ping(url: str) -> None:
    """A real round trip through the Spark Connect server at ``url``: a new session counts one row (raises when the
    server does not serve Spark Connect)."""
    with connect_session(url) as spark:
        if spark.range(1).count() != 1:
            raise RuntimeError("the Spark Connect server answered a count of one row wrongly")


@dataclass
class ConnectServer:
    """One Spark Connect server on 127.0.0.1: its folder holds ``server.json`` (port, master), ``server.pid`` and
    ``server.log``. ``master`` is the Spark master its JVM runs on (``local[*]``: the audits run in the server's JVM);
    ``driver_memory`` that JVM's heap (spark-submit's ``--driver-memory``)."""

    state_dir: Path
    port: int = DEFAULT_PORT
    master: str = "local[*]"
    driver_memory: str | None = None
    host: str = LOOPBACK

    @classmethod
    def recorded(cls, state_dir: Path) -> ConnectServer | None:
        """The server as its folder's ``server.json`` records it (None when it was never started there)."""
        path = Path(state_dir) / "server.json"
        if not path.is_file():
            return None
        saved = json.loads(path.read_text())
        return cls(Path(state_dir), port=int(saved["port"]), master=saved["master"],
                   driver_memory=saved.get("driver_memory"))

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "server.pid"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "server.log"

    @property
    def pid(self) -> int | None:
        """The recorded pid when that process still runs, else None."""
        try:
            pid = int(self.pid_file.read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def conf(self) -> dict[str, str]:
        """The server's ``--conf``: Spark Connect on loopback and this port; the project's session settings (no UI, UTC,
        a loopback driver for a local master); the full tiered JIT of a JVM that hosts many audits
        (``LONG_LIVED_DRIVER_JAVA_OPTIONS``). Not the machine's class-data archive: it saves seconds of a start only,
        and with it mapped zstd-jni's native library does not load (a Connect server compresses its Arrow results
        with zstd: every collect failed)."""
        return {
            **COMMON_CONF, **(LOOPBACK_CONF if is_local(self.master) else {}),
            "spark.connect.grpc.binding.address": self.host,
            "spark.connect.grpc.binding.port": str(self.port),
            DRIVER_JAVA_OPTIONS_KEY: LONG_LIVED_DRIVER_JAVA_OPTIONS,
        }

    def command(self) -> list[str]:
        confs = [item for key, value in self.conf().items() for item in ("--conf", f"{key}={value}")]
        memory = ["--driver-memory", self.driver_memory] if self.driver_memory else []
        return [spark_submit_binary(), "--master", self.master, *memory, *confs, "--name", "kafka-zk-audit-connect",
                "--class", SERVER_CLASS, "spark-internal"]

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the server's JVM without waiting for it to serve."""
        if self.pid is not None:
            raise RuntimeError(f"a Spark Connect server already runs from {self.state_dir} (pid {self.pid}); "
                               "stop it first")
        if port_answers(self.host, self.port):
            raise RuntimeError(f"something already listens on {self.host}:{self.port}; stop it or pick another port")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        if is_local(self.master):
            env["SPARK_LOCAL_IP"] = LOOPBACK
        with self.log_file.open("ab") as out:
            proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid_file.write_text(str(proc.pid))
        (self.state_dir / "server.json").write_text(json.dumps(
            {"port": self.port, "master": self.master, "driver_memory": self.driver_memory, "url": self.url}))
        return proc

    def start(self, timeout: float = 180.0) -> ConnectServer:
        """Start the server and wait until it serves (``wait_serving``)."""
        proc = self.launch()
        self.wait_serving(timeout, proc)
        return self

    def wait_serving(self, timeout: float = 180.0, proc: subprocess.Popen[bytes] | None = None) -> None:
        """Wait until the port answers, then ping it through a Spark Connect session; stop the server and raise if
        it does not serve in time or exits."""
        deadline = time.monotonic() + timeout
        while not port_answers(self.host, self.port, timeout=1.0):
            exited = proc.poll() if proc is not None else (None if self.pid is not None else "gone")
            if exited is not None:
                self.pid_file.unlink(missing_ok=True)
                raise RuntimeError(f"the Spark Connect server exited ({exited}); see {self.log_file}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not answer on {self.host}:{self.port} within "
                                   f"{timeout:.0f}s; see {self.log_file}")
            time.sleep(0.2)
        try:
            ping(self.url)
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"the Spark Connect server on {self.host}:{self.port} does not serve Spark Connect: "
                               f"{exc}; see {self.log_file}") from None

    def is_serving(self) -> bool:
        """Whether the recorded server runs and its port answers."""
        return self.pid is not None and port_answers(self.host, self.port)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the server by its recorded pid (SIGTERM, then SIGKILL after ``timeout``); whether one was running."""
        pid = self.pid
        self.pid_file.unlink(missing_ok=True)
        if pid is None:
            return False
        try:
            os.kill(pid, signal.SIGTERM)
            if not wait_gone(pid, timeout):
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid, 15.0)
        except ProcessLookupError:
            pass
        return True


def warm_up(url: str, warehouse_root: str, rounds: int = WARM_UP_ROUNDS,
            progress: Callable[[int, float], None] | None = None) -> str | None:
    """``rounds`` audits through the server at ``url`` of the newest complete snapshot of the warehouse at
    ``warehouse_root``, without its baseline, each the DAG's whole audit (its readiness report and audit tables too)
    written to a scratch folder that is removed (the warehouse is only read): the server's JVM compiles the audit's
    code before the first event needs it (its JIT takes several audits: a new server's first five of a small
    cluster took 20.2, 10.4, 9.0, 6.8 and 6.1 s). ``progress`` hears each round's number and seconds. Returns the
    snapshot id, or None when the warehouse holds none."""
    import dataclasses
    import tempfile

    from kafka_zk_audit.audit.batch import Batch
    from kafka_zk_audit.audit.job import audit_batch, plan_batch
    from kafka_zk_audit.contract.warehouse import Warehouse

    warehouse = Warehouse(warehouse_root)
    ids = warehouse.complete_snapshots()
    if not ids:
        return None
    newest = ids[-1]
    batch = Batch(tuple(dataclasses.replace(s, baseline_id=None)
                        for s in plan_batch(warehouse, [newest], None).snapshots))
    for number in range(1, max(rounds, 1) + 1):
        began = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kafka-zk-audit-warm-up-") as scratch, connect_session(url) as spark:
            audit_batch(spark, warehouse, batch, output=Warehouse(scratch))  # as the DAG's: for the gate
        if progress is not None:
            progress(number, time.monotonic() - began)
    return newest
