"""The bytes Kafka writes into each znode, per era (kafka-zk-layout.md §2–§6).

Three JSON producers are imitated: 0.8.0's hand-built JSON (sorted fields, ``{ `` ``, `` `` }``
and ``[ 1, 2 ]`` spacing), Scala ``Json.encode`` (0.8.1–1.0) and Jackson (1.1+); the last two are
both compact and differ only in key order, which is not significant. Hot encoders (topics and
partition states) are plain string formatting because a large cluster has a million of them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_zk_audit_testing.simulator.spec import Era


@dataclass(frozen=True)
class Listener:
    """One advertised endpoint: listener name, security protocol, host, port."""

    name: str
    protocol: str
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


@dataclass(frozen=True)
class BrokerInfo:
    """What a broker registers under /brokers/ids/<id>."""

    broker_id: int
    host: str
    jmx_port: int
    timestamp_ms: int
    listeners: tuple[Listener, ...]
    rack: str | None = None

    @property
    def plaintext(self) -> Listener | None:
        return next((item for item in self.listeners if item.protocol == "PLAINTEXT"), None)


@dataclass(frozen=True)
class PartitionState:
    """The content of …/partitions/<p>/state."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = 0


def compact(value: object) -> bytes:
    """``Json.encode`` / Jackson: compact JSON, keys in the given order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def handbuilt(value: object) -> str:
    """0.8.0's ``Utils.mergeJsonFields``/``seqToJson`` JSON: sorted fields and padded brackets."""
    if isinstance(value, Mapping):
        fields = sorted(f'"{key}":{handbuilt(item)}' for key, item in value.items())
        return "{ " + ", ".join(fields) + " }"
    if isinstance(value, list | tuple):
        return "[ " + ", ".join(handbuilt(item) for item in value) + " ]"
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value)


def _ints(values: Iterable[int]) -> str:
    return ",".join(str(value) for value in values)


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode`` (32-bit, signed)."""
    result = 0
    for char in text:
        result = (31 * result + ord(char)) & 0xFFFFFFFF
    return result - (1 << 32) if result >= 1 << 31 else result


@functools.lru_cache(maxsize=256)
def hashmap_key_order(count: int) -> tuple[int, ...]:
    """The order a Java ``HashMap`` iterates the keys "0".."count-1": how Kafka's maps come out."""
    capacity = 16
    while capacity * 0.75 < count:
        capacity *= 2

    def bucket(partition: int) -> int:
        code = java_string_hash(str(partition)) & 0xFFFFFFFF
        return (code ^ (code >> 16)) & (capacity - 1)

    return tuple(sorted(range(count), key=lambda partition: (bucket(partition), partition)))


def uuid_base64(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: 16 bytes as URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def scram_credential(password: str, salt: bytes, iterations: int = 4096, mechanism: str = "SCRAM-SHA-256") -> str:
    """A SCRAM credential as ``ScramCredentialUtils`` stores it in /config/users/<u>."""
    digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},iterations={iterations}"


