"""One place that builds SparkSessions the way this project runs them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported where a session is made: the DAG file imports submit_conf without it
    from pyspark.sql import SparkSession

# Every session: no UI, and no Python-side DataFrame debugging info (it costs JVM round trips on
# every call: planning the normalizer's ~25 tables takes about half as long without it).
COMMON_CONF = {
    "spark.ui.enabled": "false",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
# The driver JVM's options, given at launch (spark-submit ``--conf``, or a session that starts its own JVM). An audit
# spends its time in the driver planning a few hundred small Spark plans, in a JVM that lives a minute: the C1 JIT
# alone (no C2) compiles that code sooner and for less CPU (the same audit: ~30% less CPU and wall time, measured with
# bench/profile_audit.py); the data-heavy work of a large tree runs in the same JVM (local masters) at C1 speed.
# C1 alone would also shrink the code cache to 48 MB, which the generated code of a 1M-znode audit overflows
# ("Out of space in CodeCache"): keep the tiered default's size.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# Local masters only: the driver on loopback. A cluster's executors must reach the driver, so with a
# spark://, yarn or k8s:// master the driver's address is left to Spark and the cluster's settings.
LOOPBACK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def submit_conf() -> dict[str, str]:
    """The ``--conf`` settings this project's apps are launched with (the DAG's audit task, the command line)."""
    return {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS}


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
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


def get_spark(app_name: str, master: str | None = None, shuffle_partitions: int = 8,
              driver_memory: str | None = None) -> SparkSession:
    """A SparkSession; under spark-submit the master comes from spark-submit (the Spark connection).
    ``driver_memory`` (e.g. ``2g``) applies when this call starts the JVM (spark-submit sets its own)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    master = master or submitted_master() or "local[*]"
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in session_conf(master).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if SparkContext._active_spark_context is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)  # this session starts the JVM
        if driver_memory:
            builder = builder.config("spark.driver.memory", driver_memory)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


SMALL_SNAPSHOT_ZNODES = 200_000


def size_spark_to(spark: SparkSession, rows: int) -> bool:
    """Spark's fixed costs dominate small inputs (a batch's znodes, a history's changes): skip code generation,
    adaptive re-planning and broadcast joins there (each broadcast is a Spark job of its own: a small audit batch
    then runs in about 16 jobs, not 90), and size shuffles to the data (about one partition per 100,000 rows).
    Returns whether the input counts as small."""
    small = rows < SMALL_SNAPSHOT_ZNODES
    spark.conf.set("spark.sql.codegen.wholeStage", str(not small).lower())
    spark.conf.set("spark.sql.adaptive.enabled", str(not small).lower())
    spark.conf.set("spark.sql.shuffle.partitions", str(max(2, min(200, rows // 100_000))))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1" if small else str(10 * 1024 * 1024))
    return small
