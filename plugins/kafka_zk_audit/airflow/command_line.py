"""``airflow`` as the CLI runs it (``python -m kafka_zk_audit.airflow.command_line dags test ...``): Airflow's own
command line, then the process ends as soon as it has finished, without tearing its interpreter down.

A Python process that has imported Airflow, Great Expectations and pandas and run a DAG spends about 2.5 s after its
last line (``airflow dags test`` of the demo cluster, measured) clearing its modules and objects one by one, which
nobody waits for but the shell. Here the end is what a normal exit does first, in its order: the other non-daemon
threads are joined, then every ``atexit`` function runs (logging's flush, Airflow's database disposal, metrics'
flush); then ``os._exit`` with the command's exit code.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading


def exit_code(code: object) -> int:
    """The process exit code of ``sys.exit(code)``; a message (a string) is printed to stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str]) -> None:
    """Run ``airflow <argv>`` and end the process with its exit code."""
    from airflow.__main__ import main as airflow_main

    sys.argv = ["airflow", *argv]
    try:
        code = exit_code(airflow_main())
    except SystemExit as stop:
        code = exit_code(stop.code)
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
