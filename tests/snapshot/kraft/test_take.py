"""The KRaft snapshot stage: a metadata directory (local, or an fsspec URL) replayed into the snapshot table and its
manifest; secrets fingerprinted as in a ZooKeeper snapshot; the wrong kind of directory turned away by each source."""

from __future__ import annotations

import base64
import functools
import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.kraft.sources import kraft_files
from kafka_zk_audit.snapshot.kraft.take import snapshot_from_kraft, write_kraft_snapshot
from kafka_zk_audit_testing.kraft_logs import KraftCluster, uuid
from tests.cli.in_process import run_main

PASSWORD = "kraft-Keystore-pw-5ecret"
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"jaas-5ecret\";"
SALT, STORED, SERVER = b"salt-5ecret-bytes", b"stored-key-5ecret", b"server-key-5ecret"
SECRETS = (PASSWORD, "jaas-5ecret", *(base64.b64encode(v).decode() for v in (SALT, STORED, SERVER)))


@pytest.fixture(scope="module")
def secret_cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated KRaft log holding what Kafka keeps there in plain bytes: a sensitive broker config, a cluster
    default JAAS config, a SCRAM credential and a delegation token."""
    cluster = KraftCluster()
    cluster.add([(4, 0, {"ResourceType": 4, "ResourceName": "1", "Value": PASSWORD,
                         "Name": "listener.name.internal.ssl.keystore.password"}),
                 (4, 0, {"ResourceType": 4, "ResourceName": "", "Name": "sasl.jaas.config", "Value": JAAS}),
                 (4, 0, {"ResourceType": 4, "ResourceName": "", "Name": "log.retention.ms", "Value": "86400000"}),
                 (11, 0, {"Name": "alice", "Mechanism": 1, "Salt": SALT, "StoredKey": STORED, "ServerKey": SERVER,
                          "Iterations": 4096}),
                 (10, 0, {"Owner": "User:alice", "Requester": "User:alice", "Renewers": [], "IssueTimestamp": 1,
                          "MaxTimestamp": 2, "ExpirationTimestamp": 2, "TokenId": "token-1"})])
    return cluster.write(tmp_path_factory.mktemp("secrets") / "metadata")


def _rows(warehouse: Warehouse, snapshot_id: str) -> dict[str, dict]:
    table = pq.read_table(Path(warehouse.snapshot_dir(snapshot_id)), partitioning=None)
    return {row["path"]: row for row in table.to_pylist()}


def test_secrets_are_fingerprinted_and_never_reach_the_warehouse_or_the_log(secret_cluster, tmp_path, caplog):
    warehouse = Warehouse(str(tmp_path / "wh"))
    with caplog.at_level(logging.DEBUG):
        manifest = write_kraft_snapshot(str(secret_cluster), warehouse, "20261128T000000Z-secrets", cluster="s")
    rows = _rows(warehouse, manifest["snapshot_id"])
    written = b"".join(path.read_bytes() for path in Path(warehouse.root).rglob("*") if path.is_file())
    for secret in SECRETS:
        assert secret.encode() not in written and secret not in caplog.text, secret
    broker = json.loads(rows["/config/brokers/1"]["data"])["config"]
    assert broker["listener.name.internal.ssl.keystore.password"].startswith("hmac-sha256:")
    default = json.loads(rows["/config/brokers/<default>"]["data"])["config"]
    assert default["log.retention.ms"] == "86400000" and default["sasl.jaas.config"].startswith("hmac-sha256:")
    assert json.loads(rows["/config/users/alice"]["data"])["config"]["SCRAM-SHA-256"].startswith("hmac-sha256:")
    assert rows["/delegation_token/tokens/token-1"]["fingerprinted"] == "data"
    assert manifest["secrets"]["fingerprinted_znodes"] == 4


def test_a_url_is_staged_and_gives_the_same_snapshot_as_the_folder(secret_cluster, tmp_path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    local = write_kraft_snapshot(str(secret_cluster), warehouse, "20261128T000000Z-local")
    url = f"file://{secret_cluster}"
    fetched = snapshot_from_kraft(functools.partial(kraft_files, url), warehouse, "url", cluster="url")
    assert fetched["source"] == "kraft" and fetched["kraft"]["dir"] == url
    assert fetched["kraft"]["offset"] == local["kraft"]["offset"] and fetched["znodes"] == local["znodes"]
    assert {p: r["data"] for p, r in _rows(warehouse, fetched["snapshot_id"]).items()} == \
        {p: r["data"] for p, r in _rows(warehouse, local["snapshot_id"]).items()}


def test_the_image_at_an_offset_and_at_a_time(tmp_path):
    cluster = KraftCluster()
    cluster.create_topic("late", 1)  # after the healthy log's NoOps
    root = cluster.write(tmp_path / "metadata")
    warehouse = Warehouse(str(tmp_path / "wh"))
    newest = write_kraft_snapshot(str(root), warehouse, "20261128T000000Z-newest")
    before = write_kraft_snapshot(str(root), warehouse, "20261128T000000Z-before",
                                  at_offset=newest["kraft"]["offset"] - 3)
    assert (newest["kraft"]["topics"], before["kraft"]["topics"]) == (4, 3)
    assert "/brokers/topics/late" not in _rows(warehouse, before["snapshot_id"])
    from datetime import UTC, datetime

    at = datetime.fromtimestamp((before["kraft"]["time_ms"]) / 1000, UTC)
    by_time = write_kraft_snapshot(str(root), warehouse, "20261128T000000Z-bytime", at_time=at)
    assert by_time["kraft"]["offset"] == before["kraft"]["offset"]
    assert uuid("topic", "late") not in json.dumps(_rows(warehouse, by_time["snapshot_id"]), default=str)


def test_each_files_source_names_the_kind_it_was_given_and_the_option_that_reads_it(secret_cluster, tmp_path, capsys,
                                                                                   monkeypatch):
    zookeeper = tmp_path / "zk" / "version-2"
    zookeeper.mkdir(parents=True)
    (zookeeper / "snapshot.0").write_bytes(b"")
    wh = str(tmp_path / "wh")
    kraft_as_files = run_main(["snapshot", "--from-files", str(secret_cluster), "--warehouse", wh], capsys,
                              monkeypatch)
    assert kraft_as_files.returncode == 2 and "read it with --from-kraft" in kraft_as_files.stderr
    assert "snapshot rebuilt" not in kraft_as_files.stderr
    zk_as_kraft = run_main(["snapshot", "--from-kraft", str(zookeeper.parent), "--warehouse", wh], capsys,
                           monkeypatch)
    assert zk_as_kraft.returncode == 2 and "read it with --from-files" in zk_as_kraft.stderr
    done = run_main(["snapshot", "--from-kraft", f"pay={secret_cluster}", "--warehouse", wh], capsys, monkeypatch)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)
    assert (manifest["cluster"], manifest["source"], manifest["kraft"]["brokers"]) == ("pay", "kraft", 4)
