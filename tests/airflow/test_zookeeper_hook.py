"""The ZooKeeper hook: connection parsing, and a real connection with chroot and digest auth."""

from __future__ import annotations

import json

import pytest
from kazoo.security import make_digest_acl

from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook
from kafka_zk_audit.snapshot.connection import parse_auth, settings_from_connection, split_hosts_and_chroot


def test_hosts_and_chroot_are_split():
    assert split_hosts_and_chroot("zk1:2181,zk2:2181/kafka") == ("zk1:2181,zk2:2181", "/kafka")
    assert split_hosts_and_chroot("zk1:2181/") == ("zk1:2181", "")
    assert split_hosts_and_chroot("zk1:2181") == ("zk1:2181", "")


def test_settings_from_connection_fields():
    settings = settings_from_connection("zk1:2181,zk2:2181", None, None, "kafka", "pw", {"chroot": "/kafka/"})
    assert settings.hosts == "zk1:2181,zk2:2181" and settings.chroot == "/kafka"
    assert settings.auth == (("digest", "kafka:pw"),)
    assert "pw" not in repr(settings)
    assert settings.kazoo_kwargs()["hosts"] == "zk1:2181,zk2:2181/kafka"
    single = settings_from_connection("zk1", 2182, "kafka", None, None, {"auth": "digest:u:p"})
    assert single.hosts == "zk1:2182" and single.chroot == "/kafka" and single.auth == (("digest", "u:p"),)
    with pytest.raises(ValueError, match="no host"):
        settings_from_connection(None, None, None, None, None, {})
    with pytest.raises(ValueError, match="digest:USER:PASSWORD"):
        parse_auth("nocolon")


@pytest.mark.zk
def test_hook_connects_with_chroot_and_digest_auth(zk_server, zk_chroot, zk_client, monkeypatch):
    zk_client.add_auth("digest", "kafka:s3cret")
    zk_client.create("/secret", b"ok", acl=[make_digest_acl("kafka", "s3cret", all=True)])
    conn = {"conn_type": "zookeeper", "host": zk_server.hosts, "login": "kafka", "password": "s3cret",
            "extra": {"chroot": zk_chroot}}
    monkeypatch.setenv("AIRFLOW_CONN_ZK_TEST", json.dumps(conn))
    hook = ZooKeeperHook(zk_conn_id="zk_test")
    assert hook.get_settings().chroot == zk_chroot
    client = hook.get_conn()
    try:
        assert client.get("/secret")[0] == b"ok"
    finally:
        hook.close()
    assert hook.test_connection()[0] is True


@pytest.mark.zk
def test_hook_error_says_what_to_do(zk_server, monkeypatch):
    from kafka_zk_audit_testing.zk_server import free_port

    conn = {"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}", "extra": {"timeout": 1}}
    monkeypatch.setenv("AIRFLOW_CONN_ZK_DOWN", json.dumps(conn))
    with pytest.raises(ConnectionError, match="check the connection"):
        ZooKeeperHook(zk_conn_id="zk_down").get_conn()
