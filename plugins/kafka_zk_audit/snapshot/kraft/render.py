"""Lay a KRaft metadata image out as the znodes ZooKeeper-mode Kafka keeps for the same state.

The layout is the one Kafka's own KRaft → ZooKeeper writer uses during a migration's dual writes (apache/kafka
metadata/.../migration/KRaftMigrationZkWriter.java, core/.../zk/migration/Zk*MigrationClient.scala): topic znodes
with their ``topic_id`` and assignment, partition state znodes (controller_epoch = the KRaft leader epoch; the stat
version = the partition epoch, as the migration maps it), ``/config/<type>/<name>`` (broker ``""`` = ``<default>``),
client quotas and SCRAM credentials in ``/config/users|clients|ips``, ``/latest_producer_id_block``, ACLs under
``/kafka-acl*``, delegation tokens. Every registered broker is ``/brokers/ids/<id>`` (fenced ones too:
``/kraft/brokers/<id>`` says which), and ``/controller_epoch`` holds the quorum's epoch. There is no ``/controller``:
the quorum leader is a controller, not a broker, and is the ``/kraft/quorum`` znode's.

What ZooKeeper never held goes under ``/kraft/`` (the project's namespace, not Kafka's): every registered broker
and controller with its fencing, incarnation, features and log dirs, each partition's ELR and directories, the
quorum, the finalized features, and the records the replay could not use. The stat of each znode points at the
log: ``czxid``/``mzxid`` are the offsets of the records that created and last changed it, ``ctime``/``mtime``
their batch times.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from kafka_zk_audit.snapshot.kraft.image import MetadataImage, Origin

# SecurityProtocol ids (clients/.../auth/SecurityProtocol.java).
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
# AclResourceType, AclPatternType, AclOperation and AclPermissionType codes (clients/.../acl, .../resource).
RESOURCE_TYPES = {2: "Topic", 3: "Group", 4: "Cluster", 5: "TransactionalId", 6: "DelegationToken", 7: "User"}
PATTERN_TYPES = {3: "literal", 4: "prefixed"}
OPERATIONS = {2: "All", 3: "Read", 4: "Write", 5: "Create", 6: "Delete", 7: "Alter", 8: "Describe",
              9: "ClusterAction", 10: "DescribeConfigs", 11: "AlterConfigs", 12: "IdempotentWrite",
              13: "CreateTokens", 14: "DescribeTokens", 15: "TwoPhaseCommit"}
PERMISSIONS = {2: "Deny", 3: "Allow"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
QUOTA_ZK_TYPES = {"user": "users", "client-id": "clients", "ip": "ips"}
KRAFT_ROOT = "/kraft"


@dataclass(frozen=True)
class Znode:
    """One znode of the laid-out tree: path, data (None for a container) and where in the log it comes from."""

    path: str
    data: bytes | None
    origin: Origin
    version: int = 0
    ephemeral_owner: int = 0


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=False).encode()


def _sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding, with ``*`` as ``%2A`` and a space as ``%20``."""
    return quote(name, safe="").replace("*", "%2A")


def znodes(image: MetadataImage, cluster_id: str | None = None) -> Iterator[Znode]:
    """Every znode of the image's layout (containers included), parents before children."""
    last = Origin(image.last_offset, image.last_time or 0, image.last_offset, image.last_time or 0)
    nodes: dict[str, Znode] = {}
    for node in _kafka_znodes(image, cluster_id, last):
        nodes[node.path] = node
    for node in _kraft_znodes(image, last):
        nodes[node.path] = node
    for path in list(nodes):
        parent = path.rsplit("/", 1)[0]
        while parent and parent not in nodes:
            nodes[parent] = Znode(parent, None, Origin(0, 0, 0, 0))
            parent = parent.rsplit("/", 1)[0]
    nodes.setdefault("/", Znode("/", None, Origin(0, 0, 0, 0)))
    for path in sorted(nodes):
        yield nodes[path]


