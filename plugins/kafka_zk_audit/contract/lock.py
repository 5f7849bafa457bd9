"""A lock on one part of the warehouse, so that two runs sharing it never corrupt each other.

Each run writes its own snapshot id's directories, so only what is shared needs a lock: the Great
Expectations context and Data Docs site (the gate) and pruning (retention). On a local warehouse the lock is
an ``flock`` on ``<warehouse>/.locks/<name>.lock``, held by the process and released when it ends, however it
ends. An object store has no such primitive: there the DAG's ``max_active_runs=1`` keeps runs apart, and two
DAGs must not share a remote warehouse.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kafka_zk_audit.contract.warehouse import Warehouse

log = logging.getLogger(__name__)


class LockTimeout(TimeoutError):
    """Another run held the lock for longer than we were willing to wait."""


@contextmanager
def warehouse_lock(warehouse: Warehouse, name: str, timeout_s: float = 1800.0,
                   poll_s: float = 0.5) -> Iterator[None]:
    """Hold ``<warehouse>/.locks/<name>.lock`` (local warehouses); wait for another holder, logging who it is."""
    if not warehouse.is_local:
        log.info("warehouse %s is remote: no %s lock (one active run at a time keeps runs apart)",
                 warehouse.root, name)
        yield
        return
    folder = os.path.join(warehouse.root.removeprefix("file://"), ".locks")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.lock")
    with open(path, "a+") as handle:
        started, announced = time.monotonic(), False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not announced:
                    handle.seek(0)
                    log.info("waiting for the %s lock of %s, held by %s", name, warehouse.root,
                             handle.read().strip() or "another run")
                    announced = True
                if time.monotonic() - started > timeout_s:
                    raise LockTimeout(f"the {name} lock {path} was held for more than {timeout_s:.0f} s; "
                                      "is another audit run stuck? Its holder is named in the file") from None
                time.sleep(poll_s)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
