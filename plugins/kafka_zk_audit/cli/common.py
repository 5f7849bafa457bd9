"""What every ``kafka-zk-audit`` subcommand shares: the exit codes, the message on stderr, ``NAME=VALUE``
arguments, the names of unnamed clusters and whether a ZooKeeper ensemble answers.

Exit codes (``main`` and ``stages`` say what each means for their commands): 0 done, 1 the gate failed or the
cluster is blocked, 2 usage, settings or connection error (before anything starts), 3 could not complete.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
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


_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_NAME_MAX = 63  # the settings' cluster names: a letter or digit, then up to 62 of letters, digits, _ . -


def cluster_name_problem(name: str) -> str | None:
    """None when ``name`` may name a cluster (the settings' rule for ``clusters[].name``), else why not."""
    from pydantic import TypeAdapter, ValidationError

    from kafka_zk_audit.contract.settings.models import ClusterName

    try:
        TypeAdapter(ClusterName).validate_python(name)
    except ValidationError:
        return f"cluster name {name!r}: a letter or digit, then up to 62 letters, digits, '_', '.' or '-'"
    return None


def _as_name(text: str) -> str:
    """``text`` with every run of characters a cluster name may not hold as one ``-``, trimmed to a valid name."""
    return _NOT_IN_A_NAME.sub("-", text).lstrip("-_.")[:_NAME_MAX].rstrip("-_.")


def name_from_address(target: str) -> str:
    """The name of an unnamed ``HOST:PORT[,HOST:PORT…][/chroot]``: its chroot's last segment (``/kafka/alpha`` →
    ``alpha``), else its first host and port (``127.0.0.1:2181`` → ``127.0.0.1-2181``), as a valid cluster name."""
    hosts, slash, chroot = target.partition("/")
    segment = _as_name(chroot.rstrip("/").rpartition("/")[2]) if slash else ""
    return segment or _as_name(hosts.split(",")[0].strip()) or "cluster"


def unique_names(wanted: Iterable[str | None], derived: Iterable[str]) -> list[str]:
    """Each target's name: the one it was given, else the one derived for it, with ``-2``, ``-3``, … while another
    target (a given name first) has it."""
    wanted, derived = list(wanted), list(derived)
    taken = {name for name in wanted if name}
    names = []
    for given, base in zip(wanted, derived, strict=True):
        if given:
            names.append(given)
            continue
        name, suffix = base, 2
        while name in taken:
            tail = f"-{suffix}"
            name, suffix = base[:_NAME_MAX - len(tail)] + tail, suffix + 1
        taken.add(name)
        names.append(name)
    return names


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
