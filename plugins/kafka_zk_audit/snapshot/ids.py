"""Snapshot ids: a new one per snapshot (``<UTC start>-<suffix>``), the next second's while another writer holds it.

A writer claims its id's directory first; ``SnapshotIdTaken`` says another writer has it, and ``under_new_id``
then retries with the next second's id. Both sources take their ids so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kafka_zk_audit.contract.warehouse import new_snapshot_id

log = logging.getLogger(__name__)


class SnapshotIdTaken(FileExistsError):
    """Another writer has (or is writing) a snapshot of this id; nothing was read or written."""



ID_ATTEMPTS = 5  # snapshot ids are per second: writers of one cluster starting together take the next seconds


def under_new_id(suffix: str, write: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """``write(snapshot_id)`` with a new id (``<UTC start>-<suffix>``), the next second's while the id is taken by
    another writer (``SnapshotIdTaken``, up to ``ID_ATTEMPTS`` tries); what ``write`` returned."""
    for attempt in range(ID_ATTEMPTS):
        snapshot_id = new_snapshot_id(suffix=suffix)
        try:
            return write(snapshot_id)
        except SnapshotIdTaken:
            if attempt == ID_ATTEMPTS - 1:
                raise
            log.info("snapshot id %s is taken by another writer; taking the next second's", snapshot_id)
            time.sleep(1.0)
    raise AssertionError("unreachable")
