"""The normalizer on one snapshot: valid znodes of every kind and encoding version, plus the malformed corpus.

Singleton znodes (/controller, /feature, …) appear more than once, told apart by mzxid, so that every
encoding version (and the corpus case of that singleton) fits in one snapshot: the normalizer works row
by row. Examples marked "seed" are real data published in articles on Kafka's ZooKeeper layout (000 to
004: the project's seed articles), kept as published apart from obvious typos. Each table is
collected once (module fixture); the tests only look at Python rows. The input is a ``keyed(SNAPSHOT)``
frame; every row of every table carries its snapshot's ``snapshot_id``, checked and dropped on collection.
Two snapshots normalized together give exactly what each gives alone (the last test; the first of the two is the
one snapshot the other tests look at, normalized alone once).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafka_zk_audit.audit.normalize import NormalizedTables, normalize
from kafka_zk_audit.contract.schemas import KEY, SNAPSHOT, TABLES, keyed
from kafka_zk_audit_testing.malformed_corpus import DEFAULT_CTIME, load_malformed_corpus, znode_row

pytestmark = pytest.mark.spark

CORPUS = load_malformed_corpus(Path(__file__).resolve().parents[2] / "data" / "malformed")
CORPUS_MZXID = 0xBAD  # tells corpus znodes apart from valid znodes at the same singleton path
SESSION = 0x1000000000000001
PYKAFKA_ID = "worker-1.example.com:9f1c2b3a-4d5e-4f60-8a7b-0c1d2e3f4a5b"
SEED_CONSUMER = "console-consumer-2304_hadoop2-1525747915241-6b48ff32"
ENCRYPTED = (
    "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,"
    "salt:c2FsdA==,iterations:4096,encryptedPassword:c2VjcmV0LXBhc3N3b3Jk,passwordLength:8,initializationVector:aXY="
)
SCRAM = "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
SNAPSHOT_ID = "20260101T000000Z"


def snapshot_frame(spark: SparkSession, rows: list[tuple], snapshot_id: str = SNAPSHOT_ID) -> DataFrame:
    """Snapshot rows (``znode_row`` tuples) as a ``keyed(SNAPSHOT)`` frame of one snapshot."""
    return spark.createDataFrame([(snapshot_id, *row) for row in rows], keyed(SNAPSHOT))


ZNODES: list[tuple] = [
    # --- brokers: v1 0.8.0 hand-built, v1 seed, v2, v3 rack present/absent/null, v4, v5
    znode_row(
        "/brokers/ids/0",
        '{ "host":"broker0.example.com", "jmx_port":-1, "port":9092, "timestamp":"1380000000000", '
        '"version":1 }',
        ephemeral_owner=SESSION,
        czxid=0x10,
    ),
    znode_row(
        "/brokers/ids/1",
        '{\n"jmx_port": -1,\n"timestamp":"1525741823119",\n"version": 1,\n"host": "hadoop1",\n'
        '"port": 9092\n}',
        ephemeral_owner=SESSION + 1,
        czxid=0x11,
    ),
    znode_row(
        "/brokers/ids/2",
        '{"jmx_port":-1,"timestamp":"1449000000000","endpoints":["PLAINTEXT://h2:9092","SSL://[::1]:9093"],'
        '"host":"h2","version":2,"port":9092}',
        ephemeral_owner=SESSION + 2,
    ),
    znode_row(
        "/brokers/ids/3",
        '{"jmx_port":9999,"timestamp":"1","endpoints":["PLAINTEXT://h3:9092"],"rack":"rack-a","host":"h3",'
        '"version":3,"port":9092}',
        ephemeral_owner=SESSION + 3,
    ),
    znode_row(
        "/brokers/ids/4",
        '{"jmx_port":-1,"timestamp":"2","endpoints":["PLAINTEXT://h4:9092"],"host":"h4","version":3,"port":9092}',
    ),
    znode_row(
        "/brokers/ids/5",
        '{"jmx_port":-1,"timestamp":"3","endpoints":["SASL_PLAINTEXT://h5:9095"],"rack":null,"host":null,'
        '"version":3,"port":-1}',
        ephemeral_owner=SESSION + 5,
    ),
    # seed 002
    znode_row(
        "/brokers/ids/104",
        '{\n  "listener_security_protocol_map": {\n    "PLAINTEXT": "PLAINTEXT"\n  },\n'
        '  "endpoints": ["PLAINTEXT://hadoop7:9092"],\n  "jmx_port": 9393,\n  "host": "hadoop7",\n'
        '  "timestamp": "1554349917296",\n  "port": 9092,\n  "version": 4\n}',
        ephemeral_owner=SESSION + 104,
    ),
    # v4 with listener names, IPv6 and a null host; SASL only, so host null / port -1
    znode_row(
        "/brokers/ids/21",
        '{"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"PLAINTEXT","EXTERNAL":"SASL_SSL"},'
        '"endpoints":["CLIENT://h21.example.com:9092","REPLICATION://[2001:db8::21]:9093","EXTERNAL://:9094"],'
        '"rack":"rack-b","jmx_port":-1,"host":null,"timestamp":"1600000000000","port":-1,"version":4}',
        ephemeral_owner=SESSION + 21,
    ),
    znode_row(
        "/brokers/ids/22",
        '{"features":{"metadata.version":{"min_version":1,"max_version":7}},'
        '"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h22:9092"],'
        '"jmx_port":-1,"host":"h22","timestamp":"1700000000000","port":9092,"version":5}',
        ephemeral_owner=SESSION + 22,
    ),
    znode_row(
        "/brokers/ids/23",
        '{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        '"endpoints":["PLAINTEXT://h23:9092"],"jmx_port":-1,"host":"h23","timestamp":"1700000000001",'
        '"port":9092,"version":5}',
        ephemeral_owner=SESSION + 23,
    ),
    # --- topics: v1 seed, v1 0.8.0 hand-built, v1 seed 002, v2 with adding/removing, v3 with/without id
    znode_row(
        "/brokers/topics/topic2",
        '{"version":1,"partitions":{"2":[1,2,3],"1":[0,1,2],"0":[3,0,1]}}',
        czxid=0x20,
    ),
    znode_row(
        "/brokers/topics/legacy.topic_08", '{ "partitions":{ "0":[ 1, 2 ], "1":[ 2, 1 ] }, "version":1 }'
    ),
    znode_row(
        "/brokers/topics/bl_mall_orders",
        '{\n  "version": 1,\n  "partitions": {\n    "8": [103],\n    "4": [109],\n    "9": [104],\n'
        '    "5": [110],\n    "6": [111],\n    "1": [106],\n    "0": [105],\n    "2": [107],\n'
        '    "7": [102],\n    "3": [108]\n  }\n}',
    ),
    znode_row(
        "/brokers/topics/moving-topic",
        '{"version":2,"partitions":{"0":[1,2,3],"1":[2,3]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}',
    ),
    znode_row(
        "/brokers/topics/with-id",
        '{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{},'
        '"topic_id":"vSg0OfZkRyKq2Xy6wSZ_Dg"}',
    ),
    znode_row(
        "/brokers/topics/without-id",
        '{"version":3,"partitions":{"0":[2]},"adding_replicas":{},"removing_replicas":{}}',
    ),
    znode_row("/brokers/topics/bubuku-topic", '{"version":"1","partitions":{"0":[1,2]}}'),
    # --- partition states: seed, with leader_recovery_state, 0.8.0 hand-built, seeds 002/003, orphan
    znode_row(
        "/brokers/topics/topic2/partitions/0/state",
        '{\n"controller_epoch": 1,\n"leader": 3,\n"version": 1,\n"leader_epoch": 0,\n"isr": [3, 0, 1]\n}',
        version=4,
    ),
    znode_row(
        "/brokers/topics/topic2/partitions/1/state",
        '{"version":1,"leader":0,"leader_epoch":5,"controller_epoch":2,"isr":[0],"leader_recovery_state":1}',
        version=9,
    ),
    znode_row(
        "/brokers/topics/topic2/partitions/7/state",
        '{"controller_epoch":61,"leader":0,"version":1,"leader_epoch":0,"isr":[0,2,1]}',
    ),
    znode_row(
        "/brokers/topics/legacy.topic_08/partitions/0/state",
        '{ "controller_epoch":1, "isr":[ 1, 2 ], "leader":1, "leader_epoch":0, "version":1 }',
    ),
    znode_row(
        "/brokers/topics/bl_mall_orders/partitions/0/state",
        '{\n  "controller_epoch": 17,\n  "leader": 105,\n  "version": 1,\n  "leader_epoch": 2,\n'
        '  "isr": [105]\n}',
    ),
    # --- controller v1 seed, v1 0.8.0, v2 (KRaft, persistent), bare int; controller_epoch
    znode_row(
        "/controller",
        '{"version":1,"brokerid":0,"timestamp":"1525741822769"}',
        mzxid=1,
        ephemeral_owner=SESSION,
    ),
    znode_row(
        "/controller",
        '{ "brokerid":1, "timestamp":"1380000000000", "version":1 }',
        mzxid=2,
        ephemeral_owner=7,
    ),
    znode_row(
        "/controller",
        '{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":7}',
        mzxid=3,
    ),
    znode_row("/controller", "2", mzxid=4, ephemeral_owner=8),
    znode_row("/controller_epoch", "5", version=4),
    znode_row("/cluster/id", '{"version":"1","id":"wDq1hUYfRtKz3bnHt_iLbA"}'),
    znode_row(
        "/feature",
        '{"features":{"finalized.x":{"min_version_level":1,"max_version_level":2}},"version":1,"status":1}',
        mzxid=1,
    ),
    znode_row("/feature", '{"version":2,"status":0,"features":{}}', mzxid=2),
    znode_row(
        "/migration",
        '{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":1,'
        '"kraft_metadata_offset":1234567890123,"kraft_metadata_epoch":5}',
    ),
    # --- configs of every entity type (secrets redacted), config changes in three formats
    znode_row(
        "/config/topics/topic2",
        '{"version":1,"config":{"retention.ms":"172800000","cleanup.policy":"compact"}}',
    ),
    znode_row("/config/topics/with-id", '{"version":1,"config":{}}'),
    znode_row("/config/topics/seed-topic", '{ "version": 1, "config": { "config.a": "x", "config.b": "y" }}'),
    znode_row("/config/clients/client%2A1", '{"version":1,"config":{"producer_byte_rate":"1048576"}}'),
    znode_row(
        "/config/users/alice",
        '{"version":1,"config":{"SCRAM-SHA-256":"' + SCRAM + '","SCRAM-SHA-512":"' + SCRAM + '",'
        '"consumer_byte_rate":"2048"}}',
    ),
    znode_row("/config/users/alice/clients/app1", '{"version":1,"config":{"producer_byte_rate":"10"}}'),
    znode_row("/config/users/bob", None),
    znode_row(
        "/config/brokers/0",
        '{"version":1,"config":{"leader.replication.throttled.rate":"1000000",'
        '"listener.name.external.ssl.key.password":"' + ENCRYPTED + '","log.cleaner.threads":"2"}}',
    ),
    znode_row(
        "/config/brokers/<default>", '{"version":1,"config":{"sasl.jaas.config":"plain secret","x":"1"}}'
    ),
    znode_row("/config/ips/<default>", '{"version":1,"config":{"connection_creation_rate":"100"}}'),
    znode_row("/config/ips/10.0.0.1", '{"version":1,"config":{"connection_creation_rate":"10"}}'),
    znode_row("/config/changes/config_change_0000000001", '"my-topic"'),
    znode_row(
        "/config/changes/config_change_0000000002", '{"version":1,"entity_type":"clients","entity_name":"c1"}'
    ),
    znode_row("/config/changes/config_change_0000000003", '{"version":2,"entity_path":"topics/topic2"}'),
    znode_row(
        "/config/changes/config_change_0000000004", '{"entity_path":"users/alice/clients/app1","version":2}'
    ),
    znode_row("/config/changes/config_change_0000000005", '{"version":2,"entity_path":"brokers/<default>"}'),
    znode_row("/config/changes/config_change_0000000016", '{"version":2,"entity_path":"users/alice"}'),
    # --- notifications
    znode_row(
        "/isr_change_notification/isr_change_0000000000",
        '{"version":1,"partitions":[{"topic":"topic2","partition":0},{"topic":"topic2","partition":1}]}',
    ),
    znode_row("/log_dir_event_notification/log_dir_event_0000000012", '{"version":1,"broker":2,"event":1}'),
    # --- admin markers (seed 000/002 examples; bubuku's string version), producer-id block
    znode_row("/admin/delete_topics/old-topic", None),
    znode_row("/admin/delete_topics/older-topic", ""),
    znode_row(
        "/admin/reassign_partitions",
        '{\n  "version": 1,\n  "partitions":\n     [\n        {\n            "topic": "Foo",\n'
        '            "partition": 1,\n            "replicas": [0, 1, 3]\n        }\n     ]\n}',
        mzxid=1,
    ),
    znode_row(
        "/admin/reassign_partitions",
        '{"version":"1","partitions":[{"topic":"topic2","partition":2,"replicas":[1,2]}]}',
        mzxid=2,
    ),
    znode_row(
        "/admin/preferred_replica_election",
        '{\n  "version": 1,\n  "partitions":\n     [\n        {\n            "topic": "Foo",\n'
        '            "partition": 1\n        },\n        {\n            "topic": "Bar",\n'
        '            "partition": 0\n        }\n     ]\n}',
    ),
    znode_row(
        "/latest_producer_id_block",
        '{"version":1,"broker":0,"block_start":"8000","block_end":"8999"}',
        mzxid=1,
    ),
    znode_row("/latest_producer_id_block", "", mzxid=2),
    znode_row("/latest_producer_id_block", None, mzxid=3),
    # --- ACLs: literal, prefixed, 1.0-era unescaped backslash; changes in both stores and both cases
    znode_row(
        "/kafka-acl/Topic/topic2",
        '{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},'
        '{"principal":"User:bob","permissionType":"Deny","operation":"Write","host":"10.0.0.1"}]}',
    ),
    znode_row(
        "/kafka-acl/Cluster/kafka-cluster",
        '{"version":1,"acls":[{"principal":"User:admin","permissionType":"Allow","operation":"All","host":"*"}]}',
    ),
    znode_row(
        "/kafka-acl/Group/legacy-group",
        '{"version":1,"acls":[{"principal":"User:CN=Bob\\,O=Org","permissionType":"Allow","operation":"Read",'
        '"host":"*"}]}',
    ),
    znode_row(
        "/kafka-acl-extended/prefixed/Topic/orders-",
        '{"version":1,"acls":[{"principal":"User:carol","permissionType":"Allow","operation":"Describe",'
        '"host":"*"}]}',
    ),
    znode_row("/kafka-acl-changes/acl_changes_0000000000", "Topic:topic2"),
    znode_row("/kafka-acl-changes/acl_changes_0000000001", "TOPIC:topic2"),
    znode_row("/kafka-acl-changes/acl_changes_0000000002", "TRANSACTIONAL_ID:tx:1"),
    znode_row("/kafka-acl-changes/acl_changes_0000000003", "Cluster:kafka-cluster"),
    znode_row(
        "/kafka-acl-extended-changes/acl_changes_0000000000",
        '{"version":1,"resourceType":"Topic","name":"orders-","patternType":"PREFIXED"}',
    ),
    znode_row(
        "/kafka-acl-extended-changes/acl_changes_0000000001",
        '{"version":1,"resourceType":"DELEGATION_TOKEN","name":"tok-","patternType":"PREFIXED"}',
    ),
    # --- delegation tokens v1 / v3
    znode_row(
        "/delegation_token/tokens/tok-v1",
        '{"version":1,"owner":"User:alice","renewers":["User:bob"],"issueTimestamp":1600000000000,'
        '"maxTimestamp":1600604800000,"expiryTimestamp":1600086400000,"tokenId":"tok-v1"}',
    ),
    znode_row(
        "/delegation_token/tokens/tok-v3",
        '{"version":3,"owner":"User:alice","tokenRequester":"User:svc","renewers":[],"issueTimestamp":1,'
        '"maxTimestamp":3,"expiryTimestamp":2,"tokenId":"tok-v3"}',
    ),
    znode_row("/delegation_token/token_changes/token_change_0000000000", "tok-v1"),
    # --- old consumers: seeds 000/001, 0.8.0 hand-built, unescaped wildcard, pykafka
    znode_row(
        f"/consumers/console-consumer-2304/ids/{SEED_CONSUMER}",
        '{\n"version": 1,\n"subscription": {\n"topic2": 1\n},\n"pattern": "white_list",\n'
        '"timestamp": "1525747915336"\n}',
        ephemeral_owner=SESSION + 50,
    ),
    znode_row(
        "/consumers/open_platform/ids/open_platform_host1-1411294187000-1a2b3c4d",
        '{"version": 1,"subscription": {"open_platform_opt_push_plus1": 5},"pattern": "static",'
        '"timestamp": "1411294187842"}',
        ephemeral_owner=SESSION + 51,
    ),
    znode_row(
        "/consumers/g08/ids/g08_old-host-1380000000000-00aa11bb",
        '{ "pattern":"static", "subscription":{ "topic2": 2 }, "timestamp":"1380000000000", "version":1 }',
    ),
    znode_row(
        "/consumers/wild/ids/wild_host-1-deadbeef",
        '{"version":1,"subscription":{"bl_mall_.*\\d+":1},"pattern":"white_list","timestamp":"1558617131642"}',
    ),
    znode_row(f"/consumers/pyk-group/ids/{PYKAFKA_ID}", "topic2", ephemeral_owner=SESSION + 52),
    znode_row("/consumers/console-consumer-2304/owners/topic2/0", f"{SEED_CONSUMER}-0", ephemeral_owner=5),
    znode_row(
        "/consumers/open_platform/owners/open_platform_opt_push_plus1/3",
        "open_platform_host1-1411294187000-1a2b3c4d-10",
    ),
    znode_row("/consumers/pyk-group/owners/topic2/3-1", PYKAFKA_ID),
    znode_row("/consumers/pyk-group/owners/topic2/3-2", "host:12345678-1234-4234-8234-123456789012"),
    znode_row("/consumers/testgroup/offsets/testtopic/0", "81234", mtime=DEFAULT_CTIME + 5000),
    znode_row("/consumers/testgroup/offsets/testtopic/1", "-1"),
    znode_row("/consumers/testgroup/offsets/testtopic/2", "abc"),
    znode_row("/consumers/testgroup/offsets/testtopic/3", "42\n"),
    znode_row("/consumers/testgroup/offsets/testtopic/4", ""),
    znode_row("/consumers/testgroup/offsets/testtopic/5", "99999999999999999999"),
    # --- containers and paths Kafka does not own: ignored, never malformed
    *(
        znode_row(path, data)
        for path, data in (
            ("/brokers/ids", None),
            ("/brokers/topics", None),
            ("/brokers/seqid", ""),
            ("/brokers/topics/topic2/partitions", None),
            ("/brokers/topics/topic2/partitions/0", None),
            ("/config/topics", None),
            ("/config/changes", None),
            ("/config/users/bob/clients", None),
            ("/admin", None),
            ("/admin/delete_topics", '{"version": 1, "topics": ["foo", "bar"]}'),
            ("/admin/schedule_leader_election", "garbage"),
            ("/isr_change_notification", None),
            ("/kafka-acl/Topic", None),
            ("/delegation_token/tokens", None),
            ("/consumers/testgroup/offsets/testtopic", None),
            ("/consumers/pyk-group/owners/topic2", None),
            ("/kafka-manager/clusters/main", "not json at all"),
            ("/zookeeper/quota", None),
            ("/", None),
            ("/config/changes/not_a_change", "x"),
        )
    ),
]


VALID_PATHS = {row[0] for row in ZNODES}


# The snapshot the tests look at: every valid znode, the malformed corpus, an unreadable znode and a partition
# state without an assignment (topic2/7). The last test normalizes it together with QUIET: nearly nothing, but an
# assignment of topic2/7 without a state, which the partitions join must not pair with BUSY's state.
BUSY = [
    *ZNODES,
    *(znode_row(case.path, case.data, mzxid=CORPUS_MZXID, ephemeral_owner=case.ephemeral_owner) for case in CORPUS),
    znode_row("/config/users/carol", None, unreadable="no_read_permission"),
]
QUIET_ID = "20260102T000000Z"
QUIET = [
    znode_row("/brokers/ids", None, num_children=0),
    znode_row("/brokers/topics/topic2", '{"version":1,"partitions":{"7":[2]}}'),
]


def keyed_rows(normalized: NormalizedTables) -> dict[str, list[dict[str, Any]]]:
    """Each table's rows as dicts with their ``snapshot_id`` (one Spark job per table: a union of every table
    costs more to plan), then the cache released."""
    rows = {name: [row.asDict(recursive=True) for row in frame.collect()] for name, frame in normalized.items()}
    normalized.release()
    return rows


def as_texts(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    """Each table's rows as sorted JSON texts, to compare row for row."""
    return {name: sorted(json.dumps(row, sort_keys=True, default=str) for row in table)
            for name, table in rows.items()}


