"""Znodes the auditor could not read and data the snapshot fingerprinted: listed, never called malformed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.znodes import unreadable_znode
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.contract.schemas import KEY, SNAPSHOT
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.malformed_corpus import znode_row
from tests.audit.normalize.test_normalize import snapshot_frame

pytestmark = pytest.mark.spark

FINGERPRINT = "hmac-sha256:" + "ab" * 32
ROWS = [
    znode_row("/config/users", None, num_children=2, unreadable="no_read_permission"),
    znode_row("/config/users/alice", None, unreadable="no_read_permission"),
    znode_row("/brokers/topics/t", '{"version":1,"partitions":{"0":[1]}}', num_children=1,
              unreadable="children_no_read_permission"),
    znode_row("/config/brokers/1", json.dumps({"version": 1, "config": {
        "ssl.keystore.password": FINGERPRINT, "log.cleaner.threads": "2"}}), fingerprinted="values"),
    znode_row("/config/users/bob", FINGERPRINT, fingerprinted="data"),
    znode_row("/delegation_token/tokens/tok1", FINGERPRINT, fingerprinted="data"),
    # Copied secrets (copy_secrets=True): the normalizer still redacts every password config.
    znode_row("/config/brokers/2", json.dumps({"version": 1, "config": {
        "listener.name.ssl.ssl.keystore.key": "-----BEGIN PRIVATE KEY-----", "password.encoder.secret": "s",
        "num.io.threads": "8"}})),
    # Controls: the same bytes without the snapshot's marks are malformed.
    znode_row("/config/users/carol", FINGERPRINT),
    znode_row("/delegation_token/tokens/tok2", FINGERPRINT),
]


def collect(frame) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in frame.collect()]


@pytest.fixture(scope="module")
def tables(spark) -> dict[str, list[dict[str, Any]]]:
    normalized = normalize(snapshot_frame(spark, ROWS).coalesce(1))
    wanted = ("malformed_znodes", "unreadable_znodes", "configs", "topics", "delegation_tokens")
    collected = {name: collect(normalized[name]) for name in wanted}
    normalized.release()
    return collected


def test_unreadable_znodes_are_listed_not_malformed(tables):
    unreadable = {row["path"]: (row["kind"], row["reason"]) for row in tables["unreadable_znodes"]}
    assert unreadable == {
        "/config/users": (None, "no_read_permission"),
        "/config/users/alice": ("config", "no_read_permission"),
        "/brokers/topics/t": ("topic", "children_no_read_permission"),
    }
    malformed = {row["path"] for row in tables["malformed_znodes"]}
    assert malformed == {"/config/users/carol", "/delegation_token/tokens/tok2"}
    assert not [row for row in tables["configs"] if row["path"] == "/config/users/alice"]
    # Its data was read: a znode whose children could not be listed is normalized as usual.
    assert [row["topic"] for row in tables["topics"]] == ["t"]


def test_fingerprinted_data_is_read_as_far_as_it_goes(tables):
    configs = {row["path"]: row for row in tables["configs"]}
    assert configs["/config/brokers/1"]["config"] == {"ssl.keystore.password": FINGERPRINT, "log.cleaner.threads": "2"}
    assert configs["/config/users/bob"]["config"] is None and configs["/config/users/bob"]["entity_name"] == "bob"
    assert configs["/config/brokers/2"]["config"] == {
        "listener.name.ssl.ssl.keystore.key": "[redacted]", "password.encoder.secret": "[redacted]",
        "num.io.threads": "8",
    }
    (token,) = [row for row in tables["delegation_tokens"]]
    assert token["token_id"] == "tok1" and token["owner"] is None and token["path"] == "/delegation_token/tokens/tok1"


@pytest.mark.zk
def test_a_secure_cluster_audited_without_permission_gives_info_findings_only(spark, zk_server, zk_chroot, tmp_path):
    kafka = make_digest_acl("kafka", "kafka-secret", all=True)
    owner = KazooClient(hosts=zk_server.hosts + zk_chroot, auth_data=[("digest", "kafka:kafka-secret")])
    owner.start()
    tree = {
        "/brokers": None, "/brokers/ids": None, "/config": None, "/config/users": None,
        "/config/users/alice": b'{"version":1,"config":{"SCRAM-SHA-512":"salt=c2FsdA==,iterations=4096"}}',
        "/config/brokers": None, "/config/brokers/1": b'{"version":1,"config":{"ssl.key.password":"x"}}',
        "/config/topics": None, "/config/topics/t": b'{"version":1,"config":{}}',
    }
    for path, data in tree.items():
        creator_only = path.startswith(("/config/users", "/config/brokers"))
        owner.create(path, data, acl=[kafka] if creator_only else [kafka, make_acl("world", "anyone", read=True)])
    owner.stop()
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start()
    warehouse = Warehouse(str(tmp_path / "wh"))
    write_snapshot(reader, settings, warehouse, "20260101T000000Z")
    reader.stop()
    snapshot_id = "20260101T000000Z"
    snapshot = spark.read.schema(SNAPSHOT).parquet(warehouse.snapshot_dir(snapshot_id))
    normalized = normalize(snapshot.select(F.lit(snapshot_id).alias(KEY), "*"))
    findings = collect(unreadable_znode(normalized["unreadable_znodes"]))
    malformed = collect(normalized["malformed_znodes"])
    configs = {row["path"] for row in collect(normalized["configs"])}
    normalized.release()
    assert not malformed
    assert {row["path"]: row["detail"] for row in findings} == {
        path: "no READ permission to read its data or list its children; checks that need it skip it"
        for path in ("/config/users", "/config/brokers")
    }
    assert configs == {"/config/topics/t"}
