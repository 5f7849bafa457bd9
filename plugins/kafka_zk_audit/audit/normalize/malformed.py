"""The malformed_znodes table: every parsed znode that has a reason."""

from __future__ import annotations

from pyspark.sql import DataFrame

from .common import REASON, origin


def malformed_table(parsed: DataFrame) -> DataFrame:
    """kind, reason, key and origin of each rejected znode, from the parse frame (``onepass.parse_frame``)."""
    return parsed.filter(f"{REASON} IS NOT NULL").select("kind", REASON, *origin())
