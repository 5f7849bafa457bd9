"""The cluster simulator against the session's real ZooKeeper: encodings, sessions, plants, time.

Every test writes under its own chroot; the znodes are read back with a plain kazoo client.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS
from kafka_zk_audit_testing.range_assignment import range_assign
from kafka_zk_audit_testing.simulator import ERAS, ClusterSpec, Planted, Simulator
from kafka_zk_audit_testing.simulator.cli import auth_from_env
from kafka_zk_audit_testing.simulator.cli import main as cli_main
from kafka_zk_audit_testing.simulator.plants import KRAFT_CHECKS, MIGRATION_HEALTH_CHECKS

pytestmark = pytest.mark.zk

SMALL = dict(brokers=3, racks=2, topics=2, partitions=3, replication_factor=2, groups=1, consumers_per_group=2,
             threads_per_consumer=1)
CONTROLLER_PLANTS = ("controller_missing", "controller_not_alive", "controller_session_mismatch")
# the others need a migration phase, or a KRaft metadata log
PLANTABLE = tuple(c for c in CHECK_IDS if c not in MIGRATION_HEALTH_CHECKS | KRAFT_CHECKS)
HISTORY_PLANTS = tuple(c for c in PLANTABLE if BY_ID[c].history)


# -- reading helpers -----------------------------------------------------------------------
def get_json(client: KazooClient, path: str) -> dict:
    data, _ = client.get(path)
    return json.loads(data)


def raw(client: KazooClient, path: str) -> bytes:
    return client.get(path)[0] or b""


def owner_of(client: KazooClient, path: str) -> int:
    return client.exists(path).ephemeralOwner


def registered(client: KazooClient) -> set[int]:
    return {int(child) for child in client.get_children("/brokers/ids")}


def assignment(client: KazooClient, topic: str) -> dict[int, list[int]]:
    return {int(p): replicas for p, replicas in get_json(client, f"/brokers/topics/{topic}")["partitions"].items()}


def state(client: KazooClient, topic: str, partition: int) -> dict:
    return get_json(client, f"/brokers/topics/{topic}/partitions/{partition}/state")


def controller_epoch(client: KazooClient) -> int:
    return int(raw(client, "/controller_epoch"))


def base_topics(client: KazooClient) -> list[str]:
    return [t for t in client.get_children("/brokers/topics") if not t.startswith("planted-")]


def endpoints_of(broker: dict) -> list[str]:
    """A registration's advertised endpoints (v1 has only host and port)."""
    return broker.get("endpoints") or [f"{broker['host']}:{broker['port']}"]


def assert_healthy_partition(client: KazooClient, topic: str, partition: int, replicas: list[int]) -> None:
    current = state(client, topic, partition)
    assert current["leader"] == replicas[0], (topic, partition, current)
    assert current["isr"] == replicas, (topic, partition, current)
    assert current["leader"] in registered(client)
    assert current["controller_epoch"] <= controller_epoch(client)


@pytest.fixture
def hosts(zk_server, zk_chroot) -> str:
    return zk_server.hosts + zk_chroot


@pytest.fixture
def sim(hosts):
    simulator = Simulator(hosts=hosts)
    yield simulator
    simulator.close()


# -- encodings per era ---------------------------------------------------------------------
ERA_EXPECTATIONS = {
    # era: broker version, topic version, controller version, config change form, extra roots
    "0.8": (1, 1, 1, "string", ()),
    "0.9": (2, 1, 1, "v1", ("/brokers/seqid", "/isr_change_notification", "/config/clients", "/kafka-acl/Topic")),
    "0.10": (3, 1, 1, "v2", ("/cluster/id", "/config/users", "/config/brokers")),
    "1.x": (4, 1, 1, "v2", ("/latest_producer_id_block", "/log_dir_event_notification", "/delegation_token/tokens")),
    "2.x": (4, 2, 1, "v2", ("/kafka-acl-extended/prefixed/Topic", "/kafka-acl-extended-changes")),
    "2.8": (5, 3, 1, "v2", ("/feature", "/config/ips")),
    "3.x": (5, 3, 2, "v2", ("/feature", "/config/ips", "/kafka-acl/User")),
    "3.x-migration": (5, 3, 2, "v2", ("/migration",)),
    "3.9": (5, 3, 2, "v2", ("/feature", "/config/ips")),
}


def test_every_era_has_expectations():
    assert set(ERA_EXPECTATIONS) == set(ERAS)


