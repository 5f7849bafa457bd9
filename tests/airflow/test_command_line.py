"""``kafka_zk_audit.airflow.command_line``: Airflow's command line as the CLI runs it, its exit code kept and the
process ended without its interpreter's teardown (``contract.process.end_process``, tests/contract/test_process.py)."""

from __future__ import annotations

import subprocess
import sys

from kafka_zk_audit.cli.runner import airflow_command


def test_an_airflow_command_ends_with_its_code_after_its_atexit_functions(tmp_path) -> None:
    script = """
import atexit, sys
import airflow.__main__
from kafka_zk_audit.airflow import command_line

def command():
    atexit.register(lambda: print("atexit ran", flush=True))
    if sys.argv[1:] == ["fail"]:
        raise SystemExit("the command failed")
    return None

airflow.__main__.main = command
command_line.main(sys.argv[1:])
"""
    ok = subprocess.run([sys.executable, "-c", script, "ok"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.splitlines() == ["atexit ran"], ok
    failed = subprocess.run([sys.executable, "-c", script, "fail"], capture_output=True, text=True, cwd=tmp_path)
    assert failed.returncode == 1 and failed.stderr.strip() == "the command failed", failed
    assert failed.stdout.splitlines() == ["atexit ran"]


def test_the_real_airflow_command_line_runs_through_it(tmp_path) -> None:
    version = subprocess.run(airflow_command(["version"]), capture_output=True, text=True, cwd=tmp_path,
                             env={"AIRFLOW_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    import airflow

    assert version.returncode == 0, version.stderr
    assert version.stdout.strip().splitlines()[-1] == airflow.__version__


def test_only_a_dags_test_run_warms_imports_up_in_a_thread(tmp_path) -> None:
    script = """
import sys
import airflow.__main__
from kafka_zk_audit.airflow import command_line

def command():
    thread = command_line.warm_imports(("tabnanny", "no_such_module_here", "wave"))
    if thread is not None:
        thread.join()
    print(command_line.tasks_run_here(), thread is not None, "tabnanny" in sys.modules, "wave" in sys.modules)

airflow.__main__.main = command
command_line.main(sys.argv[1:])
"""
    runs = {}
    for args in (["dags", "test", "kafka_zk_audit"], ["version"]):
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done
        runs[args[0]] = done.stdout.split()
    # under dags test the modules load in order, up to the one that fails (its task imports it and reports)
    assert runs == {"dags": ["True", "True", "True", "False"], "version": ["False", "False", "False", "False"]}
