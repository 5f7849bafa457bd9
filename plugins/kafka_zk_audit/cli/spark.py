"""spark-submit of the packaged Spark apps (``spark_apps/``) for the subcommands that run one, outside Airflow."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from kafka_zk_audit.cli.common import EXIT_INCOMPLETE, fail, say
from kafka_zk_audit.contract.warehouse import Warehouse


def spark_app(name: str) -> str:
    """A spark-submit entry shipped in the package (``spark_apps/<name>`` in the repo)."""
    return str(resources.files("kafka_zk_audit.spark_apps").joinpath(name))


def spark_submit(app: str, app_args: list[str], master: str, znodes: int = 0) -> int:
    """spark-submit a packaged app on ``master`` (for an audit of ``znodes``: ``session.submit_conf``); its output
    goes to stderr. Returns its exit code."""
    from kafka_zk_audit.audit.connect import spark_submit_binary
    from kafka_zk_audit.audit.session import class_data_sharing, is_local, submit_conf

    command = spark_submit_binary()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    if is_local(master):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    say(f"spark-submit --master {master} {Path(app).name} {' '.join(app_args)}")
    code = 0
    # killed by a signal, the app raises ChildProcessError: the class-data archive it was writing is not kept
    with contextlib.suppress(ChildProcessError), class_data_sharing(submit_conf(znodes)) as conf:
        confs = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
        cmd = [command, "--master", master, *confs, app, *app_args]
        with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                sys.stderr.write(line)
            code = proc.wait()
        if code < 0:
            raise ChildProcessError(code)
    return code


def submit_for_summary(app: str, app_args: list[str], master: str, warehouse: Warehouse, summary_path: str,
                       what: str) -> tuple[dict[str, Any] | None, int]:
    """spark-submit a packaged app that writes a JSON summary last: (the summary, spark-submit's exit code), or
    (None, the exit code to return) when the app left no summary."""
    code = spark_submit(spark_app(app), app_args, master)
    if not warehouse.exists(summary_path):
        return None, fail(EXIT_INCOMPLETE, f"the {what} could not complete (spark-submit exit {code}); "
                                           "see its log above")
    return warehouse.read_json(summary_path), code