@pytest.mark.parametrize("era", list(ERAS))
def test_era_writes_the_layouts_shapes(era, sim, zk_client):
    broker_version, topic_version, controller_version, change_form, extra_roots = ERA_EXPECTATIONS[era]
    sim.write(ClusterSpec(era=era, seed=3, **SMALL))
    info = ERAS[era]

    # Brokers.
    data = raw(zk_client, "/brokers/ids/1")
    broker = json.loads(data)
    assert broker["version"] == broker_version
    assert broker["host"] == "hadoop1" and isinstance(broker["timestamp"], str) and broker["timestamp"].isdigit()
    if broker_version == 1:
        assert data.startswith(b'{ "host":"hadoop1", "jmx_port":-1, "port":9092, "timestamp":"')
        assert data.endswith(b'", "version":1 }')
    else:
        assert all(re.match(r"^[A-Z_]+://[\w.-]+:\d+$", e) for e in broker["endpoints"])
    if broker_version == 2:
        assert broker["endpoints"] == ["PLAINTEXT://hadoop1:9092"] and broker["port"] == 9092
    if broker_version >= 3:
        assert broker["rack"] == "rack1"
    if broker_version >= 4:
        names = {e.split("://")[0] for e in broker["endpoints"]}
        assert set(broker["listener_security_protocol_map"]) == names
        plaintext = [n for n, p in broker["listener_security_protocol_map"].items() if p == "PLAINTEXT"]
        assert f"{plaintext[0]}://hadoop1:{broker['port']}" in broker["endpoints"]
    if broker_version == 5:
        assert broker["features"] == {}
    assert zk_client.exists("/brokers/ids/1").version == (1 if info.at_least(2, 2, 0) else 0)

    # Topics and states.
    topic = "report-log"
    data = raw(zk_client, f"/brokers/topics/{topic}")
    document = json.loads(data)
    assert document["version"] == topic_version
    assert sorted(document["partitions"], key=int) == ["0", "1", "2"]
    if info.handbuilt_json:
        assert data.startswith(b'{ "partitions":{ "0":[ ')
        assert raw(zk_client, f"/brokers/topics/{topic}/partitions/0/state").startswith(b'{ "controller_epoch":')
    if topic_version >= 2:
        assert document["adding_replicas"] == {} and document["removing_replicas"] == {}
    if topic_version == 3:
        topic_id = document["topic_id"]
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", topic_id)
        assert len(base64.urlsafe_b64decode(topic_id + "==")) == 16
    else:
        assert "topic_id" not in document
    for partition, replicas in assignment(zk_client, topic).items():
        current = state(zk_client, topic, partition)
        assert set(current) == {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
        assert current["version"] == 1
        assert_healthy_partition(zk_client, topic, partition, replicas)
        assert zk_client.exists(f"/brokers/topics/{topic}/partitions/{partition}/state").version == current[
            "leader_epoch"
        ]
        assert raw(zk_client, f"/brokers/topics/{topic}/partitions/{partition}") == b""
    assert get_json(zk_client, f"/config/topics/{topic}")["version"] == 1

    # Controller.
    controller = get_json(zk_client, "/controller")
    epoch = controller_epoch(zk_client)
    assert raw(zk_client, "/controller_epoch") == str(epoch).encode()
    assert controller["version"] == controller_version
    assert isinstance(controller["timestamp"], str)
    if info.kraft_migration:
        assert owner_of(zk_client, "/controller") == 0 and controller["kraftControllerEpoch"] >= 0
        migration = get_json(zk_client, "/migration")
        assert migration["version"] == 0 and migration["kraft_controller_id"] == controller["brokerid"]
    else:
        assert owner_of(zk_client, "/controller") != 0 and controller["brokerid"] in registered(zk_client)
        if controller_version == 2:
            assert controller["kraftControllerEpoch"] == -1
        if info.handbuilt_json:
            assert raw(zk_client, "/controller").startswith(b'{ "brokerid":')
    epoch_version = zk_client.exists("/controller_epoch").version
    assert epoch_version == (epoch if info.at_least(2, 1, 0) else epoch - 1)

    # Config changes.
    changes = sorted(zk_client.get_children("/config/changes"))
    assert changes and all(re.fullmatch(r"config_change_\d{10}", c) for c in changes)
    first = raw(zk_client, f"/config/changes/{changes[0]}")
    if change_form == "string":
        assert first.startswith(b'"') and json.loads(first) in zk_client.get_children("/config/topics")
    elif change_form == "v1":
        assert json.loads(first)["version"] == 1 and {"entity_type", "entity_name"} <= set(json.loads(first))
    else:
        assert json.loads(first)["version"] == 2 and "/" in json.loads(first)["entity_path"]

    # Era-specific nodes.
    for path in ("/consumers", "/brokers/topics", "/config/topics", "/admin/delete_topics", *extra_roots):
        assert zk_client.exists(path), path
    assert bool(zk_client.exists("/brokers/seqid")) == info.at_least(0, 9, 0)
    assert bool(zk_client.exists("/cluster/id")) == info.at_least(0, 10, 1)
    assert bool(zk_client.exists("/feature")) == info.at_least(2, 7, 0)
    if info.at_least(0, 10, 1):
        assert set(get_json(zk_client, "/cluster/id")) == {"version", "id"}
        assert get_json(zk_client, "/cluster/id")["version"] == "1"
    if info.at_least(0, 11, 0):
        block = get_json(zk_client, "/latest_producer_id_block")
        assert int(block["block_end"]) - int(block["block_start"]) == 999 and isinstance(block["block_start"], str)
    if info.feature_version:
        assert get_json(zk_client, "/feature") == {"features": {}, "version": info.feature_version, "status": 1}
    if info.at_least(1, 0, 0) and info.secured:
        scram = get_json(zk_client, "/config/users/alice")["config"]["SCRAM-SHA-256"]
        assert re.fullmatch(r"salt=\S+,stored_key=\S+,server_key=\S+,iterations=4096", scram)
    if info.delegation_token_version and info.secured:
        (token_id,) = zk_client.get_children("/delegation_token/tokens")
        token = get_json(zk_client, f"/delegation_token/tokens/{token_id}")
        assert token["version"] == info.delegation_token_version and token["tokenId"] == token_id
        assert ("tokenRequester" in token) == (info.delegation_token_version == 3)
    if info.acl_resource_types and info.secured:
        (change,) = zk_client.get_children("/kafka-acl-changes")
        kind = raw(zk_client, f"/kafka-acl-changes/{change}").split(b":")[0]
        assert kind == (b"TOPIC" if info.at_least(2, 5, 0) else b"Topic")

    # Old consumers.
    group = "report-log-consumer"
    ids = zk_client.get_children(f"/consumers/{group}/ids")
    assert len(ids) == 2
    registration = raw(zk_client, f"/consumers/{group}/ids/{ids[0]}")
    assert json.loads(registration)["pattern"] == "static"
    if info.handbuilt_json:
        assert registration.startswith(b'{ "pattern":"static", "subscription":{ "')


# -- sessions ------------------------------------------------------------------------------
def test_sessions_own_their_ephemeral_nodes_and_close_removes_them(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", brokers=4, topics=3, partitions=4, groups=2, consumers_per_group=2,
                          threads_per_consumer=2, seed=5))
    owners = {b: owner_of(zk_client, f"/brokers/ids/{b}") for b in registered(zk_client)}
    assert all(owners.values()) and len(set(owners.values())) == len(owners) == 4
    for broker_id, session in sim.broker_sessions.items():
        assert owners[broker_id] == session.client_id[0]
    controller = get_json(zk_client, "/controller")
    assert owner_of(zk_client, "/controller") == owners[controller["brokerid"]]
    for group in zk_client.get_children("/consumers"):
        for consumer in zk_client.get_children(f"/consumers/{group}/ids"):
            session = owner_of(zk_client, f"/consumers/{group}/ids/{consumer}")
            assert session not in owners.values() and session == sim.consumer_sessions[consumer].client_id[0]
        for topic in zk_client.get_children(f"/consumers/{group}/owners"):
            for partition in zk_client.get_children(f"/consumers/{group}/owners/{topic}"):
                path = f"/consumers/{group}/owners/{topic}/{partition}"
                thread = raw(zk_client, path).decode()
                consumer = thread.rsplit("-", 1)[0]
                assert owner_of(zk_client, path) == owner_of(zk_client, f"/consumers/{group}/ids/{consumer}")
    offsets_before = zk_client.get_children("/consumers/report-log-consumer/offsets")
    sim.close()
    assert zk_client.get_children("/brokers/ids") == []
    assert not zk_client.exists("/controller")
    for group in zk_client.get_children("/consumers"):
        assert zk_client.get_children(f"/consumers/{group}/ids") == []
        for topic in zk_client.get_children(f"/consumers/{group}/owners"):
            assert zk_client.get_children(f"/consumers/{group}/owners/{topic}") == []
    assert zk_client.get_children("/consumers/report-log-consumer/offsets") == offsets_before
    assert zk_client.exists("/brokers/topics/report-log")


