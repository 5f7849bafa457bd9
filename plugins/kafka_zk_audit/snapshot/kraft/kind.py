"""What a folder of metadata files is: a KRaft metadata dir, a ZooKeeper data dir, or neither.

So that each files source can turn the wrong kind away with the right advice: a ZooKeeper dataDir holds
``version-2/`` (or is it: ``snapshot.<hex>``, ``log.<hex>``); a KRaft ``metadata.log.dir`` holds
``__cluster_metadata-0/`` (or is it: ``%020d.log`` segments, ``*.checkpoint`` snapshots, ``bootstrap.checkpoint``).
Only names are looked at, never contents. No imports from the rest of the package.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

Kind = Literal["kraft", "zookeeper"]
KRAFT: Kind = "kraft"
ZOOKEEPER: Kind = "zookeeper"
METADATA_PARTITION = "__cluster_metadata-0"
_ZOOKEEPER_FILE = re.compile(r"^(snapshot|log)\.[0-9a-fA-F]+(\.(gz|snappy))?$")
_KRAFT_FILE = re.compile(r"^(\d{20}\.log|\d{20}-\d{10}\.checkpoint|bootstrap\.checkpoint)$")
HINTS: dict[Kind, str] = {
    KRAFT: "this is a KRaft metadata dir (__cluster_metadata-0): read it with --from-kraft",
    ZOOKEEPER: "this is a ZooKeeper data dir (version-2/snapshot.*, log.*): read it with --from-files",
}


def detect_kind(path: str | Path) -> Kind | None:
    """``"kraft"``, ``"zookeeper"``, or None when the folder (or file) looks like neither."""
    path = Path(path)
    if path.is_file():
        return _kind_of_names([path.name])
    if not path.is_dir():
        return None
    if path.name == METADATA_PARTITION or (path / METADATA_PARTITION).is_dir():
        return KRAFT
    if path.name == "version-2" or (path / "version-2").is_dir():
        return ZOOKEEPER
    try:
        names = [child.name for child in path.iterdir()]
    except OSError:
        return None
    return _kind_of_names(names)


def hint(kind: Kind | None) -> str:
    """The advice for a folder of ``kind`` ("read it with --from-kraft" ...), or a generic one for None."""
    if kind is None:
        return ("this is neither a KRaft metadata dir (__cluster_metadata-0/, *.checkpoint, NNN.log) nor a ZooKeeper "
                "data dir (version-2/, snapshot.*, log.*)")
    return HINTS[kind]


def _kind_of_names(names: list[str]) -> Kind | None:
    if any(_KRAFT_FILE.match(name) for name in names):
        return KRAFT
    if any(_ZOOKEEPER_FILE.match(name) for name in names):
        return ZOOKEEPER
    return None
