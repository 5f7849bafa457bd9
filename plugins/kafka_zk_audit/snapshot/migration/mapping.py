"""Kafka's ZooKeeper → KRaft mapping, release by release (3.4–3.9): both sides of a migration as comparable entries.

``zk_entries`` reads a ZooKeeper tree as the release's migration client reads it and gives the entries the KRaft log
must hold (apache/kafka core/.../zk/ZkMigrationClient.scala and zk/migration/Zk*MigrationClient.scala);
``kraft_entries`` gives the entries of a replayed KRaft image. An entry is keyed by its kind and a canonical key;
``value`` and ``extra`` are compared when both sides have them (None: not comparable, e.g. a password the snapshot
could not decode with ``password.encoder.secret``, a partition epoch after the load; a decoded one is compared by
the fingerprint of its clear text). What differs only in form is made equal here:
topic ids as text, ``<default>`` = ``""`` (broker) = null (quota entity), sanitized names, quota values as numbers,
ACLs by content (never their ids), a missing state znode or config znode. A KRaft form that Kafka writes but no
broker can use (a sanitized quota name, ZooKeeper's encrypted password) is kept as a ``flag`` for a finding of its
own. Secrets arrive as fingerprints (``tree`` scrubs the ZooKeeper side; ``fingerprint`` is the same keyed one).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from kafka_zk_audit.contract.secrets import ENCRYPTED_VALUE, FINGERPRINT_PREFIX, decoded_fingerprint, is_secret_config
from kafka_zk_audit.snapshot.kraft.image import MetadataImage
from kafka_zk_audit.snapshot.kraft.render import OPERATIONS, PATTERN_TYPES, PERMISSIONS, RESOURCE_TYPES
from kafka_zk_audit.snapshot.kraft.schema import uuid_to_str
from kafka_zk_audit.snapshot.migration.tree import ZkNode, ZkTree, children, data_of

Release = tuple[int, int, int]
MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
QUOTA_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
ACL_PATTERNS = {"/kafka-acl/": "literal", "/kafka-acl-extended/prefixed/": "prefixed"}
MANGLED, ENCRYPTED = "mangled", "encrypted"


def parse_release(text: str) -> Release:
    """``"3.6"`` → (3, 6, 0); ``"3.6.1"`` → (3, 6, 1). Only 3.4–3.9 migrate from ZooKeeper."""
    parts = [int(part) for part in str(text).split(".")[:3]]
    release = (parts + [0, 0, 0])[:3]
    if not (3, 4, 0) <= (release[0], release[1], 0) <= (3, 9, 0):
        raise ValueError(f"release {text}: ZooKeeper → KRaft migrations run with Kafka 3.4 to 3.9")
    return release[0], release[1], release[2]


def skips_pending_deletions(release: Release) -> bool:
    """KAFKA-15605: 3.6.1+ leave topics pending deletion out of the load."""
    return release >= (3, 6, 1)


def migrates_acls_and_scram(release: Release) -> bool:
    return release >= (3, 5, 0)


def migrates_tokens(release: Release) -> bool:
    return release >= (3, 6, 0)


@dataclass(frozen=True)
class Entry:
    """One entity of one side, keyed by (kind, key); the evidence names the znode or the record that shows it."""

    kind: str
    key: str
    value: str | None
    extra: str | None
    evidence: str
    topic: str | None = None
    partition: int | None = None
    broker_id: int | None = None
    path: str | None = None
    flag: str | None = None


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _load(data: bytes | None) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _shown(data: bytes | None, limit: int = 300) -> str:
    text = (data or b"").decode(errors="replace")
    return text if len(text) <= limit else text[:limit] + "…"


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize``: URL-decoding."""
    return unquote(name)


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding, ``*`` as ``%2A``, a space as ``%20``."""
    return quote(name, safe="-_.").replace("*", "%2A")


def canonical_uuid(text: str | None) -> str | None:
    """A topic id as ``Uuid.toString`` prints its 16 bytes (ZooKeeper's text and KRaft's bytes compare decoded)."""
    if not text:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return text
    return uuid_to_str(raw) if len(raw) == 16 else text


def _secret_value(key: str, value: Any) -> bool:
    return is_secret_config(key, value) or (isinstance(value, str) and value.startswith(FINGERPRINT_PREFIX))


# -- ZooKeeper ------------------------------------------------------------------------------------------------------
def pending_deletions(tree: ZkTree) -> set[str]:
    return set(children(tree, "/admin/delete_topics"))


def zk_entries(tree: ZkTree, release: Release) -> Iterator[Entry]:
    """What the release's migration writes from this tree, as entries (see the module docstring)."""
    skipped = pending_deletions(tree) if skips_pending_deletions(release) else set()
    topics = [name for name in children(tree, "/brokers/topics") if name not in skipped]
    for topic in topics:
        yield from _zk_topic(tree, topic)
    for name in children(tree, "/config/brokers"):
        yield from _zk_configs(tree, "broker", name, "" if name == "<default>" else name)
    yield from _zk_quotas(tree)
    if migrates_acls_and_scram(release):
        yield from _zk_scram(tree)
        yield from _zk_acls(tree)
    if migrates_tokens(release):
        for token in children(tree, "/delegation_token/tokens"):
            path = f"/delegation_token/tokens/{token}"
            yield Entry("token", token, None, None, f"znode {path}", path=path)
    yield from _zk_producer_ids(tree)