def _kafka_znodes(image: MetadataImage, cluster_id: str | None, last: Origin) -> Iterator[Znode]:
    yield from _topics(image)
    yield from _brokers(image)
    quorum = image.quorum
    if quorum.epoch is not None and quorum.epoch >= 0:
        at = Origin(quorum.offset or 0, quorum.time or 0, quorum.offset or 0, quorum.time or 0)
        yield Znode("/controller_epoch", str(quorum.epoch).encode(), at, version=quorum.epoch)
    if cluster_id:
        yield Znode("/cluster/id", _json({"version": "1", "id": cluster_id}), Origin(0, 0, 0, 0))
    yield from _configs(image)
    yield from _quotas_and_scram(image)
    if image.producer_ids is not None:
        fields, origin = image.producer_ids
        start = int(fields["NextProducerId"])
        yield Znode("/latest_producer_id_block", _json({"version": 1, "broker": -1, "block_start": str(start),
                                                        "block_end": str(start + 999)}), origin)
    yield from _acls(image)
    for token_id, (fields, origin) in image.tokens.items():
        token = {"version": 3, "owner": fields.get("Owner"), "tokenRequester": fields.get("Requester"),
                 "renewers": fields.get("Renewers") or [], "issueTimestamp": fields.get("IssueTimestamp"),
                 "maxTimestamp": fields.get("MaxTimestamp"), "expiryTimestamp": fields.get("ExpirationTimestamp"),
                 "tokenId": token_id}
        yield Znode(f"/delegation_token/tokens/{token_id}", _json(token), origin)


def _topics(image: MetadataImage) -> Iterator[Znode]:
    by_topic: dict[str, list] = {}
    for partition in image.partitions.values():
        by_topic.setdefault(partition.topic_id, []).append(partition)
    epoch = image.quorum.epoch if image.quorum.epoch is not None else -1
    for topic in image.topics.values():
        partitions = sorted(by_topic.get(topic.topic_id, []), key=lambda p: p.partition)
        assignment = {
            "version": 3, "topic_id": topic.topic_id,
            "partitions": {str(p.partition): p.replicas for p in partitions},
            "adding_replicas": {str(p.partition): p.adding for p in partitions if p.adding},
            "removing_replicas": {str(p.partition): p.removing for p in partitions if p.removing},
        }
        changed = max([topic.origin, *(p.origin for p in partitions)], key=lambda o: o.changed_offset)
        origin = Origin(topic.origin.created_offset, topic.origin.created_time, changed.changed_offset,
                        changed.changed_time)
        base = f"/brokers/topics/{topic.name}"
        yield Znode(base, _json(assignment), origin)
        for p in partitions:
            state = {"controller_epoch": epoch, "leader": p.leader, "version": 1, "leader_epoch": p.leader_epoch,
                     "isr": p.isr}
            if p.leader_recovery_state == 1:
                state["leader_recovery_state"] = 1
            yield Znode(f"{base}/partitions/{p.partition}/state", _json(state), p.origin,
                        version=max(p.partition_epoch, 0))


def _endpoint_name(endpoint: dict[str, Any]) -> str:
    return f"{endpoint.get('Name')}://{endpoint.get('Host') or ''}:{endpoint.get('Port')}"


def _brokers(image: MetadataImage) -> Iterator[Znode]:
    for broker in image.brokers.values():
        plaintext = [e for e in broker.endpoints if SECURITY_PROTOCOLS.get(e.get("SecurityProtocol")) == "PLAINTEXT"]
        data: dict[str, Any] = {
            "features": {}, "listener_security_protocol_map": {
                e.get("Name"): SECURITY_PROTOCOLS.get(e.get("SecurityProtocol"), str(e.get("SecurityProtocol")))
                for e in broker.endpoints},
            "endpoints": [_endpoint_name(e) for e in broker.endpoints], "jmx_port": -1,
            "port": plaintext[0].get("Port") if plaintext else -1,
            "host": plaintext[0].get("Host") if plaintext else None,
            "version": 5, "timestamp": str(broker.origin.created_time),
        }
        if broker.rack is not None:
            data["rack"] = broker.rack
        yield Znode(f"/brokers/ids/{broker.broker_id}", _json(data), broker.origin, ephemeral_owner=broker.epoch)