def test_owners_follow_the_range_assignment(sim, zk_client):
    sim.write(ClusterSpec(era="0.10", brokers=3, racks=0, topics=3, partitions=5, replication_factor=2, groups=2,
                          consumers_per_group=3, threads_per_consumer=2, topics_per_group=2, seed=9))
    for group in zk_client.get_children("/consumers"):
        ids = zk_client.get_children(f"/consumers/{group}/ids")
        assert len(ids) == 3
        for consumer in ids:
            assert re.fullmatch(rf"{re.escape(group)}_node\d+-\d{{13}}-[0-9a-f]{{8}}", consumer)
        subscriptions = {c: get_json(zk_client, f"/consumers/{group}/ids/{c}")["subscription"] for c in ids}
        for topic in zk_client.get_children(f"/consumers/{group}/owners"):
            threads = [f"{c}-{n}" for c, sub in subscriptions.items() for n in range(sub.get(topic, 0))]
            expected = range_assign(list(assignment(zk_client, topic)), threads)
            actual = {int(p): raw(zk_client, f"/consumers/{group}/owners/{topic}/{p}").decode()
                      for p in zk_client.get_children(f"/consumers/{group}/owners/{topic}")}
            assert actual == expected
            offsets = zk_client.get_children(f"/consumers/{group}/offsets/{topic}")
            assert sorted(map(int, offsets)) == sorted(assignment(zk_client, topic))
            assert all(raw(zk_client, f"/consumers/{group}/offsets/{topic}/{p}").isdigit() for p in offsets)


