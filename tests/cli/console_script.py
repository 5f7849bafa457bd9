"""The installed ``kafka-zk-audit`` console script run as a user runs it: in a new process, in the foreground or in
the background. A call that mostly waits (a dead ZooKeeper's 10 s pre-flight, Airflow's connection lookup) is
started in the background before a module's long foreground call, so that its wait overlaps that call."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CLI = str(Path(sys.executable).parent / "kafka-zk-audit")


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without Airflow's and the project's variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KAFKA_ZK_AUDIT"))}
    return {**env, **(extra or {})}


def airflow_home_env(folder: Path) -> dict[str, str]:
    """This process's environment without Airflow's variables, with ``folder/airflow`` as the Airflow home (absent
    until an Airflow starts there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    return {**env, "AIRFLOW_HOME": str(folder / "airflow")}


def cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """``kafka-zk-audit ARGS`` in the foreground (``env``: default ``clean_env()``)."""
    return subprocess.run([CLI, *args], env=env or clean_env(), capture_output=True, text=True, timeout=timeout)


class Background:
    """``kafka-zk-audit ARGS`` started now; ``result()`` waits for it and gives what ``cli`` would have."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.args = [CLI, *args]
        self._out = tempfile.TemporaryFile("w+")  # files, not pipes: nothing blocks on output no one reads yet
        self._err = tempfile.TemporaryFile("w+")
        self._proc = subprocess.Popen(self.args, env=env or clean_env(), stdout=self._out, stderr=self._err,
                                      text=True)
        self._result: subprocess.CompletedProcess | None = None

    def result(self, timeout: float = 900) -> subprocess.CompletedProcess:
        """The finished call's exit code and output (waits for it the first time)."""
        if self._result is None:
            code = self._proc.wait(timeout=timeout)
            printed = []
            for stream in (self._out, self._err):
                stream.seek(0)
                printed.append(stream.read())
                stream.close()
            self._result = subprocess.CompletedProcess(self.args, code, printed[0], printed[1])
        return self._result

    def stop(self) -> None:
        """End the call if it still runs (a test failed before reading it)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        for stream in (self._out, self._err):
            stream.close()
