"""Spark session settings: the driver on loopback for local masters only; the driver JVM's class-data archive."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from kafka_zk_audit.audit.session import LOOPBACK_CONF, is_local, session_conf


@pytest.mark.parametrize("master", ["local", "local[*]", "local[2]", "local-cluster[2,1,1024]"])
def test_local_masters_bind_the_driver_to_loopback(master):
    assert is_local(master)
    assert session_conf(master)["spark.driver.host"] == "127.0.0.1"
    assert session_conf(master)["spark.driver.bindAddress"] == "127.0.0.1"


@pytest.mark.parametrize("master", ["spark://10.0.0.5:7077", "yarn", "k8s://https://api.example.com:6443",
                                    "localhost-cluster"])
def test_cluster_masters_leave_the_driver_address_to_spark(master):
    assert not is_local(master)
    conf = session_conf(master)
    assert not set(LOOPBACK_CONF) & set(conf)
    assert conf["spark.ui.enabled"] == "false"


def test_every_session_maps_case_with_the_jvm_not_icu(spark):
    """ICU's first case mapping in a JVM costs about 1 s and 3 GB of allocations (``COMMON_CONF``); names are ASCII."""
    from pyspark.sql import functions as F

    from kafka_zk_audit.audit.normalize.security import pascal_case

    assert session_conf("local[*]")["spark.sql.icu.caseMappings.enabled"] == "false"
    assert spark.conf.get("spark.sql.icu.caseMappings.enabled") == "false"
    names = spark.createDataFrame([("TRANSACTIONAL_ID",), ("DELEGATION_TOKEN",), ("Topic",)], "name string")
    assert [r[0] for r in names.select(pascal_case(F.col("name"))).collect()] == [
        "TransactionalId", "DelegationToken", "Topic"]


def test_outside_spark_submit_no_master_is_imposed(monkeypatch):
    from kafka_zk_audit.audit.session import submitted_master

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert submitted_master() is None


def test_apps_are_launched_with_the_driver_java_options():
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS, submit_conf

    assert submit_conf() == {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS}


def test_a_long_lived_session_that_starts_its_jvm_keeps_the_full_tiered_jit(spark):
    """The tests' shared session is started with ``long_lived=True``: its JVM runs with the long-lived options, C2
    included (the apps' driver options stop at C1)."""
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS, LONG_LIVED_DRIVER_JAVA_OPTIONS

    jvm = spark.sparkContext._jvm
    arguments = set(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(LONG_LIVED_DRIVER_JAVA_OPTIONS.split()) <= arguments
    assert "-XX:TieredStopAtLevel=1" in DRIVER_JAVA_OPTIONS.split() and not any(
        a.startswith("-XX:TieredStopAtLevel") for a in arguments)
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert hotspot.getVMOption("TieredStopAtLevel").getValue() == "4"  # C2 is the last tier


def java_version(options: str, *extra: str) -> subprocess.CompletedProcess:
    """The real ``java`` launched with a driver's options (``-version``: the JVM starts, maps, exits)."""
    return subprocess.run(["java", *extra, *options.split(), "-version"], capture_output=True, text=True, timeout=120)


def test_the_first_launch_writes_the_class_data_archive_and_later_launches_map_it(tmp_path, monkeypatch):
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS_KEY, class_data_archive, class_data_sharing

    monkeypatch.setenv("KAFKA_ZK_AUDIT_JVM_CACHE", str(tmp_path / "jvm"))
    archive = class_data_archive()
    assert archive is not None and archive.parent == tmp_path / "jvm" and not archive.exists()
    conf = {"spark.ui.enabled": "false", DRIVER_JAVA_OPTIONS_KEY: "-XX:TieredStopAtLevel=1"}
    with class_data_sharing(conf) as first:
        assert first["spark.ui.enabled"] == "false"
        options = first[DRIVER_JAVA_OPTIONS_KEY]
        assert options.startswith("-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit=")
        assert java_version(options).returncode == 0
        assert not archive.exists()  # kept only once the launch is over
    assert archive.is_file() and archive.stat().st_size > 0
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]  # no partial file, no writer's claim
    with class_data_sharing(conf) as later:
        options = later[DRIVER_JAVA_OPTIONS_KEY]
        assert f"-XX:SharedArchiveFile={archive}" in options.split()
        # -Xshare:on makes a JVM that cannot map the archive fail: this one maps it
        mapped = java_version(options, "-Xshare:on")
        assert mapped.returncode == 0, mapped.stderr
    # a damaged archive is not an error: the JVM runs without it
    archive.write_bytes(b"not an archive")
    with class_data_sharing(conf) as damaged:
        assert java_version(damaged[DRIVER_JAVA_OPTIONS_KEY]).returncode == 0
        assert java_version(damaged[DRIVER_JAVA_OPTIONS_KEY], "-Xshare:on").returncode != 0