def test_base_cluster_is_healthy(sim, zk_client):
    sim.write(ClusterSpec(era="2.x", brokers=6, racks=3, topics=10, partitions=8, replication_factor=3,
                          internal_topics=True, seed=21))
    epoch = controller_epoch(zk_client)
    live = registered(zk_client)
    topics = zk_client.get_children("/brokers/topics")
    assert "__consumer_offsets" in topics and len(topics) == 11
    for topic in topics:
        assert zk_client.exists(f"/config/topics/{topic}")
        parts = assignment(zk_client, topic)
        assert sorted(parts) == list(range(len(parts)))
        assert sorted(map(int, zk_client.get_children(f"/brokers/topics/{topic}/partitions"))) == sorted(parts)
        assert len({len(r) for r in parts.values()}) == 1
        for partition, replicas in parts.items():
            assert len(set(replicas)) == len(replicas) and set(replicas) <= live
            current = state(zk_client, topic, partition)
            assert current["leader"] == replicas[0] and current["isr"] == replicas
            assert current["controller_epoch"] < epoch
    assert zk_client.get_children("/admin/delete_topics") == []
    assert not zk_client.exists("/admin/reassign_partitions")
    assert not zk_client.exists("/admin/preferred_replica_election")
    assert zk_client.get_children("/isr_change_notification") == []
    assert len(zk_client.get_children("/config/changes")) <= 5


def test_digest_auth_on_every_session(hosts, zk_client):
    with Simulator(hosts=hosts, auth=("digest", "kafka:kafka-secret")) as simulator:
        simulator.write(ClusterSpec(era="1.x", seed=2, **SMALL))
        assert registered(zk_client) == {1, 2, 3}
        assert simulator.admin.auth_data == {("digest", "kafka:kafka-secret")}
        assert all(s.auth_data == {("digest", "kafka:kafka-secret")} for s in simulator.broker_sessions.values())


def test_a_second_write_into_the_same_cluster_is_refused(hosts, sim):
    sim.write(ClusterSpec(era="3.x", seed=1, **SMALL))
    with Simulator(hosts=hosts) as other, pytest.raises(RuntimeError, match="already holds"):
        other.write(ClusterSpec(era="3.x", seed=1, **SMALL))


