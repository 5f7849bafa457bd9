"""The snapshot operator's options and the hook's report of what the auditor's identity may read."""

from __future__ import annotations

import json

import pytest
from kazoo.security import make_digest_acl

from kafka_zk_audit.airflow.hooks.zookeeper import ZooKeeperHook
from kafka_zk_audit.airflow.operators.zookeeper_snapshot import ZooKeeperSnapshotOperator
from kafka_zk_audit.snapshot.walker import SnapshotOptions


def test_operator_keyword_arguments_override_single_options():
    default = ZooKeeperSnapshotOperator(task_id="default")
    assert default.options == SnapshotOptions()
    gentle = ZooKeeperSnapshotOperator(
        task_id="gentle", options=SnapshotOptions(exclude=("/zookeeper", "/consumers")), reads_per_second=5000,
        max_reads_in_flight=2000, max_bytes_in_flight=8 * 1024 * 1024, reconnect_timeout_s=120,
    )
    assert gentle.options == SnapshotOptions(
        exclude=("/zookeeper", "/consumers"), reads_per_second=5000, max_reads_in_flight=2000,
        max_bytes_in_flight=8 * 1024 * 1024, reconnect_timeout_s=120,
    )
    with pytest.raises(ValueError, match="max_reads_in_flight must be at least 1"):
        ZooKeeperSnapshotOperator(task_id="bad", max_reads_in_flight=0)


@pytest.mark.zk
def test_hook_says_whether_its_identity_may_read_the_chroot(zk_server, zk_chroot, zk_client, monkeypatch):
    zk_client.add_auth("digest", "kafka:kafka-secret")
    zk_client.create("/creator-only", b"", acl=[make_digest_acl("kafka", "kafka-secret", all=True)])
    conn = {"conn_type": "zookeeper", "host": zk_server.hosts, "login": "auditor", "password": "auditor-pw",
            "extra": {"chroot": f"{zk_chroot}/creator-only"}}
    monkeypatch.setenv("AIRFLOW_CONN_ZK_AUDITOR", json.dumps(conn))
    ok, message = ZooKeeperHook(zk_conn_id="zk_auditor").test_connection()
    assert ok and "as digest:auditor, which may NOT read" in message and "auditor-pw" not in message
    conn["extra"]["chroot"] = zk_chroot
    monkeypatch.setenv("AIRFLOW_CONN_ZK_AUDITOR", json.dumps(conn))
    ok, message = ZooKeeperHook(zk_conn_id="zk_auditor").test_connection()
    assert ok and message.endswith("which may read the chroot's root")
