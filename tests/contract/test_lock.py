"""Two processes sharing a warehouse: the lock lets one at a time into the shared part, and a dead holder frees it."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from kafka_zk_audit.contract.lock import LockTimeout, warehouse_lock
from kafka_zk_audit.contract.warehouse import Warehouse


def hold(root: str, name: str, seconds: float, out: str) -> None:
    with warehouse_lock(Warehouse(root), name, timeout_s=60, poll_s=0.05):
        start = time.time()
        time.sleep(seconds)
        Path(out).write_text(f"{start} {time.time()}")


def test_two_processes_never_hold_the_lock_at_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=hold, args=(str(tmp_path), "gate", 1.0, str(tmp_path / f"p{i}"))) for i in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
    (a0, a1), (b0, b1) = (map(float, (tmp_path / f"p{i}").read_text().split()) for i in range(2))
    assert a1 <= b0 or b1 <= a0, "the two holders overlapped"


def test_a_killed_holder_releases_the_lock_and_a_waiter_times_out_with_a_clear_message(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    holder = ctx.Process(target=hold, args=(str(tmp_path), "retention", 30.0, str(tmp_path / "never")))
    holder.start()
    lock_file = tmp_path / ".locks" / "retention.lock"
    for _ in range(200):
        if lock_file.exists() and "pid" in lock_file.read_text():
            break
        time.sleep(0.05)
    with pytest.raises(LockTimeout, match="retention lock .* held for more than"):
        with warehouse_lock(Warehouse(str(tmp_path)), "retention", timeout_s=0.5, poll_s=0.05):
            pass
    holder.kill()
    holder.join(10)
    with warehouse_lock(Warehouse(str(tmp_path)), "retention", timeout_s=5, poll_s=0.05):
        assert f"pid {__import__('os').getpid()}" in lock_file.read_text()
