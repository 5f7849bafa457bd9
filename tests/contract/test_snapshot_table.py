"""The snapshot table has one definition: its Parquet (Arrow) and Spark schemas are the same columns, in order."""

from __future__ import annotations

import pyarrow as pa

from kafka_zk_audit.contract.schemas import SNAPSHOT
from kafka_zk_audit.contract.snapshot_table import ARROW_SCHEMA, SNAPSHOT_COLUMNS


def test_the_arrow_and_spark_schemas_are_the_snapshot_columns() -> None:
    spark_of_arrow = {pa.string(): "string", pa.binary(): "binary", pa.int64(): "bigint", pa.int32(): "int"}
    assert ARROW_SCHEMA.names == SNAPSHOT.names == [name for name, _ in SNAPSHOT_COLUMNS]
    spark_types = [field.dataType.simpleString() for field in SNAPSHOT]
    assert [spark_of_arrow[field.type] for field in ARROW_SCHEMA] == spark_types
    assert all(field.nullable for field in SNAPSHOT) and all(field.nullable for field in ARROW_SCHEMA)