def _zk_topic(tree: ZkTree, topic: str) -> Iterator[Entry]:
    path = f"/brokers/topics/{topic}"
    node = tree.get(path) or ZkNode(None)
    document = _load(node.data) or {}
    topic_id = canonical_uuid(document.get("topic_id"))
    yield Entry("topic", topic, topic_id, None, f"znode {path} = {_shown(node.data)}", topic=topic, path=path)
    adding, removing = document.get("adding_replicas") or {}, document.get("removing_replicas") or {}
    for partition, replicas in sorted((document.get("partitions") or {}).items(), key=lambda kv: int(kv[0])):
        state_path = f"{path}/partitions/{partition}/state"
        state_node = tree.get(state_path)
        state = _load(state_node.data) if state_node is not None else None
        if state is None:  # ZTMC.iterateTopics: a missing state znode
            state = {"isr": replicas, "leader": replicas[0] if replicas else -1, "leader_epoch": 0}
        fields = {"replicas": list(replicas), "adding": list(adding.get(partition) or []),
                  "removing": list(removing.get(partition) or []), "isr": sorted(state.get("isr") or []),
                  "leader": state.get("leader"), "leader_epoch": state.get("leader_epoch"),
                  "leader_recovery_state": state.get("leader_recovery_state") or 0}
        epoch = state_node.version if state_node is not None else 0
        shown = _shown(state_node.data) if state_node is not None else "(no state znode)"
        yield Entry("partition", _json([topic, int(partition)]), _json(fields), str(epoch),
                    f"znode {state_path} = {shown} (version {epoch}); assignment {replicas}",
                    topic=topic, partition=int(partition), path=state_path)
    yield from _zk_configs(tree, "topic", topic, topic)


def _zk_configs(tree: ZkTree, kind: str, zk_name: str, name: str) -> Iterator[Entry]:
    path = f"/config/{kind}s/{zk_name}"
    node = tree.get(path)
    config = ((_load(node.data) or {}).get("config") or {}) if node is not None else {}
    for key, value in sorted(config.items()):
        secret = _secret_value(key, value)
        decoded = decoded_fingerprint(value) if secret else None
        shown = (f"(decoded, {decoded})" if decoded else "(secret, fingerprinted)") if secret else _json(value)
        yield Entry("config", _json([kind, name, key]), decoded if secret else str(value), None,
                    f"znode {path} {key} = {shown}", topic=name if kind == "topic" else None,
                    broker_id=int(name) if kind == "broker" and name.isdigit() else None, path=path)


def _quota_entities(tree: ZkTree) -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    for zk_type, kind in QUOTA_TYPES.items():
        for name in children(tree, f"/config/{zk_type}"):
            yield f"/config/{zk_type}/{name}", [(kind, _entity_name(name))]
    for user in children(tree, "/config/users"):
        for client in children(tree, f"/config/users/{user}/clients"):
            yield (f"/config/users/{user}/clients/{client}",
                   [("user", _entity_name(user)), ("client-id", _entity_name(client))])


def _entity_name(zk_name: str) -> str | None:
    return None if zk_name == "<default>" else desanitize(zk_name)


def _zk_quotas(tree: ZkTree) -> Iterator[Entry]:
    for path, entity in _quota_entities(tree):
        config = (_load(data_of(tree, path)) or {}).get("config") or {}
        for key, value in sorted(config.items()):
            if key.startswith("SCRAM-"):
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue  # the migration aborts on it: the state finding says the load did not complete
            yield Entry("quota", _json([sorted(entity, key=lambda p: p[0]), key]), repr(number), None,
                        f"znode {path} {key} = {value}", path=path)


