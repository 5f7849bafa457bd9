"""One place that builds SparkSessions the way this project runs them."""

from __future__ import annotations

import os

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

# Every session: no UI, and no Python-side DataFrame debugging info (it costs JVM round trips on
# every call: planning the normalizer's ~25 tables takes about half as long without it).
COMMON_CONF = {
    "spark.ui.enabled": "false",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
# Local masters only: the driver on loopback. A cluster's executors must reach the driver, so with a
# spark://, yarn or k8s:// master the driver's address is left to Spark and the cluster's settings.
LOOPBACK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def session_conf(master: str) -> dict[str, str]:
    """The settings this project adds for a session on ``master``."""
    return {**COMMON_CONF, **(LOOPBACK_CONF if is_local(master) else {})}


def submitted_master() -> str | None:
    """The master spark-submit was given (the Spark connection), or None outside spark-submit.

    spark-submit passes its settings to the driver JVM, not to Python: they are visible only through a
    JVM-backed ``SparkConf``, so connect to the gateway spark-submit started before reading them.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


def get_spark(app_name: str, master: str | None = None, shuffle_partitions: int = 8) -> SparkSession:
    """A SparkSession; under spark-submit the master comes from spark-submit (the Spark connection)."""
    master = master or submitted_master() or "local[*]"
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in session_conf(master).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