def _newest(origins: list[Origin]) -> Origin:
    first = min(origins, key=lambda o: o.created_offset)
    last = max(origins, key=lambda o: o.changed_offset)
    return Origin(first.created_offset, first.created_time, last.changed_offset, last.changed_time)


def _configs(image: MetadataImage) -> Iterator[Znode]:
    """Topic and broker configs; a topic without configs gets an empty one, as Kafka's ZooKeeper writer creates
    for every topic (KAFKA-16003, 3.7.1+) and as ZooKeeper-mode topic creation always did."""
    for topic in image.topics.values():
        if ("topic", topic.name) not in image.configs:
            yield Znode(f"/config/topics/{topic.name}", _json({"version": 1, "config": {}}), topic.origin)
    for (kind, name), values in image.configs.items():
        if kind not in ("topic", "broker"):
            continue
        zk_name = "<default>" if kind == "broker" and name == "" else name
        config = {key: value for key, (value, _) in sorted(values.items())}
        origin = _newest([origin for _, origin in values.values()])
        yield Znode(f"/config/{kind}s/{zk_name}", _json({"version": 1, "config": config}), origin)


def _quota_path(entity: tuple[tuple[str, str | None], ...]) -> str | None:
    parts = dict(entity)
    names = {kind: "<default>" if name in (None, "") else _sanitize(name) for kind, name in parts.items()}
    if set(parts) == {"user", "client-id"}:
        return f"/config/users/{names['user']}/clients/{names['client-id']}"
    if len(parts) == 1:
        kind = next(iter(parts))
        if kind in QUOTA_ZK_TYPES:
            return f"/config/{QUOTA_ZK_TYPES[kind]}/{names[kind]}"
    return None


def _quotas_and_scram(image: MetadataImage) -> Iterator[Znode]:
    entries: dict[str, dict[str, tuple[str, Origin]]] = {}
    for entity, values in image.quotas.items():
        path = _quota_path(entity)
        if path is not None:
            target = entries.setdefault(path, {})
            for key, (value, origin) in values.items():
                target[key] = (str(value), origin)
    for (user, mechanism), (fields, origin) in image.scram.items():
        credential = (f"salt={_b64(fields.get('Salt'))},stored_key={_b64(fields.get('StoredKey'))},"
                      f"server_key={_b64(fields.get('ServerKey'))},iterations={fields.get('Iterations')}")
        path = f"/config/users/{_sanitize(user)}"
        entries.setdefault(path, {})[SCRAM_MECHANISMS.get(mechanism, str(mechanism))] = (credential, origin)
    for path, values in entries.items():
        config = {key: value for key, (value, _) in sorted(values.items())}
        yield Znode(path, _json({"version": 1, "config": config}), _newest([o for _, o in values.values()]))


def _b64(value: bytes | None) -> str:
    return base64.b64encode(value or b"").decode()


def _acls(image: MetadataImage) -> Iterator[Znode]:
    by_resource: dict[str, list[tuple[dict[str, Any], Origin]]] = {}
    for fields, origin in image.acls.values():
        pattern = PATTERN_TYPES.get(int(fields["PatternType"]), str(fields["PatternType"]))
        resource = RESOURCE_TYPES.get(int(fields["ResourceType"]), str(fields["ResourceType"]))
        name = fields["ResourceName"]
        path = (f"/kafka-acl/{resource}/{name}" if pattern == "literal"
                else f"/kafka-acl-extended/{pattern}/{resource}/{name}")
        by_resource.setdefault(path, []).append((fields, origin))
    for path, entries in by_resource.items():
        acls = [{"principal": f["Principal"], "permissionType": PERMISSIONS.get(int(f["PermissionType"]), "Unknown"),
                 "operation": OPERATIONS.get(int(f["Operation"]), "Unknown"), "host": f["Host"]}
                for f, _ in entries]
        yield Znode(path, _json({"version": 1, "acls": acls}), _newest([o for _, o in entries]))