# -- plants --------------------------------------------------------------------------------
def verify_plant(client: KazooClient, planted: Planted) -> None:  # noqa: C901 - one branch per check
    """The znode state each plant promises, read back with kazoo."""
    check, topic, partition, path = planted.check_id, planted.topic, planted.partition, planted.path
    live = registered(client)
    if path and check not in ("controller_missing", "partition_unowned"):
        assert client.exists(path), path
    if check in {"leader_not_in_isr", "isr_not_subset_of_replicas", "leader_not_alive", "offline_partition",
                 "under_replicated", "preferred_leader_not_leader", "replica_on_unknown_broker",
                 "duplicate_replica", "partition_epoch_ahead_of_controller"}:
        replicas = assignment(client, topic)[partition]
        current = state(client, topic, partition)
        leader, isr = current["leader"], current["isr"]
        expectations = {
            "leader_not_in_isr": leader not in isr and leader in live and set(isr) <= set(replicas),
            "isr_not_subset_of_replicas": leader in isr and not set(isr) <= set(replicas) and set(isr) <= live,
            "leader_not_alive": leader >= 0 and leader not in live and leader in replicas,
            "offline_partition": leader == -1,
            "under_replicated": leader in isr and len(isr) < len(replicas) and set(isr) <= set(replicas),
            "preferred_leader_not_leader": leader != replicas[0] and leader in isr and len(isr) == len(replicas),
            "replica_on_unknown_broker": not set(replicas) <= live and leader in live
            and path == f"/brokers/topics/{topic}",
            "duplicate_replica": len(set(replicas)) < len(replicas) and len(assignment(client, topic)) == 1
            and path == f"/brokers/topics/{topic}",
            "partition_epoch_ahead_of_controller": current["controller_epoch"] > controller_epoch(client),
        }
        assert expectations[check], (check, replicas, current)
    elif check == "replication_factor_inconsistent":
        assert len({len(r) for r in assignment(client, topic).values()}) == 2
    elif check == "partition_state_missing":
        assert partition in assignment(client, topic)
        assert not client.exists(f"/brokers/topics/{topic}/partitions/{partition}/state")
    elif check == "partition_state_orphaned":
        assert partition not in assignment(client, topic) and get_json(client, path)["leader"] in live
    elif check == "controller_missing":
        assert not client.exists("/controller")
    elif check == "controller_not_alive":
        assert get_json(client, path)["brokerid"] not in live and owner_of(client, path) != 0
    elif check == "controller_session_mismatch":
        broker = get_json(client, path)["brokerid"]
        assert broker in live and broker == planted.broker_id
        assert owner_of(client, path) not in (0, owner_of(client, f"/brokers/ids/{broker}"))
    elif check == "broker_registration_not_ephemeral":
        assert owner_of(client, path) == 0 and get_json(client, path)["host"]
    elif check == "broker_endpoint_conflict":
        mine = endpoints_of(get_json(client, path))
        others = [endpoints_of(get_json(client, f"/brokers/ids/{b}")) for b in live if b != planted.broker_id
                  if raw(client, f"/brokers/ids/{b}").startswith(b"{")]
        assert mine in others and owner_of(client, path) != 0
    elif check == "malformed_znode":
        assert planted.broker_id is None
        with pytest.raises(ValueError):
            json.loads(raw(client, path))
        assert owner_of(client, path) != 0
    elif check == "topic_config_missing":
        assert client.exists(f"/brokers/topics/{topic}") and not client.exists(f"/config/topics/{topic}")
    elif check in ("deleted_topic_remnants", "delete_marker_orphaned"):
        assert not client.exists(f"/brokers/topics/{topic}")
    elif check == "delete_topic_stuck":
        assert client.exists(f"/brokers/topics/{topic}") and raw(client, path) == b""
    elif check in ("reassignment_stuck", "reassignment_invalid"):
        entries = [e for e in get_json(client, path)["partitions"] if e["topic"] == topic]
        assert len(entries) == 1 and entries[0]["partition"] == partition
        replicas = entries[0]["replicas"]
        assert partition in assignment(client, topic) and len(set(replicas)) == len(replicas)
        if check == "reassignment_stuck":
            assert set(replicas) <= live
        else:
            assert not set(replicas) <= live
    elif check == "preferred_election_stuck":
        assert {"topic": topic, "partition": 0} in get_json(client, path)["partitions"]
    elif check == "notification_backlog":
        children = client.get_children(path)
        assert len(children) >= 120 and topic is None
        if path == "/isr_change_notification":
            sample = get_json(client, f"{path}/{children[0]}")
            assert sample["version"] == 1 and sample["partitions"][0]["topic"] == "planted-notification_backlog"
            assert sample["partitions"][0]["partition"] in assignment(client, "planted-notification_backlog")
    elif check in ("owner_not_registered", "partition_unowned", "partition_multiply_owned",
                   "owner_assignment_mismatch"):
        verify_owner_plant(client, planted)
    elif check == "unreadable_znode":
        with pytest.raises(NoAuthError):  # creator-only, written with the simulator's own identity
            client.get(path)
        assert client.exists(path).dataLength > 0 and path.startswith("/config/users/")
    elif check == "offset_invalid":
        assert not raw(client, path).isdigit()
    elif check == "offset_for_unknown_partition":
        assert raw(client, path).isdigit() and partition not in assignment(client, topic)
    else:
        raise AssertionError(f"no verification for {check}")