class Encoder:
    """The era's encoding of every znode the simulator writes."""

    def __init__(self, era: Era) -> None:
        self.era = era
        self.hand = era.handbuilt_json

    # -- brokers and controller ------------------------------------------------------------
    def broker(self, info: BrokerInfo) -> bytes:
        version = self.era.broker_version
        plaintext = info.plaintext
        host = plaintext.host if plaintext else None
        port = plaintext.port if plaintext else -1
        timestamp = str(info.timestamp_ms)
        if version == 1:
            fields = {"host": host, "jmx_port": info.jmx_port, "port": port, "timestamp": timestamp, "version": 1}
            return self._json(fields)
        endpoints = [listener.endpoint for listener in info.listeners]
        rack = {"rack": info.rack} if info.rack is not None and version >= 3 else {}
        if version in (2, 3):
            return compact(
                {"jmx_port": info.jmx_port, "timestamp": timestamp, "endpoints": endpoints, **rack,
                 "host": host, "version": version, "port": port}
            )
        protocols = {listener.name: listener.protocol for listener in info.listeners}
        if version == 4:
            return compact(
                {"listener_security_protocol_map": protocols, "endpoints": endpoints, **rack,
                 "jmx_port": info.jmx_port, "host": host, "timestamp": timestamp, "port": port, "version": 4}
            )
        return compact(
            {"features": {}, "listener_security_protocol_map": protocols, "endpoints": endpoints, **rack,
             "jmx_port": info.jmx_port, "port": port, "host": host, "version": 5, "timestamp": timestamp}
        )

    def controller(self, broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
        if self.hand:
            return self._json({"brokerid": broker_id, "timestamp": str(timestamp_ms), "version": 1})
        if self.era.controller_version == 1:
            return compact({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})
        return compact(
            {"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms),
             "kraftControllerEpoch": kraft_controller_epoch}
        )

    @staticmethod
    def controller_epoch(epoch: int) -> bytes:
        return str(epoch).encode()

    @staticmethod
    def cluster_id(cluster_id: str) -> bytes:
        return compact({"version": "1", "id": cluster_id})

    def feature(self) -> bytes:
        return compact({"features": {}, "version": self.era.feature_version, "status": 1})

    @staticmethod
    def producer_id_block(broker_id: int, block_start: int, block_size: int = 1000) -> bytes:
        return compact(
            {"version": 1, "broker": broker_id, "block_start": str(block_start),
             "block_end": str(block_start + block_size - 1)}
        )

    @staticmethod
    def migration(controller_id: int, controller_epoch: int, metadata_offset: int, metadata_epoch: int) -> bytes:
        return compact(
            {"version": 0, "kraft_controller_id": controller_id, "kraft_controller_epoch": controller_epoch,
             "kraft_metadata_offset": metadata_offset, "kraft_metadata_epoch": metadata_epoch}
        )

    # -- topics and partitions -------------------------------------------------------------
    def topic(self, assignment: Mapping[int, Iterable[int]], topic_id: str | None = None) -> bytes:
        """/brokers/topics/<t>. ``assignment`` maps partition id to replicas."""
        if self.hand:
            return self._json({"partitions": {str(p): list(r) for p, r in assignment.items()}, "version": 1})
        order = self._partition_order(assignment)
        partitions = ",".join(f'"{p}":[{_ints(assignment[p])}]' for p in order)
        version = self.era.topic_version
        if version == 1:
            return f'{{"version":1,"partitions":{{{partitions}}}}}'.encode()
        if version == 2:
            return (
                f'{{"version":2,"partitions":{{{partitions}}},"adding_replicas":{{}},"removing_replicas":{{}}}}'
            ).encode()
        topic_id_field = f'"topic_id":"{topic_id}",' if topic_id else ""
        return (
            f'{{"partitions":{{{partitions}}},{topic_id_field}"adding_replicas":{{}},'
            f'"removing_replicas":{{}},"version":3}}'
        ).encode()

    @staticmethod
    def _partition_order(assignment: Mapping[int, Iterable[int]]) -> list[int]:
        keys = list(assignment)
        if keys == list(range(len(keys))):
            return list(hashmap_key_order(len(keys)))
        return keys

    def state(self, state: PartitionState) -> bytes:
        if self.hand:
            return self._json(
                {"controller_epoch": state.controller_epoch, "isr": list(state.isr), "leader": state.leader,
                 "leader_epoch": state.leader_epoch, "version": 1}
            )
        recovery = (
            ',"leader_recovery_state":1'
            if state.leader_recovery_state == 1 and self.era.at_least(3, 2, 0)
            else ""
        )
        return (
            f'{{"controller_epoch":{state.controller_epoch},"leader":{state.leader},"version":1,'
            f'"leader_epoch":{state.leader_epoch},"isr":[{_ints(state.isr)}]{recovery}}}'
        ).encode()

    # -- admin -----------------------------------------------------------------------------
    def delete_marker(self) -> bytes | None:
        """/admin/delete_topics/<t>: an empty string before 1.1, null from 1.1."""
        return None if self.era.null_delete_marker else b""

    def reassignment(self, entries: Iterable[tuple[str, int, Iterable[int]]]) -> bytes:
        partitions = [
            {"topic": topic, "partition": partition, "replicas": list(replicas)}
            for topic, partition, replicas in entries
        ]
        return self._json({"version": 1, "partitions": partitions})

    def preferred_election(self, entries: Iterable[tuple[str, int]]) -> bytes:
        partitions = [{"topic": topic, "partition": partition} for topic, partition in entries]
        return self._json({"version": 1, "partitions": partitions})

    @staticmethod
    def isr_change(entries: Iterable[tuple[str, int]]) -> bytes:
        return compact({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in entries]})

    @staticmethod
    def log_dir_event(broker_id: int) -> bytes:
        return compact({"version": 1, "broker": broker_id, "event": 1})

    # -- configs ---------------------------------------------------------------------------
    @staticmethod
    def config(values: Mapping[str, str]) -> bytes:
        return compact({"version": 1, "config": dict(values)})

    def config_change(self, entity_type: str, entity_name: str) -> bytes:
        """/config/changes/config_change_<seq> in the era's format."""
        form = self.era.config_change_format
        if form == "string":
            return json.dumps(entity_name).encode()
        if form == "v1":
            return compact({"version": 1, "entity_type": entity_type, "entity_name": entity_name})
        return compact({"version": 2, "entity_path": f"{entity_type}/{entity_name}"})

    # -- security --------------------------------------------------------------------------
    @staticmethod
    def acls(entries: Iterable[tuple[str, str, str, str]]) -> bytes:
        """/kafka-acl…/<type>/<name>: entries of (principal, permission, operation, host)."""
        acls = [
            {"principal": principal, "permissionType": permission, "operation": operation, "host": host}
            for principal, permission, operation, host in entries
        ]
        return compact({"version": 1, "acls": acls})

    def acl_change(self, resource_type: str, name: str) -> bytes:
        kind = resource_type.upper() if self.era.acl_change_uses_java_names else resource_type
        return f"{kind}:{name}".encode()

    def extended_acl_change(self, resource_type: str, name: str) -> bytes:
        kind = resource_type.upper() if self.era.acl_change_uses_java_names else resource_type
        return compact({"version": 1, "resourceType": kind, "name": name, "patternType": "PREFIXED"})

    def delegation_token(
        self, token_id: str, owner: str, renewers: list[str], issue_ms: int, max_ms: int, expiry_ms: int
    ) -> bytes:
        version = self.era.delegation_token_version
        fields: dict[str, object] = {"version": version, "owner": owner}
        if version == 3:
            fields["tokenRequester"] = owner
        fields.update(
            {"renewers": renewers, "issueTimestamp": issue_ms, "maxTimestamp": max_ms, "expiryTimestamp": expiry_ms,
             "tokenId": token_id}
        )
        return compact(fields)

    # -- old consumers ---------------------------------------------------------------------
    def consumer_registration(self, subscription: Mapping[str, int], timestamp_ms: int) -> bytes:
        if self.hand:
            topics = ",".join(f'"{topic}": {streams}' for topic, streams in subscription.items())
            fields = [
                '"pattern":"static"', f'"subscription":{{ {topics} }}', f'"timestamp":"{timestamp_ms}"', '"version":1',
            ]
            return ("{ " + ", ".join(fields) + " }").encode()
        return compact(
            {"version": 1, "subscription": dict(subscription), "pattern": "static", "timestamp": str(timestamp_ms)}
        )

    @staticmethod
    def offset(value: int) -> bytes:
        return str(value).encode()

    # -- helpers ---------------------------------------------------------------------------
    def _json(self, value: object) -> bytes:
        return handbuilt(value).encode() if self.hand else compact(value)
