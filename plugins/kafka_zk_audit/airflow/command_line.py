"""``airflow`` as the CLI runs it (``python -m kafka_zk_audit.airflow.command_line dags test ...``): Airflow's own
command line, then the process ends as soon as it has finished, without tearing its interpreter down
(``kafka_zk_audit.contract.process.end_process``).

A process that has imported Airflow, Great Expectations and pandas and run a DAG spends about 2.5 s after its last
line (``airflow dags test`` of the demo cluster, measured) clearing its modules and objects one by one.

Under ``dags test`` every task of the run runs in this process, one after the other. A task that waits on a
subprocess (the audit's spark-submit) leaves the interpreter idle: ``warm_imports`` lends it to a later task's
imports (the gate's Great Expectations, 2.8 s of a 4.4 s gate, measured).
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from typing import NoReturn

from kafka_zk_audit.contract.process import end_process

log = logging.getLogger(__name__)
_tasks_run_here = False  # set by main for ``dags test``


def tasks_run_here() -> bool:
    """Whether the DAG run's tasks all run in this process: ``airflow dags test`` started through ``main``."""
    return _tasks_run_here


def warm_imports(modules: tuple[str, ...]) -> threading.Thread | None:
    """Import ``modules`` in a daemon thread when the run's later tasks run in this process (``tasks_run_here``),
    and return the thread; elsewhere (an executor's task process ends with its task) do nothing. A module that
    fails to import is left for its task to import, and to report."""
    if not _tasks_run_here:
        return None

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the task that needs it imports it again and fails with its own message
                log.debug("warming up the import of %s failed", name, exc_info=True)
                return

    thread = threading.Thread(target=load, name="warm-imports", daemon=True)
    thread.start()
    return thread


def main(argv: list[str]) -> NoReturn:
    """Run ``airflow <argv>`` and end the process with its exit code."""
    from airflow.__main__ import main as airflow_main

    global _tasks_run_here
    _tasks_run_here = argv[:2] == ["dags", "test"]
    sys.argv = ["airflow", *argv]
    try:
        code: object = airflow_main()
    except SystemExit as stop:
        code = stop.code
    end_process(code)


if __name__ == "__main__":
    # through the module as the package imports it (run with -m this file is __main__, a module of its own): the
    # tasks read that module's tasks_run_here
    from kafka_zk_audit.airflow.command_line import main as package_main

    package_main(sys.argv[1:])
