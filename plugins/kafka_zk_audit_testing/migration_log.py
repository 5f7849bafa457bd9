"""The KRaft metadata log a ZooKeeper → KRaft migration writes from a ZooKeeper tree, release by release (3.4–3.9).

An oracle for the migration diff, written from the migration notes (docs: the mapping reference), not from the diff:
the activation records of the release (3.4: none of the migration; 3.5: ZkMigrationState(PRE_MIGRATION) in the
bootstrap batch; 3.6+: the same inside a "Bootstrap records" transaction), a RegisterBrokerRecord (IsMigratingZkBroker)
for each ZooKeeper broker, the load (3.4: ZkMigrationState(1) first; 3.6+: BeginTransaction("ZK Migration")): per
topic TopicRecord, its ConfigRecords and PartitionRecords v0 (3.4: configs after partitions; PartitionEpoch = the
state znode's version), broker configs (``<default>`` → ``""``, passwords decoded from 3.5), client quotas named as
the release names them, SCRAM (3.5+), the producer id block (NextProducerId = block_start before 3.5.2/3.6.1, else
block_end + 1), ACLs (3.5+, new random ids), delegation tokens (3.6+), then the completion (3.5: ZkMigrationState(1);
3.6+: with EndTransaction; 3.4: nothing) and NoOps. ``MigrationLog.migration_znode`` is the ``/migration`` data
ZooKeeper then holds (kraft_metadata_offset = the last offset dual writes reached).

``PLANTS`` are divergences modelled on the migration bugs; each says where its finding is (``Planted``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk_audit.snapshot.kraft.batches import build_batch
from kafka_zk_audit.snapshot.kraft.render import OPERATIONS, PERMISSIONS, RESOURCE_TYPES
from kafka_zk_audit.snapshot.kraft.segments import write_checkpoint, write_segment
from kafka_zk_audit.snapshot.migration.mapping import (
    ACL_PATTERNS,
    QUOTA_TYPES,
    desanitize,
    migrates_acls_and_scram,
    migrates_tokens,
    parse_release,
    skips_pending_deletions,
)
from kafka_zk_audit.snapshot.migration.tree import ZkNode, ZkTree, children, data_of
from kafka_zk_audit_testing.kraft_logs import T0, uuid
from kafka_zk_audit_testing.password_encoder import decode_password
from kafka_zk_audit_testing.simulator.registry import Planted

(REGISTER_BROKER, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE, TOKEN, SCRAM, FEATURE_LEVEL, QUOTA, PRODUCER_IDS,
 BROKER_CHANGE, ACL, NO_OP, MIGRATION_STATE, BEGIN, END) = 0, 2, 3, 4, 5, 10, 11, 12, 14, 15, 17, 18, 20, 21, 23, 24
LEADER_CHANGE = 2  # control record type
TOPIC_TYPE, BROKER_TYPE = 2, 4
PRE_MIGRATION_3_4, MIGRATION, PRE_MIGRATION = 1, 1, 2
METADATA_VERSIONS = {(3, 4): 8, (3, 5): 11, (3, 6): 14, (3, 7): 19, (3, 8): 20, (3, 9): 21}
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
PLANTS = ("password_encoded", "producer_ids_behind", "quota_name_mangled", "topic_left_out", "partition_replicas",
          "partition_leader_epoch", "acl_missing", "config_missing", "dual_write_stopped")
Record = tuple[int, int, dict[str, Any]]


def _code(names: dict[int, str], name: str) -> int:
    return next(code for code, known in names.items() if known == name)


def _load(data: bytes | None) -> Any:
    return json.loads(data) if data else None


def decoded_password(encrypted: str) -> str:
    """The clear text a controller with the right ``password.encoder.secret`` decodes (a stand-in: the simulator's
    ciphertext is random)."""
    return "decoded-" + hashlib.sha256(encrypted.encode()).hexdigest()[:16]


@dataclass
class MigrationLog:
    """A written migration: the directory, the offsets that matter and where the planted divergences are."""

    root: Path
    release: str
    load_end_offset: int
    migration_offset: int
    epoch: int
    controller_id: int
    planted: list[Planted] = field(default_factory=list)

    def migration_znode(self, metadata_epoch: int | None = None) -> bytes:
        """``/migration`` as ``MigrationZNode.encode`` writes it after the dual writes ZooKeeper reflects
        (``metadata_epoch``: another kraft_metadata_epoch than the batch's, as a log that is not this one gives)."""
        return json.dumps({"version": 0, "kraft_controller_id": self.controller_id,
                           "kraft_controller_epoch": self.epoch, "kraft_metadata_offset": self.migration_offset,
                           "kraft_metadata_epoch": self.epoch if metadata_epoch is None else metadata_epoch}).encode()


@dataclass
class _Writer:
    release: tuple[int, int, int]
    plants: set[str]
    rng: random.Random
    secret: str | None = None
    batches: list[tuple[list[Record], bool, int]] = field(default_factory=list)
    offset: int = 0
    planted: list[Planted] = field(default_factory=list)

    def add(self, records: list[Record], control: bool = False, gap_ms: int = 500) -> int:
        """Append one write (at most 10 000 records a batch, as MAX_RECORDS_PER_BATCH); its last offset."""
        for start in range(0, len(records), 10_000):
            chunk = records[start:start + 10_000]
            self.batches.append((chunk, control, gap_ms))
            self.offset += len(chunk)
        return self.offset - 1

    def inherent(self, check_id: str, path: str) -> None:
        """A divergence the release itself writes (a bug of that release, real in effect): found like a plant."""
        if not any(p.check_id == check_id and p.path == path for p in self.planted):
            self.planted.append(Planted(check_id, path=path))

    def plant(self, name: str, **where: Any) -> bool:
        """Whether to plant ``name`` here (once), noting where."""
        if name not in self.plants:
            return False
        self.plants.discard(name)
        self.planted.append(Planted(_CHECK.get(name, f"migration_diverged_{name}"), **where))
        return True


_CHECK = {"producer_ids_behind": "migration_diverged_producer_ids",
          "quota_name_mangled": "migration_diverged_quota_name", "topic_left_out": "migration_diverged_topic",
          "partition_replicas": "migration_diverged_partition",
          "partition_leader_epoch": "migration_diverged_partition",
          "acl_missing": "migration_diverged_acl", "config_missing": "migration_diverged_config",
          "dual_write_stopped": "migration_dual_write_lagging"}


def write_migration_log(tree: ZkTree, root: Path, release: str = "3.9", *, plants: Sequence[str] = (),
                        seed: int = 0, epoch: int = 5, controller_id: int = 3000,
                        password_secret: str | None = None, compacted: Compaction | None = None) -> MigrationLog:
    """Write at ``root`` the metadata directory of the migration of ``tree`` (raw znodes, not fingerprinted) by
    Kafka ``release``, with ``plants`` (from ``PLANTS``) planted; see the module docstring. With
    ``password_secret`` (the controllers' ``password.encoder.secret``) encoded passwords are decoded as Kafka's
    controller decodes them; without it they get a stand-in clear text (``decoded_password``). ``compacted``: the
    directory as a controller leaves it after snapshots, its log deleted before an offset (``Compaction``)."""
    unknown = set(plants) - set(PLANTS)
    if unknown:
        raise KeyError(f"no migration plant {sorted(unknown)}; known: {', '.join(PLANTS)}")
    parsed = parse_release(release)
    w = _Writer(parsed, set(plants), random.Random(seed), password_secret)
    mv = METADATA_VERSIONS[parsed[:2]]
    w.add([(LEADER_CHANGE, 0, {"Version": 0, "LeaderId": controller_id, "Voters": [{"VoterId": controller_id}],
                               "GrantingVoters": [{"VoterId": controller_id}]})], control=True)
    feature: Record = (FEATURE_LEVEL, 0, {"Name": "metadata.version", "FeatureLevel": mv})
    if parsed >= (3, 6, 0):
        w.add([(BEGIN, 0, {"Name": "Bootstrap records"}), feature, (MIGRATION_STATE, 0, {"ZkMigrationState": 2}),
               (END, 0, {})])
    elif parsed >= (3, 5, 0):
        w.add([feature, (MIGRATION_STATE, 0, {"ZkMigrationState": PRE_MIGRATION})])
    else:
        w.add([feature])
    _register_brokers(w, tree, mv)
    if parsed >= (3, 6, 0):
        w.add([(BEGIN, 0, {"Name": "ZK Migration"})])
    elif parsed < (3, 5, 0):
        w.add([(MIGRATION_STATE, 0, {"ZkMigrationState": PRE_MIGRATION_3_4})])
    load_end = _load_all(w, tree)
    if parsed >= (3, 6, 0):
        load_end = w.add([(MIGRATION_STATE, 0, {"ZkMigrationState": MIGRATION}), (END, 0, {})])
    elif parsed >= (3, 5, 0):
        load_end = w.add([(MIGRATION_STATE, 0, {"ZkMigrationState": MIGRATION})])
    reached = w.add([(NO_OP, 0, {})])
    for _ in range(3):
        reached = w.add([(NO_OP, 0, {})])
    if w.plant("dual_write_stopped", path="/migration"):
        _dual_writes_after(w, tree)
    else:
        reached = w.offset - 1
    _write_dir(root, w, epoch, controller_id, mv, compacted)
    if w.plants:
        raise ValueError(f"the tree has nothing to plant {sorted(w.plants)} on")
    return MigrationLog(root, release, load_end, reached, epoch, controller_id, w.planted)


def _register_brokers(w: _Writer, tree: ZkTree, mv: int) -> None:
    ids = {int(name) for name in children(tree, "/brokers/ids")}
    for topic in children(tree, "/brokers/topics"):
        for replicas in ((_load(data_of(tree, f"/brokers/topics/{topic}")) or {}).get("partitions") or {}).values():
            ids.update(int(r) for r in replicas)
    for broker in sorted(ids):
        record: dict[str, Any] = {
            "BrokerId": broker, "IsMigratingZkBroker": True, "IncarnationId": uuid("incarnation", broker),
            "BrokerEpoch": w.offset, "Rack": None,
            "EndPoints": [{"Name": "PLAINTEXT", "Host": f"broker-{broker}", "Port": 9092, "SecurityProtocol": 0}],
            "Features": [{"Name": "metadata.version", "MinSupportedVersion": mv, "MaxSupportedVersion": mv}]}
        w.add([(REGISTER_BROKER, 3 if mv >= 17 else 2, record)])
        w.add([(BROKER_CHANGE, 0, {"BrokerId": broker, "BrokerEpoch": record["BrokerEpoch"], "Fenced": -1})])


def _load_all(w: _Writer, tree: ZkTree) -> int:
    """ZkMigrationClient.readAllMetadata: topics, broker configs, quotas and SCRAM, producer ids, ACLs, tokens."""
    last = w.offset - 1
    skipped = set(children(tree, "/admin/delete_topics")) if skips_pending_deletions(w.release) else set()
    topics = [name for name in children(tree, "/brokers/topics") if name not in skipped]
    w.rng.shuffle(topics)  # hash-set order
    for topic in topics:
        records = _topic_records(w, tree, topic)
        if records:
            last = w.add(records)
    broker_lists = [_config_records(w, tree, BROKER_TYPE, name) for name in children(tree, "/config/brokers")]
    for records in ([sum(broker_lists, [])] if w.release < (3, 5, 0) else broker_lists):
        if records:
            last = w.add(records)
    for records in _quota_and_scram_lists(w, tree):
        last = w.add(records)
    block = _load(data_of(tree, "/latest_producer_id_block")) if "/latest_producer_id_block" in tree else None
    if block:
        fixed = w.release >= (3, 6, 1) or (3, 5, 2) <= w.release < (3, 6, 0)
        next_id = int(block["block_end"]) + 1 if fixed else int(block["block_start"])
        if w.plant("producer_ids_behind", path="/latest_producer_id_block"):
            next_id = int(block["block_start"])
        elif not fixed:
            w.inherent("migration_diverged_producer_ids", "/latest_producer_id_block")  # KAFKA-15552
        last = w.add([(PRODUCER_IDS, 0, {"BrokerId": int(block["broker"]), "BrokerEpoch": -1,
                                         "NextProducerId": next_id})])
    if migrates_acls_and_scram(w.release):
        acls = _acl_records(w, tree)
        for start in range(0, len(acls), 100):
            last = w.add(acls[start:start + 100])
    if migrates_tokens(w.release):
        tokens = [_token_record(tree, token) for token in children(tree, "/delegation_token/tokens")]
        if tokens:
            last = w.add(tokens)
    return last


def _topic_records(w: _Writer, tree: ZkTree, topic: str) -> list[Record]:
    path = f"/brokers/topics/{topic}"
    document = _load(data_of(tree, path)) or {}
    if w.plant("topic_left_out", topic=topic, path=path):
        return []
    topic_id = document.get("topic_id") or uuid("topic", topic)
    adding, removing = document.get("adding_replicas") or {}, document.get("removing_replicas") or {}
    partitions: list[Record] = []
    for partition, replicas in (document.get("partitions") or {}).items():
        state_path = f"{path}/partitions/{partition}/state"
        node = tree.get(state_path)
        state = _load(node.data) if node is not None else None
        state = state or {"isr": replicas, "leader": replicas[0], "leader_epoch": 0}
        fields: dict[str, Any] = {
            "PartitionId": int(partition), "TopicId": topic_id, "Replicas": list(replicas), "Isr": state["isr"],
            "RemovingReplicas": removing.get(partition) or [], "AddingReplicas": adding.get(partition) or [],
            "Leader": state["leader"], "LeaderEpoch": state["leader_epoch"],
            "PartitionEpoch": node.version if node is not None else 0}
        if state.get("leader_recovery_state"):
            fields["LeaderRecoveryState"] = state["leader_recovery_state"]
        if len(replicas) > 1 and w.plant("partition_replicas", topic=topic, partition=int(partition),
                                         path=state_path):
            fields["Replicas"] = list(reversed(replicas))
        elif w.plant("partition_leader_epoch", topic=topic, partition=int(partition), path=state_path):
            fields["LeaderEpoch"] += 1
        partitions.append((PARTITION, 0, fields))
    configs = _config_records(w, tree, TOPIC_TYPE, topic)
    head: list[Record] = [(TOPIC, 0, {"Name": topic, "TopicId": topic_id})]
    return head + (partitions + configs if w.release < (3, 5, 0) else configs + partitions)


def _config_records(w: _Writer, tree: ZkTree, resource_type: int, zk_name: str) -> list[Record]:
    kind = "topics" if resource_type == TOPIC_TYPE else "brokers"
    path = f"/config/{kind}/{zk_name}"
    config = (_load(data_of(tree, path)) or {}).get("config") or {} if path in tree else {}
    name = "" if zk_name == "<default>" else zk_name
    records: list[Record] = []
    for key, value in config.items():
        if isinstance(value, str) and value.startswith("keyFactoryAlgorithm:") and w.release >= (3, 5, 0):
            if not w.plant("password_encoded", broker_id=int(name) if name.isdigit() else None, path=path):
                # ZkConfigMigrationClient: passwordEncoder.decode
                value = decode_password(value, w.secret) if w.secret else decoded_password(value)
        if resource_type == TOPIC_TYPE and w.plant("config_missing", topic=zk_name, path=path):
            continue
        records.append((CONFIG, 0, {"ResourceType": resource_type, "ResourceName": name, "Name": key,
                                    "Value": value}))
    return records


def _quota_name(w: _Writer, zk_name: str, path: str) -> str | None:
    fixed = w.release >= (3, 7, 1) or (3, 6, 2) <= w.release < (3, 7, 0)
    if w.release < (3, 5, 0):
        return zk_name
    if fixed and not (zk_name != desanitize(zk_name) and w.plant("quota_name_mangled", path=path)):
        return None if zk_name == "<default>" else desanitize(zk_name)
    return "" if zk_name == "<default>" else zk_name


def _quota_and_scram_lists(w: _Writer, tree: ZkTree) -> list[list[Record]]:
    lists: list[list[Record]] = []
    entities: list[tuple[str, list[tuple[str, str]]]] = []
    for zk_type in QUOTA_TYPES:
        entities += [(f"/config/{zk_type}/{name}", [(zk_type, name)]) for name in children(tree, f"/config/{zk_type}")]
    for user in children(tree, "/config/users"):
        entities += [(f"/config/users/{user}/clients/{client}", [("users", user), ("clients", client)])
                     for client in children(tree, f"/config/users/{user}/clients")]
    for path, entity in entities:
        config = (_load(data_of(tree, path)) or {}).get("config") or {}
        parts = [{"EntityType": zk_type if w.release < (3, 5, 0) else QUOTA_TYPES[zk_type],
                  "EntityName": _quota_name(w, name, path)} for zk_type, name in entity]
        quotas = [(QUOTA, 0, {"Entity": parts, "Key": key, "Value": float(value), "Remove": False})
                  for key, value in config.items() if not key.startswith("SCRAM-")]
        if quotas:
            lists.append(quotas)
            if any(part["EntityType"] not in QUOTA_TYPES.values() or part["EntityName"] in ("", "<default>") or
                   (part["EntityName"] is not None and part["EntityName"] != desanitize(part["EntityName"]))
                   for part in parts) and not any(p.path == path for p in w.planted):
                w.inherent("migration_diverged_quota_name", path)  # KAFKA-16222/16411, 3.4's entity types
        if migrates_acls_and_scram(w.release) and len(entity) == 1 and entity[0][0] == "users":
            lists += [[_scram_record(w, entity[0][1], key, value)] for key, value in config.items()
                      if key in MECHANISM_CODES]
    return lists


def _scram_record(w: _Writer, user: str, mechanism: str, credential: str) -> Record:
    fields = dict(part.split("=", 1) for part in credential.split(","))
    fixed = w.release >= (3, 7, 1) or (3, 6, 2) <= w.release < (3, 7, 0)
    if not fixed and user != desanitize(user):
        w.inherent("migration_diverged_quota_name", f"/config/users/{user}")  # KAFKA-16411: SCRAM names
    return (SCRAM, 0, {"Name": desanitize(user) if fixed else user, "Mechanism": MECHANISM_CODES[mechanism],
                       "Salt": base64.b64decode(fields["salt"]), "StoredKey": base64.b64decode(fields["stored_key"]),
                       "ServerKey": base64.b64decode(fields["server_key"]), "Iterations": int(fields["iterations"])})


def _acl_records(w: _Writer, tree: ZkTree) -> list[Record]:
    records: list[Record] = []
    for prefix, pattern in ACL_PATTERNS.items():
        for resource_type in children(tree, prefix.rstrip("/")):
            if resource_type not in RESOURCE_TYPES.values():
                continue
            for name in children(tree, f"{prefix}{resource_type}"):
                path = f"{prefix}{resource_type}/{name}"
                for ace in (_load(data_of(tree, path)) or {}).get("acls") or []:
                    if w.plant("acl_missing", path=path):
                        continue
                    records.append((ACL, 0, {
                        "Id": uuid("acl", w.rng.random()), "ResourceType": _code(RESOURCE_TYPES, resource_type),
                        "ResourceName": name, "PatternType": 3 if pattern == "literal" else 4,
                        "Principal": ace["principal"], "Host": ace["host"],
                        "Operation": _code(OPERATIONS, ace["operation"]),
                        "PermissionType": _code(PERMISSIONS, ace["permissionType"])}))
    return records


def _token_record(tree: ZkTree, token: str) -> Record:
    data = _load(data_of(tree, f"/delegation_token/tokens/{token}")) or {}
    return (TOKEN, 0, {"Owner": data.get("owner"), "Requester": data.get("tokenRequester") or data.get("owner"),
                       "Renewers": data.get("renewers") or [], "IssueTimestamp": data.get("issueTimestamp"),
                       "MaxTimestamp": data.get("maxTimestamp"), "ExpirationTimestamp": data.get("expiryTimestamp"),
                       "TokenId": token})


def _dual_writes_after(w: _Writer, tree: ZkTree) -> None:
    """KRaft goes on after the offset ZooKeeper reflects: a new topic and 10 minutes of NoOps that never reach it."""
    topic_id = uuid("topic", "created-after-dual-writes-stopped")
    broker = min([int(name) for name in children(tree, "/brokers/ids")], default=1)
    w.add([(TOPIC, 0, {"Name": "created-after-dual-writes-stopped", "TopicId": topic_id}),
           (PARTITION, 0, {"PartitionId": 0, "TopicId": topic_id, "Replicas": [broker], "Isr": [broker],
                           "RemovingReplicas": [], "AddingReplicas": [], "Leader": broker, "LeaderEpoch": 0,
                           "PartitionEpoch": 0})])
    for _ in range(20):
        w.add([(NO_OP, 0, {})], gap_ms=30_000)


@dataclass(frozen=True)
class Compaction:
    """A log compacted as KafkaMetadataLog leaves it: a ``.checkpoint`` of the state before each of
    ``checkpoints`` (end offsets), and the segments before ``log_start`` deleted (the first batch starting at or
    after it is the log's first)."""

    checkpoints: tuple[int, ...]
    log_start: int


def _write_checkpoints(partition: Path, w: _Writer, epoch: int, ends: Sequence[int]) -> None:
    """Each checkpoint holds the records (not the control records nor transaction markers) before its end."""
    for end in ends:
        records, offset, time = [], 0, T0
        for batch, control, gap_ms in w.batches:
            time += gap_ms
            for record in batch:
                if offset < end and not control and record[0] not in (BEGIN, END):
                    records.append(record)
                offset += 1
            if offset >= end:
                break
        write_checkpoint(partition, records, end, epoch, timestamp=time)


def _write_dir(root: Path, w: _Writer, epoch: int, controller_id: int, mv: int,
               compacted: Compaction | None = None) -> None:
    partition = root / "__cluster_metadata-0"
    partition.mkdir(parents=True, exist_ok=True)
    encoded, offset, time = [], 0, T0
    log_start = compacted.log_start if compacted else 0
    first = None
    for records, control, gap_ms in w.batches:
        time += gap_ms
        if offset >= log_start:
            first = offset if first is None else first
            encoded.append(build_batch(records, offset, epoch, time, control=control))
        offset += len(records)
    write_segment(partition, encoded, base_offset=first)
    if compacted:
        _write_checkpoints(partition, w, epoch, compacted.checkpoints)
    (root / "meta.properties").write_text(f"node.id={controller_id}\ndirectory.id={uuid('dir', 'controller')}\n"
                                          "version=1\ncluster.id=mIgRaTeDcLuStEr000001\n")
    (partition / "quorum-state").write_text(json.dumps(
        {"clusterId": "", "leaderId": controller_id, "leaderEpoch": epoch, "votedId": -1, "appliedOffset": 0,
         "currentVoters": [{"voterId": controller_id}], "data_version": 0}))
    write_checkpoint(root / "bootstrap.checkpoint",
                     [(FEATURE_LEVEL, 0, {"Name": "metadata.version", "FeatureLevel": mv})], 0, 0)


def tree_from_kazoo(client: Any) -> dict[str, ZkNode]:
    """Every znode under the client's chroot as the test wrote it (getData and getChildren only): what the encoder
    migrates."""
    tree: dict[str, ZkNode] = {}
    pending = ["/"]
    while pending:
        path = pending.pop()
        try:
            data, stat = client.get(path)
            names = client.get_children(path)
        except Exception as error:  # a znode that vanished while the tree is read
            if type(error).__name__ == "NoNodeError":
                continue
            raise
        tree[path] = ZkNode(data, stat.version, stat.mzxid, stat.mtime)
        pending.extend(f"{path.rstrip('/')}/{name}" for name in names)
    return tree