def test_a_new_archive_takes_the_place_of_the_least_recently_used_beyond_four(tmp_path, monkeypatch):
    """Every new virtualenv or Spark writes an archive of ~180 MB: the folder keeps the four last used."""
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS_KEY, class_data_archive, class_data_sharing

    monkeypatch.setenv("KAFKA_ZK_AUDIT_JVM_CACHE", str(tmp_path / "jvm"))
    archive = class_data_archive()
    archive.parent.mkdir(parents=True)
    now = time.time()
    others = [archive.parent / f"spark-driver-other{hours}.jsa" for hours in range(1, 6)]
    for hours, other in enumerate(others, start=1):
        other.write_bytes(b"an archive of another install")
        os.utime(other, (now - hours * 3600, now - hours * 3600))
    (archive.parent / "notes.txt").write_text("not an archive")
    conf = {DRIVER_JAVA_OPTIONS_KEY: "-XX:TieredStopAtLevel=1"}
    with class_data_sharing(conf) as first:
        assert java_version(first[DRIVER_JAVA_OPTIONS_KEY]).returncode == 0
        assert all(other.exists() for other in others)  # nothing pruned until the new one is kept
    assert sorted(p.name for p in archive.parent.iterdir()) == sorted(
        [archive.name, "notes.txt", *(other.name for other in others[:3])])
    os.utime(archive, (now - 24 * 3600, now - 24 * 3600))
    with class_data_sharing(conf) as later:  # a launch that maps it marks it used
        assert f"-XX:SharedArchiveFile={archive}" in later[DRIVER_JAVA_OPTIONS_KEY].split()
    assert archive.stat().st_mtime > now - 60


def test_one_launch_writes_the_archive_at_a_time_and_a_failed_one_keeps_nothing(tmp_path, monkeypatch):
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS_KEY, class_data_archive, class_data_sharing

    monkeypatch.setenv("KAFKA_ZK_AUDIT_JVM_CACHE", str(tmp_path / "jvm"))
    archive = class_data_archive()
    conf = {DRIVER_JAVA_OPTIONS_KEY: "-XX:TieredStopAtLevel=1"}
    with pytest.raises(RuntimeError), class_data_sharing(conf) as writing:
        assert "-XX:ArchiveClassesAtExit=" in writing[DRIVER_JAVA_OPTIONS_KEY]
        with class_data_sharing(conf) as meanwhile:  # another launch while the first writes: plain options
            assert meanwhile == conf
        assert java_version(writing[DRIVER_JAVA_OPTIONS_KEY]).returncode == 0
        raise RuntimeError("spark-submit failed")
    assert not archive.exists() and list(archive.parent.iterdir()) == []
    monkeypatch.setenv("KAFKA_ZK_AUDIT_JVM_CACHE", "off")
    assert class_data_archive() is None
    with class_data_sharing(conf) as off:
        assert off == conf


def test_no_archive_when_a_folder_with_files_is_on_the_drivers_classpath(tmp_path, monkeypatch):
    """The JVM cannot write an archive with a non-empty folder on its classpath, and then turns the app's exit code
    to 1 ("Cannot have non-empty directory in paths", after the app ran): a Spark conf folder with a
    spark-defaults.conf means no archive."""
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS_KEY, class_data_archive, class_data_sharing

    monkeypatch.setenv("KAFKA_ZK_AUDIT_JVM_CACHE", str(tmp_path / "jvm"))
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    assert class_data_archive() is not None  # an empty conf folder is fine
    (conf_dir / "spark-defaults.conf").write_text("spark.executor.memory 2g\n")
    assert class_data_archive() is None
    conf = {DRIVER_JAVA_OPTIONS_KEY: "-XX:TieredStopAtLevel=1"}
    with class_data_sharing(conf) as launched:
        assert launched == conf


