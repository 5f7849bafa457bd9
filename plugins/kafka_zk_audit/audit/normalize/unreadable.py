"""The unreadable_znodes table: every znode the auditor may not read (no READ permission)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .common import REASON, origin


def unreadable_table(classified: DataFrame) -> DataFrame:
    """kind (null for containers and paths Kafka does not own), reason (the snapshot's ``unreadable``), key
    and origin."""
    return classified.filter(F.col("unreadable").isNotNull()).select(
        "kind", F.col("unreadable").alias(REASON), *origin()
    )
