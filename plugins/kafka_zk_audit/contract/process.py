"""The end of a process whose work is done: what a normal exit does first, without the interpreter's teardown.

A Python process that has imported Airflow, Great Expectations, pandas or PySpark spends a second or more after its
last line clearing its modules and objects one by one, which nobody waits for but its parent. ``end_process`` does
what a normal exit does first, in its order: the other non-daemon threads are joined, every ``atexit`` function runs
(logging's flush among them) and stdio is flushed; then ``os._exit`` with the exit code.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_code(code: object) -> int:
    """The process exit code of ``sys.exit(code)``; a message (a string) is printed to stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def end_process(code: object) -> NoReturn:
    """End this process as ``sys.exit(code)`` would, without tearing the interpreter down."""
    status = exit_code(code)
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
