"""Spark session settings: the driver on loopback for local masters only."""

from __future__ import annotations

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


def test_outside_spark_submit_no_master_is_imposed(monkeypatch):
    from kafka_zk_audit.audit.session import submitted_master

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert submitted_master() is None


def test_apps_are_launched_with_the_driver_java_options():
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS, submit_conf

    assert submit_conf() == {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS}


def test_a_session_that_starts_its_jvm_runs_it_with_the_driver_java_options(spark):
    from kafka_zk_audit.audit.session import DRIVER_JAVA_OPTIONS

    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert set(DRIVER_JAVA_OPTIONS.split()) <= set(runtime.getInputArguments())