@pytest.fixture(scope="module")
def busy_alone(spark) -> dict[str, Any]:
    """BUSY normalized alone (one input partition: fewer tasks per table on the shared 2-core machine): each
    table's keyed rows, and the frames' schemas under "_schemas"."""
    normalized = normalize(snapshot_frame(spark, BUSY).coalesce(1))
    schemas = {name: frame.schema for name, frame in normalized.items()}
    return {**keyed_rows(normalized), "_schemas": schemas}


@pytest.fixture(scope="module")
def tables(busy_alone: dict[str, Any]) -> dict[str, Any]:
    """Every table of BUSY: {table: [row dicts]} without the key (checked to be SNAPSHOT_ID), plus the frames'
    schemas under "_schemas"."""
    collected: dict[str, Any] = {"_schemas": busy_alone["_schemas"]}
    for name in busy_alone["_schemas"]:
        rows = [dict(row) for row in busy_alone[name]]
        assert {row.pop(KEY) for row in rows} <= {SNAPSHOT_ID}, name
        collected[name] = rows
    return collected


def by_path(rows: list[dict], path: str) -> list[dict]:
    return [row for row in rows if row["path"] == path]


def one(rows: list[dict], path: str, **match: Any) -> dict:
    found = [row for row in by_path(rows, path) if all(row[key] == value for key, value in match.items())]
    assert len(found) == 1, (path, match, found)
    return found[0]