def _kraft_znodes(image: MetadataImage, last: Origin) -> Iterator[Znode]:
    for broker in image.brokers.values():
        yield Znode(f"{KRAFT_ROOT}/brokers/{broker.broker_id}", _json({
            "broker_id": broker.broker_id, "epoch": broker.epoch, "incarnation_id": broker.incarnation_id,
            "fenced": broker.fenced, "in_controlled_shutdown": broker.in_controlled_shutdown,
            "migrating_zk_broker": broker.migrating_zk_broker, "rack": broker.rack,
            "endpoints": [_endpoint_name(e) for e in broker.endpoints],
            "features": {f["Name"]: [f["MinSupportedVersion"], f["MaxSupportedVersion"]] for f in broker.features},
            "log_dirs": broker.log_dirs}), broker.origin)
    for controller in image.controllers.values():
        yield Znode(f"{KRAFT_ROOT}/controllers/{controller.controller_id}", _json({
            "controller_id": controller.controller_id, "incarnation_id": controller.incarnation_id,
            "zk_migration_ready": controller.zk_migration_ready,
            "endpoints": [_endpoint_name(e) for e in controller.endpoints],
            "features": {f["Name"]: [f["MinSupportedVersion"], f["MaxSupportedVersion"]]
                         for f in controller.features}}), controller.origin)
    names = {topic.topic_id: topic.name for topic in image.topics.values()}
    for p in image.partitions.values():
        if p.topic_id not in names:
            continue
        yield Znode(f"{KRAFT_ROOT}/partitions/{names[p.topic_id]}/{p.partition}", _json({
            "topic_id": p.topic_id, "partition_epoch": p.partition_epoch, "leader_epoch": p.leader_epoch,
            "leader_recovery_state": p.leader_recovery_state, "elr": p.elr, "last_known_elr": p.last_known_elr,
            "directories": p.directories,
            "reassigning_since_offset": p.reassigning_since[0] if p.reassigning_since else None,
            "reassigning_since": p.reassigning_since[1] if p.reassigning_since else None,
        }), p.origin, version=max(p.partition_epoch, 0))
    quorum = image.quorum
    yield Znode(f"{KRAFT_ROOT}/quorum", _json({
        "leader_id": quorum.leader_id, "epoch": quorum.epoch, "voters": quorum.voters,
        "granting_voters": quorum.granting_voters, "kraft_version": quorum.kraft_version,
        "voters_record": None if quorum.voters_record is None else [
            {"voter_id": v.get("VoterId"), "directory_id": v.get("VoterDirectoryId")} for v in quorum.voters_record],
    }), Origin(quorum.offset or 0, quorum.time or 0, quorum.offset or 0, quorum.time or 0))
    features = {name: level for name, (level, _) in sorted(image.features.items())}
    origins = [origin for _, origin in image.features.values()]
    yield Znode(f"{KRAFT_ROOT}/features", _json(features), _newest(origins) if origins else last)
    migration = None if image.migration_state is None else image.migration_state[0]
    yield Znode(f"{KRAFT_ROOT}/log", _json({"last_offset": image.last_offset, "last_time": image.last_time,
                                            "records_applied": image.records_applied,
                                            "zk_migration_state": migration}), last)
    for number, anomaly in enumerate(image.anomalies):
        at = Origin(anomaly.offset, anomaly.time, anomaly.offset, anomaly.time)
        topic_id, _, partition = anomaly.subject.partition(":")
        topic = names.get(topic_id) if partition else None
        subject = f"{topic}-{partition}" if topic else anomaly.subject
        yield Znode(f"{KRAFT_ROOT}/anomalies/{anomaly.offset:020d}-{number}", _json({
            "kind": anomaly.kind, "offset": anomaly.offset, "subject": subject, "detail": anomaly.detail,
            "topic": topic, "partition": int(partition) if topic else None}), at)
