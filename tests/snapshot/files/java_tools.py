"""ZooKeeper's own Java tools (Debian's 3.8 jars), the independent oracles of the offline decoders."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "commons-cli.jar",
        "snappy-java.jar")
CLASSPATH = ":".join(f"/usr/share/java/{jar}" for jar in JARS)
TXN_LINE = re.compile(rb"session 0x([0-9a-f]+) cxid 0x([0-9a-f]+) zxid 0x([0-9a-f]+) (\w+)")


def _java(main_class: str, *args: str) -> bytes:
    command = ["java", "-Duser.timezone=UTC", "-cp", CLASSPATH, f"org.apache.zookeeper.server.{main_class}", *args]
    return subprocess.run(command, capture_output=True, check=True, timeout=120).stdout


def snapshot_formatter(path: Path) -> dict[str, dict[str, str]]:
    """SnapshotFormatter -d: path -> its printed fields (cZxid, ctime, …, data as base64)."""
    nodes: dict[str, dict[str, str]] = {}
    blocks = _java("SnapshotFormatter", "-d", str(path)).decode().split("\n----\n")
    for block in blocks[1:]:
        lines = block.strip("\n").split("\n")
        if not lines or not lines[0].startswith("/"):
            continue
        fields = {}
        for line in lines[1:]:
            key, _, value = line.strip().partition("=")
            fields[key.strip()] = value.strip()
        nodes[lines[0]] = fields
    return nodes


def txn_log_toolkit(path: Path) -> list[tuple[int, int, int, str]]:
    """TxnLogToolkit's dump: (session, cxid, zxid, type) of every txn."""
    return [(int(s, 16), int(c, 16), int(z, 16), t.decode()) for s, c, z, t in TXN_LINE.findall(
        _java("persistence.TxnLogToolkit", str(path)))]