def endpoint(listener: str, protocol: str, host: str | None, port: int) -> dict:
    return {"listener": listener, "security_protocol": protocol, "host": host, "port": port}


def test_every_table_has_exactly_its_schema(tables):
    assert set(tables["_schemas"]) == set(TABLES)
    for name, schema in TABLES.items():
        assert tables["_schemas"][name] == keyed(schema), name


def test_a_frame_without_snapshot_id_is_refused(spark):
    unkeyed = spark.createDataFrame([znode_row("/controller_epoch", "1")], SNAPSHOT)
    with pytest.raises(ValueError, match=KEY):
        normalize(unkeyed, persist=False)


def test_every_corpus_case_has_exactly_its_malformed_row(tables):
    assert len(CORPUS) >= 15
    found: dict[str, list[dict]] = {}
    for row in tables["malformed_znodes"]:
        found.setdefault(row["path"], []).append(row)
    for case in CORPUS:
        rows = found.get(case.path, [])
        assert len(rows) == 1, (case.name, rows)
        assert rows[0]["kind"] == case.kind, (case.name, rows[0])
        assert case.reason_contains in rows[0]["reason"], (case.name, rows[0])
        assert (rows[0]["mzxid"], rows[0]["ctime"]) == (CORPUS_MZXID, DEFAULT_CTIME)
    assert set(found) == {case.path for case in CORPUS}, "a valid znode was reported as malformed"


