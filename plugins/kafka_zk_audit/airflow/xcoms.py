"""The snapshot ids of a run as the tasks after the snapshot get them: a list XCom."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def snapshot_id_list(pulled: Any) -> list[str]:
    """The ids in what the mapped snapshot task pushed: its output (a lazy sequence of the clusters that pushed
    one), a list pulled from XCom, a single id, or None. Clusters whose snapshot failed push nothing (or None)."""
    if pulled is None:
        return []
    if isinstance(pulled, str):
        values: Sequence[Any] = [pulled]
    elif isinstance(pulled, Sequence):
        values = pulled[:]  # one request for the snapshot task's output, however many clusters pushed
    else:
        values = list(pulled)
    return [value for value in values if isinstance(value, str) and value and value != "None"]