def verify_owner_plant(client: KazooClient, planted: Planted) -> None:
    group, topic = planted.group_id, planted.topic
    base = f"/consumers/{group}"
    ids = client.get_children(f"{base}/ids")
    assert ids
    threads = [f"{c}-{n}" for c in ids for n in range(get_json(client, f"{base}/ids/{c}")["subscription"][topic])]
    expected = range_assign(list(assignment(client, topic)), threads)
    claims: dict[int, list[str]] = {}
    for node in client.get_children(f"{base}/owners/{topic}"):
        path = f"{base}/owners/{topic}/{node}"
        assert owner_of(client, path) != 0
        claims.setdefault(int(node.split("-")[-1]), []).append(raw(client, path).decode())
    if planted.check_id == "owner_not_registered":
        (thread,) = claims[planted.partition]
        assert thread.rsplit("-", 1)[0] not in ids
    elif planted.check_id == "partition_unowned":
        assert planted.partition not in claims and set(claims) == set(expected) - {planted.partition}
        assert not client.exists(planted.path) and planted.path == f"{base}/owners/{topic}/{planted.partition}"
    elif planted.check_id == "partition_multiply_owned":
        assert len(set(claims[planted.partition])) == 2
        nodes = client.get_children(f"{base}/owners/{topic}")
        assert any(re.fullmatch(r"\d+-0", node) for node in nodes)
        assert planted.path == f"{base}/owners/{topic}/0" and raw(client, planted.path).decode() == expected[0]
    else:
        assert claims[planted.partition] != [expected[planted.partition]]
        assert all(claims[p] == [t] for p, t in expected.items() if p != planted.partition)


def assert_planted_topic_is_otherwise_healthy(client: KazooClient, planted: Planted) -> None:
    if planted.topic is None or not planted.topic.startswith("planted-"):
        return
    if not client.exists(f"/brokers/topics/{planted.topic}"):
        return
    if planted.check_id != "topic_config_missing":
        assert get_json(client, f"/config/topics/{planted.topic}")["version"] == 1
    if planted.check_id == "replication_factor_inconsistent":
        return
    for partition, replicas in assignment(client, planted.topic).items():
        if partition != planted.partition:
            assert_healthy_partition(client, planted.topic, partition, replicas)