def test_small_inputs_skip_code_generation_and_large_ones_keep_it(spark):
    from kafka_zk_audit.audit.session import size_spark_to

    keys = ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode", "spark.sql.adaptive.enabled",
            "spark.sql.autoBroadcastJoinThreshold", "spark.sql.shuffle.partitions")
    before = {key: spark.conf.get(key) for key in keys}
    try:
        assert size_spark_to(spark, 5_000_000) is False
        # no broadcast join for a large batch either: its checks' hash relations overran a 1 GB driver at 1M znodes
        assert [spark.conf.get(key) for key in keys] == ["true", "FALLBACK", "true", "-1", "50"]
        assert spark.conf.get("spark.sql.leafNodeDefaultParallelism", None) is None
        assert size_spark_to(spark, 1_000) is True
        assert [spark.conf.get(key) for key in keys] == ["false", "NO_CODEGEN", "false", "-1", "1"]
        assert spark.conf.get("spark.sql.leafNodeDefaultParallelism", None) == "1"  # one task per local relation
        # interpreted expressions give what generated code gives, on a query with a join, an aggregate and a sort
        df = spark.range(50).selectExpr("id % 7 AS k", "concat('t', id) AS s")
        query = df.join(df.groupBy("k").count(), "k").orderBy("s").selectExpr("k", "s", "count")
        interpreted = query.collect()
        size_spark_to(spark, 5_000_000)
        assert query.collect() == interpreted and len(interpreted) == 50
    finally:
        size_spark_to(spark, 1_000)  # the small-batch settings the shared session keeps
        for key, value in before.items():
            spark.conf.set(key, value)


def commands_sent(spark, action) -> list[str]:
    """The py4j commands (their first two lines: kind and sub-kind or target) ``action`` sends to the driver JVM."""
    client = spark.sparkContext._gateway._gateway_client
    sent: list[str] = []
    original = client.send_command

    def recording(command, *args, **kwargs):
        sent.append(" ".join(command.split("\n")[:2]))
        return original(command, *args, **kwargs)

    client.send_command = recording
    try:
        action()
    finally:
        del client.send_command
    return sent


def test_a_column_expression_costs_one_call_to_the_jvm_not_a_class_lookup_each_time(spark):
    from pyspark.sql import functions as F

    from kafka_zk_audit.audit.jvm_handles import KEPT_CLASSES

    F.col("warm"), F.lit(0), F.concat_ws("/", F.col("a"))  # each function's first use looks its method up once
    sent = commands_sent(spark, lambda: (F.col("a"), F.lit(1), F.concat_ws("/", F.col("b"), F.lit("c"))))
    assert sent and not [c for c in sent if c.startswith("r ")], sent  # no reflection (class or method lookup)
    assert sent.count("c z:org.apache.spark.sql.functions") == 5, sent  # one call per function
    # the handles answer the same as py4j's own lookups, under every name PySpark uses
    view = spark.sparkContext._jvm
    for full_name, short_names in KEPT_CLASSES.items():
        assert all(getattr(view, name) is view.__dict__[full_name] for name in short_names), full_name
    assert view.functions.col("x").toString() == "x"
    frame = spark.createDataFrame([(1, "a")], ["n", "s"]).select(F.concat_ws("-", "s", F.col("n").cast("string")))
    assert frame.collect()[0][0] == "a-1"


def test_driver_threads_run_in_order_with_the_callers_job_group(spark):
    """The audit plans independent frames in two driver threads: their jobs belong to the caller's job group, and
    two threads' queries at once do not share one copy of the local properties (Spark sets each query's id there)."""
    from kafka_zk_audit.audit.session import in_driver_threads

    context = spark.sparkContext
    context.setJobGroup("driver-threads", "the test's jobs")
    try:
        counted = in_driver_threads(spark, lambda n: (spark.range(n).groupBy().count().collect()[0][0],
                                                      context.getLocalProperty("spark.jobGroup.id")), range(1, 7))
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
    assert counted == [(n, "driver-threads") for n in range(1, 7)]
    assert len(context.statusTracker().getJobIdsForGroup("driver-threads")) >= 6


def test_an_app_that_ends_with_its_job_leaves_its_jvm_objects_to_the_exit(spark):
    """keep_jvm_objects_to_exit: a proxy made afterwards registers no finalizer, so collecting it sends the JVM no
    delete command; the proxies still work. (Put back for the session the other tests share.)"""
    from py4j.finalizer import ThreadSafeFinalizer

    from kafka_zk_audit.audit.jvm_handles import keep_jvm_objects_to_exit

    prop = spark.sparkContext._gateway._gateway_client.gateway_property

    def finalizers_of_new_proxies() -> tuple[int, list]:
        proxies = [spark._jvm.java.util.ArrayList() for _ in range(5)]
        registered = list(ThreadSafeFinalizer.finalizers)
        return sum(any(key.endswith(proxy._target_id) for key in registered) for proxy in proxies), proxies

    assert prop.enable_memory_management
    assert finalizers_of_new_proxies()[0] == 5  # py4j's default: each proxy tells the JVM when it is collected
    try:
        keep_jvm_objects_to_exit(spark)
        registered, proxies = finalizers_of_new_proxies()
        assert registered == 0
        proxies[0].add("kept")
        assert proxies[0].size() == 1
    finally:
        prop.enable_memory_management = True
