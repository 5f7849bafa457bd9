"""One place that builds SparkSessions the way this project runs them."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

LOOPBACK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    # Python-side DataFrame debugging info costs JVM round trips on every call: planning the
    # normalizer's ~25 tables takes about half as long without it.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


def get_spark(app_name: str, master: str | None = None, shuffle_partitions: int = 8) -> SparkSession:
    """A SparkSession for local runs; under spark-submit the master comes from spark-submit."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in LOOPBACK_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
