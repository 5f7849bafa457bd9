"""``kafka_zk_audit.airflow.command_line``: Airflow's command line as the CLI runs it, its exit code kept and its
``atexit`` functions run before the process ends without its interpreter's teardown."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_zk_audit.airflow.command_line import exit_code
from kafka_zk_audit.cli.runner import airflow_command


def test_exit_codes_are_those_of_sys_exit(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(None) == 0
    assert exit_code(3) == 3
    assert exit_code("DagRun failed") == 1
    assert capsys.readouterr().err == "DagRun failed\n"


def test_an_airflow_command_ends_with_its_code_after_its_atexit_functions_and_other_threads(tmp_path) -> None:
    script = """
import atexit, sys, threading, time
import airflow.__main__
from kafka_zk_audit.airflow import command_line

def command():
    worker = threading.Thread(target=lambda: (time.sleep(0.3), print("worker done", flush=True)))
    worker.start()
    atexit.register(lambda: print("atexit ran", flush=True))
    raise SystemExit(sys.argv[1:] == ["fail"] and "the command failed" or None)

airflow.__main__.main = command
command_line.main(sys.argv[1:])
"""
    ok = subprocess.run([sys.executable, "-c", script, "ok"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.splitlines() == ["worker done", "atexit ran"], ok
    failed = subprocess.run([sys.executable, "-c", script, "fail"], capture_output=True, text=True, cwd=tmp_path)
    assert failed.returncode == 1 and failed.stderr.strip() == "the command failed", failed
    assert failed.stdout.splitlines() == ["worker done", "atexit ran"]


def test_the_real_airflow_command_line_runs_through_it(tmp_path) -> None:
    version = subprocess.run(airflow_command(["version"]), capture_output=True, text=True, cwd=tmp_path,
                             env={"AIRFLOW_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    import airflow

    assert version.returncode == 0, version.stderr
    assert version.stdout.strip().splitlines()[-1] == airflow.__version__
