"""What every ``kafka-zk-audit`` subcommand shares: the exit codes, the message on stderr, ``NAME=VALUE``
arguments and whether a ZooKeeper ensemble answers.

Exit codes (``main`` and ``stages`` say what each means for their commands): 0 done, 1 the gate failed or the
cluster is blocked, 2 usage, settings or connection error (before anything starts), 3 could not complete.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_zk_audit.snapshot.connection import ZkSettings

EXIT_DONE, EXIT_BLOCKED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def say(message: str) -> None:
    """One line on stderr, after the program's name."""
    print(f"kafka-zk-audit: {message}", file=sys.stderr)


def fail(code: int, message: str) -> int:
    """Say what went wrong; return the exit code."""
    say(message)
    return code


def named(value: str) -> tuple[str | None, str]:
    """``NAME=VALUE`` → (NAME, VALUE); a bare value has no name."""
    name, sep, rest = value.partition("=")
    if sep and name and all(c.isalnum() or c in "_.-" for c in name) and "/" not in name and ":" not in name:
        return name, rest
    return None, value


def check_reachable(settings: ZkSettings) -> str | None:
    """None when the ensemble answers (and the chroot exists), else what is wrong."""
    from kazoo.client import KazooClient

    client = KazooClient(**{**settings.kazoo_kwargs(), "timeout": 10.0})
    try:
        client.start(timeout=10)
        if settings.chroot and not client.exists("/"):
            return f"chroot {settings.chroot} does not exist on {settings.hosts}"
        return None
    except Exception as exc:
        return f"cannot reach ZooKeeper at {settings.ensemble}: {exc or type(exc).__name__}"
    finally:
        client.stop()
        client.close()
