"""The malformed_znodes table: every parsed znode that has a reason."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from kafka_zk_audit.audit.unions import union_all

from .common import REASON, origin


def malformed_table(results: Sequence[DataFrame]) -> DataFrame:
    """kind, reason, key and origin of each rejected znode, from every parse result."""
    rejected = [result.filter(f"{REASON} IS NOT NULL").select("kind", REASON, *origin()) for result in results]
    return union_all(rejected, by_name=False)
