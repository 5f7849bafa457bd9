"""Handles of the JVM classes PySpark reaches on every column expression, kept for the life of the gateway.

PySpark's classic API finds a JVM class by name through py4j's ``JVMView`` each time it needs it: every ``F.*`` call
looks up ``org.apache.spark.sql.functions`` and then the function by reflection, and every column list goes through
``PythonUtils``. py4j answers each lookup with a round trip to the driver JVM, and a short name (``functions``,
``PythonUtils``) first fails a class lookup through every one of Spark's ~280 jars before its import matches. An
audit builds tens of thousands of expressions, so these lookups were about a quarter of its driver's CPU time.

:func:`keep_jvm_handles` stores each class's handle on the gateway's view under the names PySpark uses, so the
lookup is an attribute read; a handle keeps the static methods it was asked for (a method handle holds only the
class and method names; each call still goes to the JVM). Fields are never kept: their value is read each time.
``KAFKA_ZK_AUDIT_JVM_HANDLES=off`` leaves py4j's own lookups (bench/bench_jvm_handles.py compares the two).
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# each class, under its full name and the short names PySpark's code uses for it
KEPT_CLASSES: dict[str, tuple[str, ...]] = {
    "org.apache.spark.sql.functions": ("functions",),
    "org.apache.spark.api.python.PythonUtils": ("PythonUtils",),
    "org.apache.spark.sql.api.python.PythonSQLUtils": ("PythonSQLUtils",),
    "org.apache.spark.sql.classic.SparkSession": (),
}
JVM_HANDLES_ENV = "KAFKA_ZK_AUDIT_JVM_HANDLES"


@functools.cache
def _method_keeping_class() -> type:
    """py4j's ``JavaClass``, keeping the handles of the static methods looked up on it (py4j imported here: the
    DAG file imports this package's session module without pyspark)."""
    from py4j.java_gateway import JavaClass, JavaMember

    class MethodKeepingClass(JavaClass):
        def __getattr__(self, name: str) -> Any:
            found = JavaClass.__getattr__(self, name)
            if isinstance(found, JavaMember):
                object.__setattr__(self, name, found)
            return found

    return MethodKeepingClass


def keep_jvm_handles(spark: SparkSession) -> None:
    """Keep the handles of :data:`KEPT_CLASSES` on ``spark``'s gateway view (once per gateway)."""
    if os.environ.get(JVM_HANDLES_ENV, "").strip().lower() == "off":
        return
    context = spark.sparkContext
    view, client = context._jvm, context._gateway._gateway_client
    if view is None or all(name in view.__dict__ for name in KEPT_CLASSES):
        return
    kept = _method_keeping_class()
    for full_name, short_names in KEPT_CLASSES.items():
        handle = kept(full_name, client)
        for name in (full_name, *short_names):
            view.__dict__[name] = handle


def keep_jvm_objects_to_exit(spark: SparkSession) -> None:
    """For a process that ends with its job (a spark-submit app): the JVM objects its Python proxies reach from now
    on are released when the driver JVM exits, not one by one as Python collects the proxies.

    By default py4j tells the JVM of each collected proxy: one delete command each, sent by its finalizer thread
    while the driver plans (about 10,000 per audit of a small cluster, and 0.6-0.8 s of a 6 s warm audit on two
    cores; bench/bench_audit_counts.py). An app's proxies are a few per DataFrame and expression it builds, however
    many rows it reads; frames the app is done with are still unpersisted explicitly."""
    spark.sparkContext._gateway._gateway_client.gateway_property.enable_memory_management = False
