"""``kafka_zk_audit.contract.process.end_process``: a process ends with the exit code ``sys.exit`` would give, after
its other threads and its ``atexit`` functions, and without its interpreter's teardown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_zk_audit.contract.process import exit_code, wait_gone

SCRIPT = """
import atexit, sys, threading, time
from kafka_zk_audit.contract.process import end_process

class Teardown:
    def __del__(self):
        print("torn down", flush=True)

kept = Teardown()  # a normal exit clears module globals and prints this; end_process does not
worker = threading.Thread(target=lambda: (time.sleep(0.3), print("worker done", flush=True)))
worker.start()
atexit.register(lambda: print("atexit ran", flush=True))
print("partly written", end="")  # flushed before the end
end_process({"ok": None, "code": 3, "message": "the command failed"}[sys.argv[1]])
"""


def test_exit_codes_are_those_of_sys_exit(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(None) == 0
    assert exit_code(3) == 3
    assert exit_code("DagRun failed") == 1
    assert capsys.readouterr().err == "DagRun failed\n"


@pytest.mark.parametrize(("given", "code", "stderr"), [("ok", 0, ""), ("code", 3, ""),
                                                       ("message", 1, "the command failed")])
def test_the_process_ends_after_its_threads_and_atexit_functions_without_teardown(tmp_path, given, code, stderr):
    done = subprocess.run([sys.executable, "-c", SCRIPT, given], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == code, done
    assert done.stderr.strip() == stderr
    assert done.stdout.splitlines() == ["partly writtenworker done", "atexit ran"], done.stdout


def test_a_process_that_exited_is_gone_though_its_parent_has_not_reaped_it() -> None:
    # the forked child exits at once, but its parent never collects its status: it stays a zombie, not this process's
    # child, as a server started by a command that has ended may (a shell as the parent may reap it before it execs)
    never_reaps = ("import os, time\npid = os.fork()\nif pid == 0:\n    os._exit(0)\n"
                   "print(pid, flush=True)\ntime.sleep(30)")
    parent = subprocess.Popen([sys.executable, "-c", never_reaps], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert wait_gone(child, 10.0)
        assert Path(f"/proc/{child}").exists()  # still listed: only its parent's end would remove it
        assert not wait_gone(parent.pid, 0.2)  # a running process is not gone
    finally:
        parent.kill()
        parent.wait()
    assert wait_gone(parent.pid, 1.0)  # our own child, reaped
