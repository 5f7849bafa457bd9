"""SQL text built from names and values (audit/sql_text.py) means to Spark's parser what the column API means."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, MapType, StringType, StructField, StructType

from kafka_zk_audit.audit import sql_text
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, TABLES

pytestmark = pytest.mark.spark

AWKWARD = ["it's", "back\\slash", "a `tick`", "dot.ted", "· unicode", "'; DROP"]


def test_string_literals_read_back_as_the_same_text(spark):
    row = spark.range(1).selectExpr(*[f"{sql_text.string_literal(text)} AS c{i}" for i, text in enumerate(AWKWARD)])
    assert list(row.first()) == AWKWARD


def test_identifiers_name_columns_whatever_their_characters(spark):
    frame = spark.range(1).select(*[F.lit(i).alias(name) for i, name in enumerate(AWKWARD)])
    assert list(frame.selectExpr(*map(sql_text.identifier, reversed(AWKWARD))).first()) == list(
        reversed(range(len(AWKWARD))))


def test_a_column_reference_reads_a_dot_as_a_struct_field_as_f_col_does(spark):
    frame = spark.createDataFrame([((("h", 9092),),)], "e struct<inner: struct<host: string, port: int>>")
    assert frame.select(sql_text.expr(sql_text.column_ref("e.inner.port"))).first()[0] == 9092
    assert frame.select(F.col("e.inner.port")).first()[0] == 9092


def test_every_contract_type_casts_to_itself(spark):
    odd = StructType([StructField("a b", IntegerType()), StructField("c:d", ArrayType(StringType())),
                      StructField("e`f", MapType(StringType(), IntegerType()))])
    types = [field.dataType for schema in (*TABLES.values(), CHECK_OUTPUT) for field in schema.fields] + [odd]
    cast = spark.range(1).selectExpr(*[f"{sql_text.cast('NULL', t)} AS c{i}" for i, t in enumerate(types)])
    assert [field.dataType for field in cast.schema.fields] == types


def test_nullable_and_named_struct_keep_values_and_mark_fields_nullable(spark):
    frame = spark.range(3).selectExpr("id", "CAST(id AS STRING) AS s")
    assert not frame.schema["id"].nullable
    row = frame.select(sql_text.expr(sql_text.named_struct(
        (name, sql_text.nullable(sql_text.identifier(name))) for name in ("id", "s")) + " AS r"))
    assert all(field.nullable for field in row.schema["r"].dataType.fields)
    assert sorted(tuple(r.r) for r in row.collect()) == [(0, "0"), (1, "1"), (2, "2")]