def _zk_scram(tree: ZkTree) -> Iterator[Entry]:
    for user in children(tree, "/config/users"):
        path = f"/config/users/{user}"
        config = (_load(data_of(tree, path)) or {}).get("config") or {}
        for key, value in sorted(config.items()):
            if key in MECHANISMS.values():
                yield Entry("scram", _json([_entity_name(user), key]), str(value), None,
                            f"znode {path} {key} = {value}", path=path)


def _zk_acls(tree: ZkTree) -> Iterator[Entry]:
    for prefix, pattern in ACL_PATTERNS.items():
        for resource_type in children(tree, prefix.rstrip("/")):
            if resource_type not in RESOURCE_TYPES.values():
                continue  # ZAMC: a resource type SecurityUtils cannot parse is skipped with a warning
            for name in children(tree, f"{prefix}{resource_type}"):
                path = f"{prefix}{resource_type}/{name}"
                for ace in (_load(data_of(tree, path)) or {}).get("acls") or []:
                    key = [resource_type, name, pattern, ace.get("principal"), ace.get("host"),
                           ace.get("operation"), ace.get("permissionType")]
                    yield Entry("acl", _json(key), None, None, f"znode {path} = {_json(ace)}", path=path)


def _zk_producer_ids(tree: ZkTree) -> Iterator[Entry]:
    node = tree.get("/latest_producer_id_block")
    block = _load(node.data) if node is not None else None
    if block:
        value = {"broker": int(block["broker"]), "start": int(block["block_start"]), "end": int(block["block_end"])}
        yield Entry("producer_ids", "block", _json(value), None,
                    f"znode /latest_producer_id_block = {_shown(node.data)}", path="/latest_producer_id_block")


# -- KRaft ----------------------------------------------------------------------------------------------------------
def _at(origin: Any, record: str, shown: str) -> str:
    return f"offset {origin.changed_offset} {record} {shown}"


def kraft_entries(image: MetadataImage, release: Release, fingerprint: Callable[[bytes], str]) -> Iterator[Entry]:
    """The entries of a replayed KRaft image (see the module docstring); secrets only as fingerprints."""
    names = {topic.topic_id: topic.name for topic in image.topics.values()}
    for topic in image.topics.values():
        yield Entry("topic", topic.name, topic.topic_id, None,
                    _at(topic.origin, "TopicRecord", _json({"Name": topic.name, "TopicId": topic.topic_id})),
                    topic=topic.name, path=f"/brokers/topics/{topic.name}")
    for p in image.partitions.values():
        topic = names.get(p.topic_id)
        if topic is None:
            continue
        fields = {"replicas": p.replicas, "adding": p.adding, "removing": p.removing, "isr": sorted(p.isr),
                  "leader": p.leader, "leader_epoch": p.leader_epoch,
                  "leader_recovery_state": p.leader_recovery_state}
        loaded = p.origin.changed_offset == p.origin.created_offset  # its PartitionRecord only: the load's epoch
        yield Entry("partition", _json([topic, p.partition]), _json(fields),
                    str(p.partition_epoch) if loaded else None,
                    _at(p.origin, "PartitionRecord", _json({**fields, "partition_epoch": p.partition_epoch})),
                    topic=topic, partition=p.partition, path=f"/brokers/topics/{topic}/partitions/{p.partition}/state")
    yield from _kraft_configs(image, release, fingerprint)
    yield from _kraft_quotas(image)
    if migrates_acls_and_scram(release):
        yield from _kraft_scram(image, fingerprint)
        yield from _kraft_acls(image)
    if migrates_tokens(release):
        for token, (_, origin) in image.tokens.items():
            yield Entry("token", token, None, None, _at(origin, "DelegationTokenRecord", token),
                        path=f"/delegation_token/tokens/{token}")
    if image.producer_ids is not None:
        fields, origin = image.producer_ids
        yield Entry("producer_ids", "block", _json({"next": int(fields["NextProducerId"])}), None,
                    _at(origin, "ProducerIdsRecord", _json({"NextProducerId": fields["NextProducerId"]})),
                    path="/latest_producer_id_block")


