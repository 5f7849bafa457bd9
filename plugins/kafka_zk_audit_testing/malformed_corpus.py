"""The checked-in corpus of malformed znodes (tests/data/malformed/, format in its README.md).

Each ``*.znode`` file is one case: ``# key: value`` header lines (path, kind, reason-contains, and
optionally data, ephemeral-owner, note), then the znode's raw data bytes up to the end of the file,
without the single final newline if there is one. ``# data: null`` makes the znode's data null.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CASE_SUFFIX = ".znode"
HEADER_KEYS = ("path", "kind", "reason-contains", "data", "ephemeral-owner", "note")
_HEADER = re.compile(rb"^# (" + b"|".join(key.encode() for key in HEADER_KEYS) + rb"):[ \t]*(.*?)[ \t\r]*$")

# Stat defaults of a snapshot row built here (epoch ms 2023-11-14T22:13:20Z).
DEFAULT_CTIME = 1_700_000_000_000
DEFAULT_ZXID = 0x100


@dataclass(frozen=True)
class Case:
    """One malformed znode: where it lives, what it holds, and what the normalizer must say about it."""

    name: str
    path: str
    kind: str
    reason_contains: str
    data: bytes | None
    ephemeral_owner: int = 0

    def row(self) -> tuple:
        """The case as a snapshot row (schema ``schemas.SNAPSHOT``)."""
        return znode_row(self.path, self.data, ephemeral_owner=self.ephemeral_owner)


def parse_case(name: str, raw: bytes) -> Case:
    """One case from a file's bytes (see the module docstring for the format)."""
    headers: dict[str, str] = {}
    rest = raw
    while True:
        line, newline, remainder = rest.partition(b"\n")
        match = _HEADER.match(line)
        if not match:
            break
        headers[match.group(1).decode()] = match.group(2).decode("utf-8")
        rest = remainder if newline else b""
    missing = [key for key in ("path", "kind", "reason-contains") if key not in headers]
    if missing:
        raise ValueError(f"corpus case {name}: missing header(s) {', '.join(missing)}")
    data: bytes | None = rest[:-1] if rest.endswith(b"\n") else rest
    if headers.get("data") == "null":
        data = None
    return Case(
        name=name,
        path=headers["path"],
        kind=headers["kind"],
        reason_contains=headers["reason-contains"],
        data=data,
        ephemeral_owner=int(headers.get("ephemeral-owner", "0")),
    )


def load_malformed_corpus(folder: str | Path) -> list[Case]:
    """Every ``*.znode`` case in the folder, sorted by file name; paths must be unique."""
    cases = [
        parse_case(file.name, file.read_bytes()) for file in sorted(Path(folder).glob(f"*{CASE_SUFFIX}"))
    ]
    seen: dict[str, str] = {}
    for case in cases:
        if case.path in seen:
            raise ValueError(f"corpus cases {seen[case.path]} and {case.name} share the path {case.path}")
        seen[case.path] = case.name
    return cases


def znode_row(
    path: str,
    data: bytes | str | None,
    *,
    czxid: int = DEFAULT_ZXID,
    mzxid: int | None = None,
    ctime: int = DEFAULT_CTIME,
    mtime: int | None = None,
    version: int = 0,
    cversion: int = 0,
    ephemeral_owner: int = 0,
    num_children: int = 0,
    unreadable: str | None = None,
    fingerprinted: str | None = None,
) -> tuple:
    """A snapshot row (schema ``schemas.SNAPSHOT``) with plausible stat defaults."""
    raw = data.encode() if isinstance(data, str) else data
    return (
        path,
        bytearray(raw) if raw is not None else None,
        czxid,
        czxid if mzxid is None else mzxid,
        czxid,
        ctime,
        ctime if mtime is None else mtime,
        version,
        cversion,
        0,
        ephemeral_owner,
        len(raw) if raw is not None else 0,
        num_children,
        unreadable,
        fingerprinted,
    )


def snapshot_rows(cases: Iterable[Case]) -> list[tuple]:
    return [case.row() for case in cases]
