"""Which znodes a cluster of each era holds, as write operations for a ``BatchWriter``.

Every function here only queues operations; the caller picks the session (and so the owner of
ephemeral nodes) by picking the writer.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from kafka_zk_audit_testing.simulator.encodings import Encoder, PartitionState, scram_credential
from kafka_zk_audit_testing.simulator.model import ClusterModel, Group, Topic, random_uuid
from kafka_zk_audit_testing.simulator.spec import Era
from kafka_zk_audit_testing.simulator.writer import BatchWriter


def topic_path(topic: str) -> str:
    return f"/brokers/topics/{topic}"


def state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def group_path(group_id: str) -> str:
    return f"/consumers/{group_id}"


def root_paths(era: Era) -> list[str]:
    """The persistent paths brokers (and the authorizer, token manager) create at startup, parents first."""
    paths = ["/consumers", "/brokers", "/brokers/ids", "/brokers/topics", "/config", "/config/changes"]
    paths += [f"/config/{entity_type}" for entity_type in era.config_entity_types]
    paths += ["/admin", "/admin/delete_topics"]
    paths += era.since({(0, 9, 0): ("/brokers/seqid", "/isr_change_notification"), (0, 10, 1): ("/cluster",),
                        (0, 11, 0): ("/latest_producer_id_block",), (1, 0, 0): ("/log_dir_event_notification",)})
    if era.acl_resource_types and era.secured:
        paths += ["/kafka-acl", *(f"/kafka-acl/{kind}" for kind in era.acl_resource_types), "/kafka-acl-changes"]
    if era.at_least(2, 0, 0) and era.secured:
        paths += ["/kafka-acl-extended", "/kafka-acl-extended/prefixed"]
        paths += [f"/kafka-acl-extended/prefixed/{kind}" for kind in era.acl_resource_types]
        paths.append("/kafka-acl-extended-changes")
    if era.delegation_token_version and era.secured:
        paths += ["/delegation_token", "/delegation_token/tokens", "/delegation_token/token_changes"]
    return paths


def write_roots(writer: BatchWriter, era: Era) -> None:
    for path in root_paths(era):
        # Brokers create /latest_producer_id_block empty; every other root holds null.
        writer.create(path, b"" if path == "/latest_producer_id_block" else None)


def write_topic(
    writer: BatchWriter,
    encoder: Encoder,
    name: str,
    assignment: Mapping[int, tuple[int, ...]],
    states: Mapping[int, PartitionState],
    config: Mapping[str, str] | None,
    topic_id: str | None = None,
    state_versions: Mapping[int, int] | None = None,
) -> None:
    """A topic as the admin tools then the controller write it: config, assignment, partition states.

    ``config=None`` leaves out /config/topics/<t>; a state for a partition outside ``assignment``
    is written all the same (an orphan); ``state_versions`` rewrites a state that many times so its
    dataVersion (the partition epoch) matches its history.
    """
    if config is not None:
        writer.create(f"/config/topics/{name}", encoder.config(config))
    base = topic_path(name)
    writer.create(base, encoder.topic(assignment, topic_id))
    if not states:
        return
    writer.create(f"{base}/partitions", None)
    for partition in sorted(states):
        writer.create(f"{base}/partitions/{partition}", None)
        data = encoder.state(states[partition])
        writer.create(f"{base}/partitions/{partition}/state", data)
        for _ in range((state_versions or {}).get(partition, 0)):
            writer.set_data(f"{base}/partitions/{partition}/state", data)


def write_model_topic(writer: BatchWriter, encoder: Encoder, topic: Topic) -> None:
    states = {partition: topic.state(partition) for partition in topic.partitions}
    versions = {p: epoch for p, epoch in enumerate(topic.leader_epochs) if epoch}
    write_topic(writer, encoder, topic.name, topic.assignment(), states, topic.config, topic.topic_id, versions)


def delete_topic(writer: BatchWriter, topic: Topic) -> None:
    """What the controller removes when a topic deletion completes (children first)."""
    base = topic_path(topic.name)
    for partition in topic.partitions:
        writer.delete(f"{base}/partitions/{partition}/state")
        writer.delete(f"{base}/partitions/{partition}")
    writer.delete(f"{base}/partitions")
    writer.delete(base)
    writer.delete(f"/config/topics/{topic.name}")


def write_group_persistent(writer: BatchWriter, group: Group, offsets: Mapping[tuple[str, int], object]) -> None:
    """A group's persistent part: ids/owners/offsets parents and the committed offsets (bare decimals)."""
    base = group_path(group.group_id)
    writer.create(base, None)
    writer.create(f"{base}/ids", None)
    writer.create(f"{base}/owners", None)
    for topic in group.topics:
        writer.create(f"{base}/owners/{topic}", None)
    writer.create(f"{base}/offsets", None)
    by_topic: dict[str, list[tuple[int, object]]] = {}
    for (topic, partition), value in offsets.items():
        by_topic.setdefault(topic, []).append((partition, value))
    for topic, values in by_topic.items():
        writer.create(f"{base}/offsets/{topic}", None)
        for partition, value in values:
            writer.create(f"{base}/offsets/{topic}/{partition}", str(value).encode())