def _kraft_configs(image: MetadataImage, release: Release, fingerprint: Callable[[bytes], str]) -> Iterator[Entry]:
    import re

    encrypted = re.compile(ENCRYPTED_VALUE)
    for (kind, name), values in image.configs.items():
        if kind not in ("topic", "broker"):
            continue
        path = f"/config/{kind}s/{'<default>' if kind == 'broker' and name == '' else name}"
        for key, (value, origin) in sorted(values.items()):
            secret = is_secret_config(key, value)
            flag = ENCRYPTED if secret and release >= (3, 5, 0) and encrypted.search(value) else None
            shown = fingerprint(value.encode()) if secret else value
            yield Entry("config", _json([kind, name, key]), shown, None,
                        _at(origin, "ConfigRecord", f"{key} = {shown}"), topic=name if kind == "topic" else None,
                        broker_id=int(name) if kind == "broker" and name.isdigit() else None, path=path, flag=flag)


def _kraft_name(kind: str, name: str | None) -> tuple[str, str | None, bool]:
    """(KRaft entity type, canonical name, mangled): the 3.4 types, a ``""`` or ``<default>`` default and a still
    sanitized name are what KAFKA-16222/16411 left behind."""
    mangled = kind in QUOTA_TYPES
    kind = QUOTA_TYPES.get(kind, kind)
    if name in ("", "<default>"):
        return kind, None, True
    if name is not None and "%" in name and desanitize(name) != name and sanitize(desanitize(name)) == name:
        return kind, desanitize(name), True
    return kind, name, mangled


def _quota_path(entity: list[tuple[str, str | None]]) -> str:
    parts = dict(entity)
    shown = {kind: "<default>" if name is None else sanitize(name) for kind, name in parts.items()}
    if "user" in parts and "client-id" in parts:
        return f"/config/users/{shown['user']}/clients/{shown['client-id']}"
    kind = next(iter(parts))
    zk_type = {v: k for k, v in QUOTA_TYPES.items()}.get(kind, kind)
    return f"/config/{zk_type}/{shown[kind]}"


def _kraft_quotas(image: MetadataImage) -> Iterator[Entry]:
    for entity, values in image.quotas.items():
        canonical, mangled = [], False
        for kind, name in entity:
            kind, name, was_mangled = _kraft_name(kind, name)
            canonical.append((kind, name))
            mangled = mangled or was_mangled
        canonical.sort(key=lambda p: p[0])
        raw = _json([[kind, name] for kind, name in entity])
        for key, (value, origin) in sorted(values.items()):
            yield Entry("quota", _json([canonical, key]), repr(float(value)), None,
                        _at(origin, "ClientQuotaRecord", f"{raw} {key} = {value}"), path=_quota_path(canonical),
                        flag=MANGLED if mangled else None)


def _kraft_scram(image: MetadataImage, fingerprint: Callable[[bytes], str]) -> Iterator[Entry]:
    def b64(value: bytes | None) -> str:
        return base64.b64encode(value or b"").decode()

    for (user, mechanism), (fields, origin) in image.scram.items():
        credential = (f"salt={b64(fields.get('Salt'))},stored_key={b64(fields.get('StoredKey'))},"
                      f"server_key={b64(fields.get('ServerKey'))},iterations={fields.get('Iterations')}")
        _, name, mangled = _kraft_name("user", user)
        mechanism_name = MECHANISMS.get(mechanism, str(mechanism))
        shown = fingerprint(credential.encode())
        yield Entry("scram", _json([name, mechanism_name]), shown, None,
                    _at(origin, "UserScramCredentialRecord", f"{user} {mechanism_name} = {shown}"),
                    path=f"/config/users/{'<default>' if name is None else sanitize(name)}",
                    flag=MANGLED if mangled else None)


def _kraft_acls(image: MetadataImage) -> Iterator[Entry]:
    for fields, origin in image.acls.values():
        resource = RESOURCE_TYPES.get(int(fields["ResourceType"]), str(fields["ResourceType"]))
        pattern = PATTERN_TYPES.get(int(fields["PatternType"]), str(fields["PatternType"]))
        key = [resource, fields["ResourceName"], pattern, fields["Principal"], fields["Host"],
               OPERATIONS.get(int(fields["Operation"]), str(fields["Operation"])),
               PERMISSIONS.get(int(fields["PermissionType"]), str(fields["PermissionType"]))]
        path = (f"/kafka-acl/{resource}/{fields['ResourceName']}" if pattern == "literal"
                else f"/kafka-acl-extended/{pattern}/{resource}/{fields['ResourceName']}")
        yield Entry("acl", _json(key), None, None, _at(origin, "AccessControlEntryRecord", _json(key)), path=path)
