"""The snapshot table: one row per znode, as both sources write it (Parquet) and the audit reads it (Spark).

``SNAPSHOT_COLUMNS`` is its one definition, column by column; ``ARROW_SCHEMA`` (the files' schema, which the
snapshot stage writes) and ``contract.schemas.SNAPSHOT`` (the Spark schema the audit reads them with) are derived
from it. No Spark here: the snapshot stage imports this module.
"""

from __future__ import annotations

import pyarrow as pa

# (name, type) of each column, in file order. Types: string, binary, int64, int32.
SNAPSHOT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("path", "string"),
    ("data", "binary"),
    ("czxid", "int64"),
    ("mzxid", "int64"),
    ("pzxid", "int64"),
    ("ctime", "int64"),
    ("mtime", "int64"),
    ("version", "int32"),
    ("cversion", "int32"),
    ("aversion", "int32"),
    ("ephemeral_owner", "int64"),
    ("data_length", "int32"),
    ("num_children", "int32"),
    # Null, or why the auditor could not read the znode (contract.secrets UNREADABLE_REASONS): "no_read_permission"
    # (data null, children unknown) or "children_no_read_permission" (data read, children unknown); the stat is
    # always there.
    ("unreadable", "string"),
    # Null, or what the snapshot replaced by keyed fingerprints (contract.secrets): "values" (secret config values)
    # or "data" (the whole data).
    ("fingerprinted", "string"),
)

_ARROW_TYPES = {"string": pa.string(), "binary": pa.binary(), "int64": pa.int64(), "int32": pa.int32()}
ARROW_SCHEMA = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in SNAPSHOT_COLUMNS])