def write_extras(writer: BatchWriter, encoder: Encoder, model: ClusterModel, rng: random.Random) -> None:
    """Cluster-wide nodes besides topics and groups: id, features, configs, ACLs, tokens, notifications."""
    era = model.era
    first_broker = model.brokers[0].broker_id
    if era.at_least(0, 10, 1):
        writer.create("/cluster/id", encoder.cluster_id(model.cluster_id))
    if era.feature_version:
        writer.create("/feature", encoder.feature())
    if era.at_least(0, 11, 0):
        blocks = rng.randint(1, 5)
        for block in range(blocks):
            broker_id = rng.choice(model.broker_ids)
            writer.set_data("/latest_producer_id_block", encoder.producer_id_block(broker_id, block * 1000))
    changes: list[tuple[str, str]] = []
    # The last config changes, not yet purged: an override set on one topic, one altered on the last.
    names = [name for name in model.topics if not name.startswith("__")]
    overridden = [name for name in names if model.topics[name].config]
    changes += [("topics", name) for name in dict.fromkeys(overridden[-1:] + names[-1:])]
    if era.at_least(0, 9, 0):
        writer.create("/config/clients/report-producer", encoder.config(
            {"producer_byte_rate": "1048576", "consumer_byte_rate": "2097152"}
        ))
        changes.append(("clients", "report-producer"))
    if era.at_least(0, 10, 1):
        _write_user_configs(writer, encoder, era, rng)
        changes.append(("users", "alice"))
        if era.at_least(1, 1, 0):
            writer.create("/config/brokers/<default>", encoder.config({"log.cleaner.threads": "2"}))
            changes.append(("brokers", "<default>"))
        else:
            throttle = {"leader.replication.throttled.rate": "10485760",
                        "follower.replication.throttled.rate": "10485760"}
            writer.create(f"/config/brokers/{first_broker}", encoder.config(throttle))
            changes.append(("brokers", str(first_broker)))
    if era.at_least(2, 8, 0):
        writer.create("/config/ips/<default>", encoder.config({"connection_creation_rate": "100"}))
    for entity_type, entity_name in changes:
        if era.config_change_format == "string" and entity_type != "topics":
            continue
        writer.create("/config/changes/config_change_", encoder.config_change(entity_type, entity_name), sequence=True)
    if era.acl_resource_types and era.secured:
        _write_acls(writer, encoder, model)
    if era.delegation_token_version and era.secured:
        token_id = random_uuid(rng)
        issued = model.now_ms - rng.randint(60_000, 86_400_000)
        writer.create(f"/delegation_token/tokens/{token_id}", encoder.delegation_token(
            token_id, "User%3Aalice", ["User%3Abob"], issued, issued + 7 * 86_400_000, issued + 86_400_000,
        ))
        writer.create("/delegation_token/token_changes/token_change_", token_id.encode(), sequence=True)


def _write_user_configs(writer: BatchWriter, encoder: Encoder, era: Era, rng: random.Random) -> None:
    alice: dict[str, str] = {"producer_byte_rate": "4194304"}
    if era.at_least(1, 0, 0) and era.secured:
        salt = format(rng.getrandbits(130), "x").encode()
        alice = {"SCRAM-SHA-256": scram_credential("alice-secret", salt)}
    writer.create("/config/users/alice", encoder.config(alice))
    writer.create("/config/users/alice/clients", None)
    writer.create("/config/users/alice/clients/app1", encoder.config({"consumer_byte_rate": "2097152"}))
    writer.create("/config/users/<default>", encoder.config({"producer_byte_rate": "10485760"}))
    if era.at_least(1, 0, 0):
        # A TLS principal, URL-encoded by Sanitizer.
        writer.create("/config/users/CN%3Dreport-app%2COU%3Dops", encoder.config({"request_percentage": "50"}))


def _write_acls(writer: BatchWriter, encoder: Encoder, model: ClusterModel) -> None:
    era = model.era
    topic = next((name for name in model.topics if not name.startswith("__")), "report-log")
    group = model.groups[0].group_id if model.groups else "report-log-consumer"
    writer.create(f"/kafka-acl/Topic/{topic}", encoder.acls(
        [("User:alice", "Allow", "Read", "*"), ("User:alice", "Allow", "Describe", "*")]
    ))
    writer.create(f"/kafka-acl/Group/{group}", encoder.acls([("User:alice", "Allow", "Read", "*")]))
    writer.create("/kafka-acl/Cluster/kafka-cluster", encoder.acls([("User:broker", "Allow", "ClusterAction", "*")]))
    writer.create("/kafka-acl-changes/acl_changes_", encoder.acl_change("Topic", topic), sequence=True)
    if era.at_least(2, 0, 0):
        writer.create("/kafka-acl-extended/prefixed/Topic/report-", encoder.acls([("User:bob", "Allow", "Write", "*")]))
        writer.create(
            "/kafka-acl-extended-changes/acl_changes_", encoder.extended_acl_change("Topic", "report-"), sequence=True
        )