def test_malformed_znodes_have_no_row_in_their_tables(tables):
    # Only the notifications table lists sequential children whatever their data (for backlog checks).
    corpus_rows = {(case.path, CORPUS_MZXID) for case in CORPUS}
    for name, rows in tables.items():
        if name in ("_schemas", "malformed_znodes", "notifications"):
            continue
        leaked = [row for row in rows if (row["path"], row["mzxid"]) in corpus_rows]
        assert leaked == [], name


def test_unknown_paths_and_containers_are_ignored(tables):
    every_path = {row["path"] for name, rows in tables.items() if name != "_schemas" for row in rows}
    for ignored in ("/kafka-manager/clusters/main", "/admin/schedule_leader_election", "/brokers/ids", "/"):
        assert ignored not in every_path


def test_broker_v1_hand_built_and_seed(tables):
    rows = tables["brokers"]
    assert one(rows, "/brokers/ids/0") == {
        "broker_id": 0, "version": 1, "host": "broker0.example.com", "port": 9092, "jmx_port": -1,
        "timestamp": 1380000000000, "rack": None,
        "endpoints": [endpoint("PLAINTEXT", "PLAINTEXT", "broker0.example.com", 9092)],
        "listener_security_protocol_map": None, "features": None, "session": SESSION, "broker_epoch": 0x10,
        "is_ephemeral": True, "path": "/brokers/ids/0", "mzxid": 0x10, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    seed = one(rows, "/brokers/ids/1")
    assert (seed["host"], seed["port"], seed["timestamp"], seed["session"]) == (
        "hadoop1",
        9092,
        1525741823119,
        SESSION + 1,
    )
    assert seed["endpoints"] == [endpoint("PLAINTEXT", "PLAINTEXT", "hadoop1", 9092)]


def test_broker_v2_and_v3(tables):
    rows = tables["brokers"]
    v2 = one(rows, "/brokers/ids/2")
    assert v2["endpoints"] == [
        endpoint("PLAINTEXT", "PLAINTEXT", "h2", 9092),
        endpoint("SSL", "SSL", "::1", 9093),
    ]
    assert v2["listener_security_protocol_map"] is None
    assert [one(rows, f"/brokers/ids/{i}")["rack"] for i in (3, 4, 5)] == ["rack-a", None, None]
    assert one(rows, "/brokers/ids/3")["jmx_port"] == 9999
    no_plaintext = one(rows, "/brokers/ids/5")
    assert (no_plaintext["host"], no_plaintext["port"]) == (None, -1)
    assert no_plaintext["endpoints"] == [endpoint("SASL_PLAINTEXT", "SASL_PLAINTEXT", "h5", 9095)]
    not_ephemeral = one(rows, "/brokers/ids/4")
    assert (not_ephemeral["session"], not_ephemeral["is_ephemeral"], not_ephemeral["broker_epoch"]) == (
        0,
        False,
        0x100,
    )


def test_broker_v4_listener_names_ipv6_null_host(tables):
    rows = tables["brokers"]
    seed = one(rows, "/brokers/ids/104")
    assert (seed["version"], seed["host"], seed["jmx_port"], seed["timestamp"]) == (
        4,
        "hadoop7",
        9393,
        1554349917296,
    )
    assert seed["endpoints"] == [endpoint("PLAINTEXT", "PLAINTEXT", "hadoop7", 9092)]
    named = one(rows, "/brokers/ids/21")
    assert (named["host"], named["port"], named["rack"]) == (None, -1, "rack-b")
    assert named["endpoints"] == [
        endpoint("CLIENT", "SSL", "h21.example.com", 9092),
        endpoint("REPLICATION", "PLAINTEXT", "2001:db8::21", 9093),
        endpoint("EXTERNAL", "SASL_SSL", None, 9094),
    ]
    assert named["listener_security_protocol_map"] == {
        "CLIENT": "SSL",
        "REPLICATION": "PLAINTEXT",
        "EXTERNAL": "SASL_SSL",
    }


def test_broker_v5_features_kept_as_json_text(tables):
    rows = tables["brokers"]
    assert (
        one(rows, "/brokers/ids/22")["features"] == '{"metadata.version":{"min_version":1,"max_version":7}}'
    )
    assert one(rows, "/brokers/ids/23")["features"] == "{}"
    assert {row["version"] for row in rows} == {1, 2, 3, 4, 5}
    assert len(rows) == 10


def test_topics_every_version(tables):
    rows = tables["topics"]
    assert one(rows, "/brokers/topics/topic2") == {
        "topic": "topic2", "version": 1, "topic_id": None, "partition_count": 3, "czxid": 0x20,
        "path": "/brokers/topics/topic2", "mzxid": 0x20, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    summary = {row["topic"]: (row["version"], row["topic_id"], row["partition_count"]) for row in rows}
    assert summary == {
        "topic2": (1, None, 3),
        "legacy.topic_08": (1, None, 2),
        "bl_mall_orders": (1, None, 10),
        "moving-topic": (2, None, 2),
        "with-id": (3, "vSg0OfZkRyKq2Xy6wSZ_Dg", 1),
        "without-id": (3, None, 1),
        "bubuku-topic": (1, None, 1),
    }


def test_assignments_explode_partitions_with_adding_and_removing(tables):
    rows = tables["assignments"]
    seed = sorted((row["partition"], row["replicas"]) for row in by_path(rows, "/brokers/topics/topic2"))
    assert seed == [(0, [3, 0, 1]), (1, [0, 1, 2]), (2, [1, 2, 3])]
    legacy = by_path(rows, "/brokers/topics/legacy.topic_08")
    assert sorted((row["partition"], row["replicas"]) for row in legacy) == [(0, [1, 2]), (1, [2, 1])]
    moving = {row["partition"]: row for row in by_path(rows, "/brokers/topics/moving-topic")}
    assert (moving[0]["replicas"], moving[0]["adding_replicas"], moving[0]["removing_replicas"]) == (
        [1, 2, 3], [3], [1]
    )  # fmt: skip
    assert (moving[1]["adding_replicas"], moving[1]["removing_replicas"]) == (None, None)
    assert len(by_path(rows, "/brokers/topics/bl_mall_orders")) == 10
    assert one(rows, "/brokers/topics/bl_mall_orders", partition=8)["replicas"] == [103]


def test_partition_states(tables):
    rows = tables["partition_states"]
    assert one(rows, "/brokers/topics/topic2/partitions/0/state") == {
        "topic": "topic2", "partition": 0, "version": 1, "leader": 3, "leader_epoch": 0, "isr": [3, 0, 1],
        "controller_epoch": 1, "leader_recovery_state": 0, "state_version": 4,
        "path": "/brokers/topics/topic2/partitions/0/state", "mzxid": 0x100, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    recovering = one(rows, "/brokers/topics/topic2/partitions/1/state")
    assert (recovering["leader_recovery_state"], recovering["state_version"], recovering["leader_epoch"]) == (
        1,
        9,
        5,
    )
    legacy = one(rows, "/brokers/topics/legacy.topic_08/partitions/0/state")
    assert (legacy["leader"], legacy["isr"], legacy["controller_epoch"]) == (1, [1, 2], 1)
    assert one(rows, "/brokers/topics/bl_mall_orders/partitions/0/state")["controller_epoch"] == 17
    assert len(rows) == 5


def test_partitions_full_outer_join(tables):
    rows = {(row["topic"], row["partition"]): row for row in tables["partitions"]}
    joined = rows[("topic2", 0)]
    assert joined == {
        "topic": "topic2", "partition": 0, "replicas": [3, 0, 1], "leader": 3, "isr": [3, 0, 1],
        "leader_epoch": 0, "controller_epoch": 1, "leader_recovery_state": 0, "state_version": 4,
        "assigned": True, "has_state": True, "path": "/brokers/topics/topic2/partitions/0/state",
        "mzxid": 0x100, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    missing_state = rows[("topic2", 2)]
    assert (missing_state["assigned"], missing_state["has_state"], missing_state["leader"]) == (
        True,
        False,
        None,
    )
    assert (missing_state["path"], missing_state["mzxid"]) == ("/brokers/topics/topic2", 0x20)
    orphan = rows[("topic2", 7)]
    assert (orphan["assigned"], orphan["has_state"], orphan["replicas"], orphan["leader"]) == (
        False,
        True,
        None,
        0,
    )
    assert orphan["path"] == "/brokers/topics/topic2/partitions/7/state"
    assert len(rows) == len(tables["assignments"]) + 1


def test_controller_v1_v2_and_bare_int(tables):
    rows = {row["mzxid"]: row for row in tables["controller"]}
    assert rows[1] == {
        "broker_id": 0, "version": 1, "timestamp": 1525741822769, "kraft_controller_epoch": None,
        "session": SESSION, "is_ephemeral": True, "path": "/controller", "mzxid": 1, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    assert (rows[2]["broker_id"], rows[2]["version"], rows[2]["timestamp"], rows[2]["session"]) == (
        1, 1, 1380000000000, 7
    )  # fmt: skip
    kraft = rows[3]
    assert (kraft["broker_id"], kraft["version"], kraft["kraft_controller_epoch"], kraft["is_ephemeral"]) == (
        3000, 2, 7, False
    )  # fmt: skip
    assert (rows[4]["broker_id"], rows[4]["version"], rows[4]["timestamp"], rows[4]["session"]) == (
        2,
        None,
        None,
        8,
    )


def test_controller_epoch_cluster_id_feature_migration(tables):
    assert tables["controller_epoch"] == [
        {"epoch": 5, "data_version": 4, "path": "/controller_epoch", "mzxid": 0x100, "ctime": DEFAULT_CTIME}
    ]
    assert [(row["cluster_id"], row["version"]) for row in tables["cluster_id"]] == [
        ("wDq1hUYfRtKz3bnHt_iLbA", "1")
    ]
    features = {row["mzxid"]: (row["version"], row["status"], row["features"]) for row in tables["feature"]}
    assert features == {
        1: (1, 1, '{"finalized.x":{"min_version_level":1,"max_version_level":2}}'),
        2: (2, 0, "{}"),
    }
    assert tables["migration"] == [
        {
            "version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 1,
            "kraft_metadata_offset": 1234567890123, "kraft_metadata_epoch": 5, "mtime": 1700000000000,
            "path": "/migration",
            "mzxid": 0x100, "ctime": DEFAULT_CTIME,
        }
    ]  # fmt: skip


def test_configs_every_entity_type(tables):
    rows = {(row["entity_type"], row["entity_name"]): row for row in tables["configs"]}
    assert set(rows) == {
        ("topics", "topic2"), ("topics", "with-id"), ("topics", "seed-topic"), ("clients", "client%2A1"),
        ("users", "alice"), ("users/clients", "alice/app1"), ("users", "bob"), ("brokers", "0"),
        ("brokers", "<default>"), ("ips", "<default>"), ("ips", "10.0.0.1"),
    }  # fmt: skip
    assert rows[("topics", "topic2")]["config"] == {"retention.ms": "172800000", "cleanup.policy": "compact"}
    assert rows[("topics", "with-id")]["config"] == {}
    assert rows[("topics", "seed-topic")]["config"] == {"config.a": "x", "config.b": "y"}
    assert rows[("users/clients", "alice/app1")]["path"] == "/config/users/alice/clients/app1"
    assert (rows[("users", "bob")]["version"], rows[("users", "bob")]["config"]) == (None, {})
    assert rows[("ips", "10.0.0.1")]["config"] == {"connection_creation_rate": "10"}


def test_config_secrets_are_redacted_everywhere(tables):
    rows = {(row["entity_type"], row["entity_name"]): row["config"] for row in tables["configs"]}
    assert rows[("users", "alice")] == {
        "SCRAM-SHA-256": "[redacted]", "SCRAM-SHA-512": "[redacted]", "consumer_byte_rate": "2048"
    }  # fmt: skip
    assert rows[("brokers", "0")] == {
        "leader.replication.throttled.rate": "1000000",
        "listener.name.external.ssl.key.password": "[redacted]",
        "log.cleaner.threads": "2",
    }
    assert rows[("brokers", "<default>")] == {"sasl.jaas.config": "[redacted]", "x": "1"}
    everything = repr({name: rows for name, rows in tables.items() if name != "_schemas"})
    for secret in ("stored_key", "c3RvcmVk", "encryptedPassword", "c2VjcmV0LXBhc3N3b3Jk", "plain secret"):
        assert secret not in everything


def test_config_changes_three_formats(tables):
    rows = {row["seq"]: row for row in tables["config_changes"]}
    assert rows[1] == {
        "seq": 1, "format": "v0_topic_string", "version": None, "entity_type": "topics",
        "entity_name": "my-topic", "entity_path": "topics/my-topic",
        "path": "/config/changes/config_change_0000000001", "mzxid": 0x100, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    summary = {
        seq: (row["format"], row["version"], row["entity_type"], row["entity_name"], row["entity_path"])
        for seq, row in rows.items()
    }
    assert summary == {
        1: ("v0_topic_string", None, "topics", "my-topic", "topics/my-topic"),
        2: ("v1", 1, "clients", "c1", "clients/c1"),
        3: ("v2", 2, "topics", "topic2", "topics/topic2"),
        4: ("v2", 2, "users/clients", "alice/app1", "users/alice/clients/app1"),
        5: ("v2", 2, "brokers", "<default>", "brokers/<default>"),
        16: ("v2", 2, "users", "alice", "users/alice"),
    }


def test_notifications_every_sequential_child(tables):
    rows = {(row["kind"], row["seq"]): row for row in tables["notifications"]}
    assert rows[("config_change", 16)] == {
        "kind": "config_change", "parent": "/config/changes", "name": "config_change_0000000016", "seq": 16,
        "path": "/config/changes/config_change_0000000016", "mzxid": 0x100, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    counts: dict[str, int] = {}
    for (kind, _), row in rows.items():
        if row["path"] in VALID_PATHS:
            counts[kind] = counts.get(kind, 0) + 1
    assert counts == {
        "config_change": 6, "isr_change": 1, "log_dir_event": 1, "acl_change": 4, "acl_extended_change": 2,
        "token_change": 1,
    }  # fmt: skip
    assert rows[("log_dir_event", 12)]["parent"] == "/log_dir_event_notification"
    assert rows[("token_change", 0)]["name"] == "token_change_0000000000"


def test_isr_change_and_log_dir_event_notifications(tables):
    path = "/isr_change_notification/isr_change_0000000000"
    isr = sorted(
        (row["seq"], row["topic"], row["partition"], row["path"])
        for row in tables["isr_change_notifications"]
    )
    assert isr == [(0, "topic2", 0, path), (0, "topic2", 1, path)]
    log_dir = [
        (row["seq"], row["version"], row["broker_id"], row["event"])
        for row in tables["log_dir_event_notifications"]
    ]
    assert log_dir == [(12, 1, 2, 1)]


def test_admin_markers(tables):
    rows = sorted(
        (row["kind"], row["topic"], row["partition"], row["replicas"], row["path"], row["mzxid"])
        for row in tables["admin_markers"]
    )
    assert rows == [
        ("delete_topic", "old-topic", None, None, "/admin/delete_topics/old-topic", 0x100),
        ("delete_topic", "older-topic", None, None, "/admin/delete_topics/older-topic", 0x100),
        ("preferred_election", "Bar", 0, None, "/admin/preferred_replica_election", 0x100),
        ("preferred_election", "Foo", 1, None, "/admin/preferred_replica_election", 0x100),
        ("reassignment", "Foo", 1, [0, 1, 3], "/admin/reassign_partitions", 1),
        ("reassignment", "topic2", 2, [1, 2], "/admin/reassign_partitions", 2),
    ]


def test_producer_id_block_empty_means_no_row(tables):
    assert tables["producer_id_block"] == [
        {
            "version": 1, "broker_id": 0, "block_start": 8000, "block_end": 8999,
            "path": "/latest_producer_id_block", "mzxid": 1, "ctime": DEFAULT_CTIME,
        }
    ]  # fmt: skip


def test_acls_literal_prefixed_and_unescaped_backslash(tables):
    rows = sorted(
        tuple(row[key] for key in ("pattern_type", "resource_type", "resource_name", "principal",
                                   "permission_type", "operation", "host"))
        for row in tables["acls"]
    )  # fmt: skip
    assert rows == [
        ("literal", "Cluster", "kafka-cluster", "User:admin", "Allow", "All", "*"),
        ("literal", "Group", "legacy-group", "User:CN=Bob\\,O=Org", "Allow", "Read", "*"),
        ("literal", "Topic", "topic2", "User:alice", "Allow", "Read", "*"),
        ("literal", "Topic", "topic2", "User:bob", "Deny", "Write", "10.0.0.1"),
        ("prefixed", "Topic", "orders-", "User:carol", "Allow", "Describe", "*"),
    ]
    assert {row["path"] for row in tables["acls"] if row["pattern_type"] == "prefixed"} == {
        "/kafka-acl-extended/prefixed/Topic/orders-"
    }


def test_acl_changes_both_stores_and_case_variants(tables):
    rows = sorted(
        (row["store"], row["seq"], row["resource_type"], row["resource_name"], row["pattern_type"])
        for row in tables["acl_changes"]
    )
    assert rows == [
        ("extended", 0, "Topic", "orders-", "prefixed"),
        ("extended", 1, "DelegationToken", "tok-", "prefixed"),
        ("literal", 0, "Topic", "topic2", "literal"),
        ("literal", 1, "Topic", "topic2", "literal"),
        ("literal", 2, "TransactionalId", "tx:1", "literal"),
        ("literal", 3, "Cluster", "kafka-cluster", "literal"),
    ]


def test_delegation_tokens_v1_v3(tables):
    rows = {row["token_id"]: row for row in tables["delegation_tokens"]}
    assert rows["tok-v1"] == {
        "token_id": "tok-v1", "version": 1, "owner": "User:alice", "token_requester": None,
        "renewers": ["User:bob"], "issue_timestamp": 1600000000000, "max_timestamp": 1600604800000,
        "expiry_timestamp": 1600086400000, "path": "/delegation_token/tokens/tok-v1", "mzxid": 0x100,
        "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    v3 = rows["tok-v3"]
    assert (v3["version"], v3["token_requester"], v3["renewers"], v3["expiry_timestamp"]) == (
        3,
        "User:svc",
        [],
        2,
    )


def test_consumer_registrations_kafka_and_pykafka(tables):
    rows = {(row["group_id"], row["consumer_id"]): row for row in tables["consumer_registrations"]}
    assert rows[("console-consumer-2304", SEED_CONSUMER)] == {
        "group_id": "console-consumer-2304", "consumer_id": SEED_CONSUMER, "format": "kafka", "version": 1,
        "pattern": "white_list", "subscription": {"topic2": 1}, "timestamp": 1525747915336,
        "session": SESSION + 50, "path": f"/consumers/console-consumer-2304/ids/{SEED_CONSUMER}",
        "mzxid": 0x100, "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    seed = rows[("open_platform", "open_platform_host1-1411294187000-1a2b3c4d")]
    assert (seed["pattern"], seed["subscription"], seed["timestamp"]) == (
        "static", {"open_platform_opt_push_plus1": 5}, 1411294187842
    )  # fmt: skip
    assert rows[("g08", "g08_old-host-1380000000000-00aa11bb")]["subscription"] == {"topic2": 2}
    assert rows[("wild", "wild_host-1-deadbeef")]["subscription"] == {"bl_mall_.*\\d+": 1}
    pykafka = rows[("pyk-group", PYKAFKA_ID)]
    assert (pykafka["format"], pykafka["version"], pykafka["pattern"], pykafka["subscription"]) == (
        "pykafka", None, None, {"topic2": 1}
    )  # fmt: skip
    assert (pykafka["timestamp"], pykafka["session"]) == (None, SESSION + 52)


def test_consumer_owners_both_node_forms(tables):
    rows = {row["path"]: row for row in tables["consumer_owners"]}
    assert rows["/consumers/console-consumer-2304/owners/topic2/0"] == {
        "group_id": "console-consumer-2304", "topic": "topic2", "partition": 0, "node_form": "partition",
        "owner": f"{SEED_CONSUMER}-0", "owner_consumer_id": SEED_CONSUMER, "owner_thread_index": 0,
        "session": 5, "path": "/consumers/console-consumer-2304/owners/topic2/0", "mzxid": 0x100,
        "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    tenth = rows["/consumers/open_platform/owners/open_platform_opt_push_plus1/3"]
    assert (tenth["partition"], tenth["owner_consumer_id"], tenth["owner_thread_index"]) == (
        3, "open_platform_host1-1411294187000-1a2b3c4d", 10
    )  # fmt: skip
    pykafka = rows["/consumers/pyk-group/owners/topic2/3-1"]
    assert (pykafka["node_form"], pykafka["partition"]) == ("broker_partition", 1)
    assert (pykafka["owner_consumer_id"], pykafka["owner_thread_index"]) == (PYKAFKA_ID, None)
    digits_uuid = rows["/consumers/pyk-group/owners/topic2/3-2"]
    assert (digits_uuid["owner_consumer_id"], digits_uuid["owner_thread_index"]) == (
        "host:12345678-1234-4234-8234-123456789012", None
    )  # fmt: skip


def test_consumer_offsets_numbers_only_when_decimal(tables):
    rows = {row["partition"]: row for row in tables["consumer_offsets"]}
    assert rows[0] == {
        "group_id": "testgroup", "topic": "testtopic", "partition": 0, "offset": 81234, "raw": "81234",
        "mtime": DEFAULT_CTIME + 5000, "path": "/consumers/testgroup/offsets/testtopic/0", "mzxid": 0x100,
        "ctime": DEFAULT_CTIME,
    }  # fmt: skip
    assert {p: (row["offset"], row["raw"]) for p, row in rows.items()} == {
        0: (81234, "81234"),
        1: (-1, "-1"),
        2: (None, "abc"),
        3: (None, "42\n"),
        4: (None, ""),
        5: (None, "99999999999999999999"),
    }


def test_two_snapshots_together_give_the_union_of_each_alone(spark, busy_alone: dict[str, Any]) -> None:
    busy, quiet = snapshot_frame(spark, BUSY), snapshot_frame(spark, QUIET, QUIET_ID)
    together = as_texts(keyed_rows(normalize(busy.union(quiet).coalesce(1))))
    alone_quiet = as_texts(keyed_rows(normalize(quiet.coalesce(1))))
    alone_busy = as_texts({name: busy_alone[name] for name in TABLES})
    for name in TABLES:
        assert together[name] == sorted(alone_busy[name] + alone_quiet[name]), name
    # The cases the batch must keep apart are there: malformed, unreadable and unassigned in BUSY only.
    assert alone_busy["malformed_znodes"] and not alone_quiet["malformed_znodes"]
    assert alone_busy["unreadable_znodes"] and not alone_quiet["unreadable_znodes"]
    assert alone_quiet["topics"] and not alone_quiet["brokers"]
    pair = {row[KEY]: row for row in map(json.loads, together["partitions"])
            if (row["topic"], row["partition"]) == ("topic2", 7)}
    assert set(pair) == {SNAPSHOT_ID, QUIET_ID}
    assert (pair[SNAPSHOT_ID]["assigned"], pair[SNAPSHOT_ID]["has_state"]) == (False, True)
    assert (pair[QUIET_ID]["assigned"], pair[QUIET_ID]["has_state"]) == (True, False)
