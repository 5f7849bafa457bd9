"""Processes: the end of this one once its work is done (``end_process``), and waiting for another to end
(``wait_gone``).

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
import time
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


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until process ``pid`` has exited (reaping it when it is our child); True if it did in time."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:  # not our child: poll for its end instead
            if _exited(pid):
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _exited(pid: int) -> bool:
    """Whether ``pid``, not a child of this process, has exited: it is gone, or it is a zombie whose parent has not
    collected its exit status yet (a server started by a command that has since ended belongs to whatever reaps
    orphans, which may take a second or more to do it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):  # gone meanwhile (the next poll tells), or no procfs: running as far as kill tells
        return False