def test_all_plants_coexist_in_one_cluster(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", seed=13, **{**SMALL, "brokers": 4, "replication_factor": 3}))
    together = [c for c in PLANTABLE if c not in HISTORY_PLANTS and c not in CONTROLLER_PLANTS]
    planted = [sim.plant(check_id) for check_id in together]
    planted.append(sim.plant("controller_session_mismatch"))
    subjects = [(p.topic, p.group_id, p.broker_id) for p in planted if p.topic or p.group_id]
    assert len(set(subjects)) == len(subjects)
    for plant in planted:
        assert plant.check_id not in plant.implied and set(plant.implied) <= set(CHECK_IDS)
        assert not plant.path or plant.path.startswith("/") and not plant.path.startswith(sim.hosts)
        verify_plant(zk_client, plant)
        assert_planted_topic_is_otherwise_healthy(zk_client, plant)
    # The base cluster is untouched by the plants.
    for topic in base_topics(zk_client):
        for partition, replicas in assignment(zk_client, topic).items():
            assert_healthy_partition(zk_client, topic, partition, replicas)


@pytest.mark.parametrize("era", ["0.8", "2.x", "3.x-migration"])
@pytest.mark.parametrize("check_id", CONTROLLER_PLANTS)
def test_controller_plants(era, check_id, sim, zk_client):
    sim.write(ClusterSpec(era=era, seed=4, **SMALL))
    planted = sim.plant(check_id)
    assert planted.path == "/controller"
    verify_plant(zk_client, planted)


def test_a_later_controller_plant_replaces_the_earlier(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", seed=4, **SMALL))
    sim.plant("controller_session_mismatch")
    replacement = sim.plant("controller_not_alive")
    verify_plant(zk_client, replacement)
    assert set(sim.planted) == {"controller_not_alive"}


@pytest.mark.parametrize("era", ["0.8", "1.x", "3.x"])
def test_every_plant_runs_in_older_eras(era, sim, zk_client):
    sim.write(ClusterSpec(era=era, seed=17, **SMALL))
    for check_id in PLANTABLE:
        if check_id in HISTORY_PLANTS or check_id in CONTROLLER_PLANTS[1:]:
            continue
        verify_plant(zk_client, sim.plant(check_id))


def test_history_plants_lower_what_the_previous_snapshot_held(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", seed=8, **SMALL))
    states_before = {(t, p): state(zk_client, t, p) for t in base_topics(zk_client) for p in assignment(zk_client, t)}
    epoch_before = controller_epoch(zk_client)
    offsets_before = {}
    for group in zk_client.get_children("/consumers"):
        for topic in zk_client.get_children(f"/consumers/{group}/offsets"):
            for p in zk_client.get_children(f"/consumers/{group}/offsets/{topic}"):
                offsets_before[f"/consumers/{group}/offsets/{topic}/{p}"] = int(
                    raw(zk_client, f"/consumers/{group}/offsets/{topic}/{p}"))

    leader = sim.plant("leader_epoch_regressed")
    assert state(zk_client, leader.topic, leader.partition)["leader_epoch"] < (
        states_before[(leader.topic, leader.partition)]["leader_epoch"])
    assert leader.path == f"/brokers/topics/{leader.topic}/partitions/{leader.partition}/state"

    offset = sim.plant("offset_regressed")
    assert int(raw(zk_client, offset.path)) < offsets_before[offset.path]
    assert offset.group_id and offset.topic and offset.partition is not None

    regressed = sim.plant("controller_epoch_regressed")
    assert controller_epoch(zk_client) == epoch_before - 1
    assert regressed.path == "/controller_epoch" and regressed.implied == ()
    assert all(state(zk_client, t, p)["controller_epoch"] <= epoch_before - 1 for t, p in states_before)


def test_controller_epoch_regression_after_elections_implies_epochs_ahead(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", seed=8, **SMALL))
    sim.advance(steps=1)
    regressed = sim.plant("controller_epoch_regressed")
    assert regressed.implied == ("partition_epoch_ahead_of_controller",)


def test_plants_are_refused_before_write_twice_or_unknown(sim):
    with pytest.raises(RuntimeError):
        sim.plant("under_replicated")
    sim.write(ClusterSpec(era="3.x", seed=1, **SMALL))
    sim.plant("under_replicated")
    with pytest.raises(ValueError, match="already planted"):
        sim.plant("under_replicated")
    with pytest.raises(ValueError, match="unknown check id"):
        sim.plant("no_such_check")


# -- time and topic recreation -------------------------------------------------------------
def test_advance_raises_epochs_and_offsets(sim, zk_client):
    sim.write(ClusterSpec(era="2.x", seed=6, brokers=4, topics=4, partitions=10, replication_factor=3))
    ahead = sim.plant("partition_epoch_ahead_of_controller")
    states_before = {(t, p): state(zk_client, t, p) for t in base_topics(zk_client) for p in assignment(zk_client, t)}
    epoch_before = controller_epoch(zk_client)
    controller_before = get_json(zk_client, "/controller")["brokerid"]
    offsets = {}
    for topic in zk_client.get_children("/consumers/report-log-consumer/offsets"):
        for p in zk_client.get_children(f"/consumers/report-log-consumer/offsets/{topic}"):
            offsets[(topic, p)] = int(raw(zk_client, f"/consumers/report-log-consumer/offsets/{topic}/{p}"))

    sim.advance(steps=2)

    epoch = controller_epoch(zk_client)
    assert epoch == epoch_before + 2
    controller = get_json(zk_client, "/controller")
    assert owner_of(zk_client, "/controller") == owner_of(zk_client, f"/brokers/ids/{controller['brokerid']}")
    assert controller["brokerid"] in registered(zk_client)
    assert controller_before in registered(zk_client)
    raised = 0
    for (topic, partition), before in states_before.items():
        after = state(zk_client, topic, partition)
        assert after["leader_epoch"] >= before["leader_epoch"]
        if after["leader_epoch"] > before["leader_epoch"]:
            raised += 1
            assert after["controller_epoch"] in (epoch - 1, epoch)
        assert after["leader"] == before["leader"] and after["isr"] == before["isr"]
    assert raised >= 1
    for (topic, p), before in offsets.items():
        assert int(raw(zk_client, f"/consumers/report-log-consumer/offsets/{topic}/{p}")) > before
    assert get_json(zk_client, ahead.path)["controller_epoch"] == epoch + 1


def test_advance_keeps_a_planted_controller(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", seed=6, **SMALL))
    sim.plant("controller_missing")
    epoch = controller_epoch(zk_client)
    sim.advance()
    assert not zk_client.exists("/controller") and controller_epoch(zk_client) == epoch


def test_advance_in_the_migration_era_bumps_the_kraft_controller(sim, zk_client):
    sim.write(ClusterSpec(era="3.x-migration", seed=6, **SMALL))
    before = get_json(zk_client, "/controller")
    sim.advance()
    after = get_json(zk_client, "/controller")
    assert after["kraftControllerEpoch"] == before["kraftControllerEpoch"] + 1
    assert get_json(zk_client, "/migration")["kraft_controller_epoch"] == after["kraftControllerEpoch"]


def test_recreate_topic(sim, zk_client):
    sim.write(ClusterSpec(era="3.x", seed=12, brokers=3, topics=2, partitions=4, replication_factor=2, groups=1,
                          topics_per_group=2))
    topic = "report-log"
    before = zk_client.exists(f"/brokers/topics/{topic}")
    topic_id = get_json(zk_client, f"/brokers/topics/{topic}")["topic_id"]
    offsets_path = f"/consumers/report-log-consumer/offsets/{topic}"
    offsets = {p: int(raw(zk_client, f"{offsets_path}/{p}")) for p in zk_client.get_children(offsets_path)}
    sim.recreate_topic(topic)
    after = zk_client.exists(f"/brokers/topics/{topic}")
    assert after.czxid > before.czxid
    assert get_json(zk_client, f"/brokers/topics/{topic}")["topic_id"] != topic_id
    assert zk_client.exists(f"/config/topics/{topic}").czxid > before.czxid
    assert not zk_client.exists(f"/admin/delete_topics/{topic}")
    for partition, replicas in assignment(zk_client, topic).items():
        assert_healthy_partition(zk_client, topic, partition, replicas)
        assert state(zk_client, topic, partition)["leader_epoch"] == 0
    for p, value in offsets.items():
        now = int(raw(zk_client, f"{offsets_path}/{p}"))
        assert now <= 500 < value
    with pytest.raises(ValueError):
        sim.recreate_topic("no-such-topic")


# -- scale and the command line ------------------------------------------------------------
def test_medium_cluster(sim, zk_client):
    """About 50,000 znodes, written in batches; the count is checked against the tree."""
    spec = ClusterSpec(era="3.x", brokers=9, racks=3, topics=1200, partitions=20, replication_factor=3, groups=4,
                       seed=31)
    counts = sim.write(spec)
    assert 49_000 < counts.creates < 56_000
    topics = zk_client.get_children("/brokers/topics")
    assert len(topics) == 1200
    sample = topics[:: len(topics) // 20]
    for topic in sample:
        parts = assignment(zk_client, topic)
        assert len(zk_client.get_children(f"/brokers/topics/{topic}/partitions")) == len(parts)
        assert_healthy_partition(zk_client, topic, 0, parts[0])


def test_cli_writes_plants_and_reports(hosts, zk_client, tmp_path, capsys):
    ready = tmp_path / "ready.json"
    code = cli_main(["--zk", hosts, "--era", "1.x", "--brokers", "3", "--topics", "3", "--partitions", "2",
                     "--replication-factor", "2", "--plant", "under_replicated", "--plant", "offset_invalid",
                     "malformed_znode", "--ready-file", str(ready)])
    assert code == 0
    out = capsys.readouterr().out
    assert "znodes/s" in out and "planted under_replicated" in out and "planted malformed_znode" in out
    report = json.loads(ready.read_text())
    assert report["era"] == "1.x" and report["znodes"] > 100
    assert [p["check_id"] for p in report["planted"]] == ["under_replicated", "offset_invalid", "malformed_znode"]
    assert zk_client.exists(report["planted"][0]["path"])
    assert zk_client.get_children("/brokers/ids") == []  # sessions closed on exit without --hold


def test_cli_holds_until_sigterm(hosts, zk_client, tmp_path):
    ready = tmp_path / "ready.json"
    env = {**os.environ, "KAFKA_ZK_AUDIT_ZK_AUTH": "digest:kafka:kafka-secret"}
    process = subprocess.Popen(
        [sys.executable, "-m", "kafka_zk_audit_testing.simulator.cli", "--zk", hosts, "--brokers", "3", "--topics", "2",
         "--plant", "leader_not_in_isr", "--hold", "--ready-file", str(ready)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), process.communicate(timeout=5)
        assert registered(zk_client) == {1, 2, 3}
        planted = json.loads(ready.read_text())["planted"]
        assert planted[0]["check_id"] == "leader_not_in_isr"
        assert planted[0]["implied"] == ["under_replicated"]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "holding the sessions" in out
    assert zk_client.get_children("/brokers/ids") == []


def test_cli_auth_comes_from_the_environment_only():
    assert auth_from_env({}) is None
    assert auth_from_env({"KAFKA_ZK_AUDIT_ZK_AUTH": "digest:user:pa:ss"}) == ("digest", "user:pa:ss")
    with pytest.raises(ValueError):
        auth_from_env({"KAFKA_ZK_AUDIT_ZK_AUTH": "sasl:user"})


def test_cli_rejects_bad_specs(hosts, capsys):
    assert cli_main(["--zk", hosts, "--brokers", "2", "--replication-factor", "3"]) == 2
    assert "replication_factor" in capsys.readouterr().err
