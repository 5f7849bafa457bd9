"""When the walk loses ZooKeeper: the errors it resumes after, and its retry budget.

A read is retried across reconnections (``with_retry``), and a walk waits for kazoo to reconnect
(``await_connection``), within ``max_reconnects`` reconnections and ``reconnect_timeout_s`` seconds each; beyond
that budget the snapshot fails with ``SnapshotInterrupted`` and none is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError
from kazoo.protocol.states import KeeperState
from kazoo.retry import KazooRetry, RetryFailedError

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions

# Errors after which the connection (or session) is re-established and the reads in flight resent.
RESUMABLE_ERRORS = (ConnectionLoss, SessionExpiredError, OperationTimeoutError)


class SnapshotInterrupted(ConnectionError):
    """The walk lost ZooKeeper and could not resume within its retry budget; no snapshot was written."""


def with_retry(options: SnapshotOptions, call: Callable[[], Any]) -> Any:
    """``call()``, retried across reconnections within the walk's retry budget."""
    retry = KazooRetry(
        max_tries=options.max_reconnects + 1, delay=0.1, backoff=2, max_delay=2.0,
        deadline=options.reconnect_timeout_s,
    )
    try:
        return retry(call)
    except (RetryFailedError, ConnectionClosedError) as exc:
        raise SnapshotInterrupted(
            f"lost ZooKeeper and could not get an answer within the retry budget "
            f"({options.max_reconnects} reconnections, {options.reconnect_timeout_s:.0f}s): {exc}"
        ) from None


def await_connection(client: KazooClient, options: SnapshotOptions) -> None:
    """Wait until kazoo has reconnected (``RetryFailedError`` after ``reconnect_timeout_s``, ``ConnectionClosedError``
    when the client was closed)."""

    def connected() -> None:
        if client.client_state == KeeperState.CLOSED:
            raise ConnectionClosedError("the ZooKeeper client was closed")
        if not client.connected:
            raise ConnectionLoss("not connected yet")

    retry = KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0, deadline=options.reconnect_timeout_s)
    retry(connected)
