"""A walk's reads as requests on kazoo's connection, without kazoo's per-request cost.

``send`` turns reads into one multiRead or one request per read, ``receive`` waits for their results. A lock-free
``Reply`` stands in for kazoo's ``AsyncResult``, ``call_all`` queues a group of requests with one wake-up of kazoo's
connection thread, and ``response_bytes`` sizes a single-operation response for the walk's in-flight byte estimate.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, NoAuthError, NoNodeError, OperationTimeoutError
from kazoo.protocol.serialization import Exists, GetChildren, GetData
from kazoo.protocol.states import KeeperState, ZnodeStat

from kafka_zk_audit.snapshot.multiread import GET_CHILDREN, GET_DATA, PathReads, ReadError

# A response's size for the in-flight byte estimate: a stat is 68 bytes, plus headers and lengths.
STAT_BYTES = 80


class Reply:
    """What kazoo's connection fills in for one request: a lock-free stand-in for its ``AsyncResult``.

    kazoo calls ``set`` or ``set_exception`` only. Replies the walker waits on carry its ``signal``;
    the others are plain slots (a session's requests are answered in order, so once the last request
    of a group is answered, the group's others are too).
    """

    __slots__ = ("done", "error", "signal", "value")

    def __init__(self, signal: threading.Condition | None = None) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.signal = signal

    def set(self, value: Any = None) -> None:
        self.value = value
        self._finish()

    def set_exception(self, exception: BaseException) -> None:
        self.error = exception
        self._finish()

    def _finish(self) -> None:
        if self.signal is None:
            self.done = True
            return
        with self.signal:
            self.done = True
            self.signal.notify_all()



def call_all(client: KazooClient, requests: list[Any], replies: list[Reply]) -> None:
    """kazoo's ``_call`` for each request, with a single wake-up of its connection thread for all of them."""
    if len(requests) == 1 or client.client_state != KeeperState.CONNECTED:
        for request, reply in zip(requests, replies, strict=True):
            client._call(request, reply)  # kazoo's own checks of the session state
        return
    client._queue.extend(zip(requests, replies, strict=True))
    try:
        client._connection._write_sock.sendall(b"\0" * len(requests))  # one byte per request, as ``_call`` writes
    except Exception:  # closed meanwhile: kazoo fails whatever is queued, as ``_call`` does
        for reply in replies:
            if not reply.done:
                reply.set_exception(ConnectionClosedError("Connection has been closed"))


def response_bytes(result: Any) -> int:
    """The size of one single-operation response, for the byte estimate."""
    if isinstance(result, ZnodeStat) or result is None:
        return STAT_BYTES
    if isinstance(result, tuple):
        return STAT_BYTES + len(result[0] or b"")
    if isinstance(result, list):
        return 8 + 4 * len(result) + sum(map(len, result))
    return STAT_BYTES


def send(client: KazooClient, ops: list[tuple[str, str, bool, Any]], mode: str,
         signal: threading.Condition) -> list[Reply]:
    """Send a walk's reads ``(kind, path, …)``: one multiRead, or one request per read (an exists for a "stat"
    read); the replies, the last one awaitable (it carries ``signal``)."""
    chroot = client.chroot or ""
    root = chroot or "/"
    if ops[0][0] == "stat":
        requests: list[Any] = [Exists(chroot + ops[0][1] if ops[0][1] != "/" else root, None)]
    elif mode == "multi":
        requests = [PathReads([(GET_DATA if kind == "data" else GET_CHILDREN, chroot + p if p != "/" else root)
                               for kind, p, _, _ in ops])]
    else:
        requests = [
            GetData(chroot + p if p != "/" else root, None) if kind == "data"
            else GetChildren(chroot + p if p != "/" else root, None)
            for kind, p, _, _ in ops
        ]
    replies = [Reply() for _ in range(len(requests) - 1)]
    replies.append(Reply(signal))
    call_all(client, requests, replies)
    return replies


def await_reply(reply: Reply, timeout: float) -> None:
    """Wait for ``reply`` (``OperationTimeoutError`` after ``timeout`` seconds)."""
    if reply.done:
        return
    if reply.signal is not None:
        with reply.signal:
            if reply.signal.wait_for(lambda: reply.done, timeout):
                return
    else:  # not expected: kazoo answers in order, and the group's last reply is awaited first
        deadline = time.monotonic() + timeout
        while not reply.done and time.monotonic() < deadline:
            time.sleep(0.001)
        if reply.done:
            return
    raise OperationTimeoutError(f"no response within {timeout:.0f}s")


def receive(replies: list[Reply], mode: str, kind: str, timeout: float) -> tuple[list, int]:
    """The results of the requests, one per read (per-read errors, NoNode and NoAuth, as ``ReadError``; a "stat"
    read's as None), and their response bytes; ``OperationTimeoutError`` after ``timeout`` seconds."""
    await_reply(replies[-1], timeout)
    results: list = []
    answered = 0
    for reply in replies:
        if not reply.done:
            await_reply(reply, timeout)
        error = reply.error
        if error is not None:
            if not isinstance(error, (NoNodeError, NoAuthError)):
                raise error
            results.append(None if kind == "stat" else ReadError(error))
        elif mode == "multi" and kind != "stat":
            answered += getattr(reply.value, "response_bytes", 0)
            results.extend(reply.value)
        else:
            answered += response_bytes(reply.value)
            results.append(reply.value)
    return results, answered
