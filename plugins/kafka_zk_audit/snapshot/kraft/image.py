"""Replay decoded metadata records into the state Kafka's metadata image holds.

Each record is applied as Kafka's ``MetadataDelta.replay`` applies it (apache/kafka metadata/src/main/java/org/
apache/kafka/image/*Delta.java, metadata/PartitionRegistration.java ``merge``): a PartitionChangeRecord bumps the
partition epoch always and the leader epoch when it names a leader; absent tagged fields mean "unchanged";
RemoveTopicRecord drops the topic, its partitions and its configs; ConfigRecord with a null value deletes the key.
Records between BeginTransaction and EndTransaction are applied together at the end marker, dropped at an
AbortTransaction, and not applied at all while the transaction is still open at the end of the replay.

Every entity remembers the offset and batch time of the record that created it and of the last one that changed
it: the evidence a finding points at. What Kafka would refuse to replay (a change to a partition that does not
exist) and epochs that go back are kept as ``anomalies``, never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# BrokerRegistrationFencingChange (metadata/BrokerRegistrationFencingChange.java): 1 fence, -1 unfence, 0 none.
FENCE, UNFENCE = 1, -1
# BrokerRegistrationInControlledShutdownChange: 1 = in controlled shutdown, 0 = none.
IN_CONTROLLED_SHUTDOWN = 1
NO_LEADER_CHANGE = -2
# ConfigResource.Type ids (clients/.../config/ConfigResource.java).
CONFIG_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}
# PartitionChangeRecord's replica lists and the Partition attribute each replaces when present.
CHANGED_LISTS = (("Replicas", "replicas"), ("Isr", "isr"), ("RemovingReplicas", "removing"),
                 ("AddingReplicas", "adding"), ("EligibleLeaderReplicas", "elr"), ("LastKnownElr", "last_known_elr"))
TRANSACTION_MARKERS = ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")


@dataclass
class Origin:
    """Where an entity was created and last changed: log offsets and batch times (ms)."""

    created_offset: int
    created_time: int
    changed_offset: int
    changed_time: int

    def touch(self, offset: int, time: int) -> None:
        self.changed_offset, self.changed_time = offset, time


@dataclass
class Topic:
    name: str
    topic_id: str
    origin: Origin


@dataclass
class Partition:
    topic_id: str
    partition: int
    replicas: list[int]
    isr: list[int]
    removing: list[int]
    adding: list[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: list[str]
    elr: list[int] | None
    last_known_elr: list[int] | None
    origin: Origin
    reassigning_since: tuple[int, int] | None = None  # (offset, time) of the record that started the reassignment

    def follow_reassignment(self, offset: int, time: int) -> None:
        """Note when adding/removing replicas appeared (a reassignment began) and forget it once they are gone."""
        if not (self.adding or self.removing):
            self.reassigning_since = None
        elif self.reassigning_since is None:
            self.reassigning_since = (offset, time)


@dataclass
class Broker:
    broker_id: int
    epoch: int
    incarnation_id: str
    endpoints: list[dict[str, Any]]
    features: list[dict[str, Any]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    migrating_zk_broker: bool
    log_dirs: list[str]
    origin: Origin


@dataclass
class Controller:
    controller_id: int
    incarnation_id: str
    endpoints: list[dict[str, Any]]
    features: list[dict[str, Any]]
    zk_migration_ready: bool
    origin: Origin


@dataclass
class Quorum:
    """The Raft quorum as the log shows it: the newest LeaderChange (leader, epoch, voters) and Voters record."""

    leader_id: int | None = None
    epoch: int | None = None
    voters: list[int] = field(default_factory=list)
    granting_voters: list[int] = field(default_factory=list)
    voters_record: list[dict[str, Any]] | None = None
    kraft_version: int | None = None
    offset: int | None = None
    time: int | None = None


@dataclass
class Anomaly:
    """A record Kafka would not replay as it stands, or a state that went back: kept for the audit."""

    kind: str
    offset: int
    time: int
    subject: str
    detail: str


@dataclass
class MetadataImage:
    """The cluster's metadata after the replayed records (keys as Kafka's image keys them)."""

    features: dict[str, tuple[int, Origin]] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)
    partitions: dict[tuple[str, int], Partition] = field(default_factory=dict)
    configs: dict[tuple[str, str], dict[str, tuple[str, Origin]]] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, Controller] = field(default_factory=dict)
    acls: dict[str, tuple[dict[str, Any], Origin]] = field(default_factory=dict)
    quotas: dict[tuple[tuple[str, str | None], ...], dict[str, tuple[float, Origin]]] = field(default_factory=dict)
    scram: dict[tuple[str, int], tuple[dict[str, Any], Origin]] = field(default_factory=dict)
    tokens: dict[str, tuple[dict[str, Any], Origin]] = field(default_factory=dict)
    producer_ids: tuple[dict[str, Any], Origin] | None = None
    migration_state: tuple[int, Origin] | None = None
    quorum: Quorum = field(default_factory=Quorum)
    anomalies: list[Anomaly] = field(default_factory=list)
    last_offset: int = -1
    last_time: int | None = None
    records_applied: int = 0

    def topic_by_name(self, name: str) -> Topic | None:
        for topic in self.topics.values():
            if topic.name == name:
                return topic
        return None


class ImageBuilder:
    """Applies records in offset order; ``image`` is the state after every complete transaction so far."""

    def __init__(self, image: MetadataImage | None = None,
                 observer: Callable[[Any, int, int], None] | None = None) -> None:
        self.image = image or MetadataImage()
        self.observer = observer  # called after each record is applied: (record, offset, time)
        self._pending: list[tuple[Any, int, int]] | None = None
        self.open_transaction: tuple[int, str] | None = None
        self.aborted_transactions = 0

    def add(self, record: Any, offset: int | None = None, time: int | None = None) -> None:
        """Apply one decoded record (``offset``/``time`` override the record's own, e.g. for a checkpoint)."""
        offset = record.offset if offset is None else offset
        time = record.timestamp if time is None else time
        image = self.image
        image.last_offset, image.last_time = max(image.last_offset, offset), time
        if record.control:
            self._control(record, offset, time)
            if self.observer is not None:
                self.observer(record, offset, time)
            return
        name = record.name
        if name in TRANSACTION_MARKERS:
            self._transaction(name, record.fields, offset)
            return
        if self._pending is not None:
            self._pending.append((record, offset, time))
            return
        self._apply(record, offset, time)

    def add_all(self, records: Iterable[Any]) -> None:
        for record in records:
            self.add(record)

    def skip(self, record: Any) -> None:
        """Keep a record the decoder could not read (an unknown apiKey or version) as an anomaly naming it."""
        what = f"apiKey {record.api_key} version {record.version}" if record.api_key is not None else "record"
        self.image.anomalies.append(Anomaly("undecodable_record", record.offset, record.timestamp,
                                            f"{record.file}@{record.offset}", f"{what}: {record.reason}"))

    def _transaction(self, name: str, fields: dict[str, Any], offset: int) -> None:
        if name == "BeginTransactionRecord":
            self._pending = []
            self.open_transaction = (offset, str(fields.get("Name") or ""))
            return
        pending, self._pending, self.open_transaction = self._pending or [], None, None
        if name == "EndTransactionRecord":
            for record, at, time in pending:
                self._apply(record, at, time)
        else:
            self.aborted_transactions += 1

    def _control(self, record: Any, offset: int, time: int) -> None:
        quorum, fields = self.image.quorum, record.fields
        if record.name == "LeaderChangeMessage":
            quorum.leader_id, quorum.epoch = fields.get("LeaderId"), record.epoch
            quorum.voters = [voter["VoterId"] for voter in fields.get("Voters") or []]
            quorum.granting_voters = [voter["VoterId"] for voter in fields.get("GrantingVoters") or []]
            quorum.offset, quorum.time = offset, time
        elif record.name == "VotersRecord":
            quorum.voters_record = list(fields.get("Voters") or [])
        elif record.name == "KRaftVersionRecord":
            quorum.kraft_version = fields.get("KRaftVersion")
        elif record.name == "SnapshotHeaderRecord" and quorum.epoch is None:
            quorum.epoch = record.epoch

    def _apply(self, record: Any, offset: int, time: int) -> None:
        handler = _HANDLERS.get(record.name)
        self.image.records_applied += 1
        if handler is not None:
            handler(self.image, record.fields, offset, time)
            if self.observer is not None:
                self.observer(record, offset, time)


def _origin(offset: int, time: int) -> Origin:
    return Origin(offset, time, offset, time)


def _ints(values: Any) -> list[int]:
    return [int(value) for value in values or ()]


def _feature(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    level = int(fields.get("FeatureLevel") or 0)
    if level == 0:
        image.features.pop(fields["Name"], None)
    else:
        image.features[fields["Name"]] = (level, _origin(offset, time))


def _topic(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.topics[fields["TopicId"]] = Topic(fields["Name"], fields["TopicId"], _origin(offset, time))


def _remove_topic(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    topic = image.topics.pop(fields["TopicId"], None)
    if topic is None:
        image.anomalies.append(Anomaly("unknown_topic_removed", offset, time, fields["TopicId"],
                                       "RemoveTopicRecord for a topic id the image does not hold"))
        return
    for key in [key for key in image.partitions if key[0] == topic.topic_id]:
        del image.partitions[key]
    image.configs.pop(("topic", topic.name), None)


def _partition(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    key = (fields["TopicId"], int(fields["PartitionId"]))
    replicas = _ints(fields.get("Replicas"))
    directories = list(fields.get("Directories") or [])
    partition = Partition(
        topic_id=key[0], partition=key[1], replicas=replicas, isr=_ints(fields.get("Isr")),
        removing=_ints(fields.get("RemovingReplicas")), adding=_ints(fields.get("AddingReplicas")),
        leader=int(fields.get("Leader", -1)), leader_recovery_state=int(fields.get("LeaderRecoveryState") or 0),
        leader_epoch=int(fields.get("LeaderEpoch", -1)), partition_epoch=int(fields.get("PartitionEpoch", -1)),
        directories=directories, elr=_optional_ints(fields.get("EligibleLeaderReplicas")),
        last_known_elr=_optional_ints(fields.get("LastKnownElr")), origin=_origin(offset, time))
    before = image.partitions.get(key)
    if before is not None:
        partition.origin.created_offset, partition.origin.created_time = (before.origin.created_offset,
                                                                          before.origin.created_time)
        _check_epochs(image, before, partition.leader_epoch, partition.partition_epoch, offset, time)
        partition.reassigning_since = before.reassigning_since
    partition.follow_reassignment(offset, time)
    image.partitions[key] = partition


def _optional_ints(values: Any) -> list[int] | None:
    return None if values is None else _ints(values)


def _check_epochs(image: MetadataImage, before: Partition, leader_epoch: int, partition_epoch: int, offset: int,
                  time: int) -> None:
    """Epochs that go back when a record replaces a partition's state (a change only ever bumps them): one anomaly
    naming both epochs."""
    went_back = []
    if leader_epoch < before.leader_epoch:
        went_back.append(f"leader epoch {before.leader_epoch} -> {leader_epoch}")
    if partition_epoch < before.partition_epoch:
        went_back.append(f"partition epoch {before.partition_epoch} -> {partition_epoch}")
    if went_back:
        image.anomalies.append(Anomaly("epoch_regressed", offset, time, f"{before.topic_id}:{before.partition}",
                                       ", ".join(went_back)))


def _partition_change(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    key = (fields["TopicId"], int(fields["PartitionId"]))
    partition = image.partitions.get(key)
    if partition is None:
        image.anomalies.append(Anomaly("unknown_partition_changed", offset, time, f"{key[0]}:{key[1]}",
                                       "PartitionChangeRecord for a partition the image does not hold"))
        return
    for name, attribute in CHANGED_LISTS:  # absent (null) means unchanged
        if fields.get(name) is not None:
            setattr(partition, attribute, _ints(fields[name]))
    if fields.get("Directories") is not None:
        partition.directories = list(fields["Directories"])
    recovery = int(fields.get("LeaderRecoveryState", -1))
    if recovery != -1:
        partition.leader_recovery_state = recovery
    leader = int(fields.get("Leader", NO_LEADER_CHANGE))
    if leader != NO_LEADER_CHANGE:
        partition.leader = leader
        partition.leader_epoch += 1
    partition.partition_epoch += 1
    partition.origin.touch(offset, time)
    partition.follow_reassignment(offset, time)


def _clear_elr(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    name = fields.get("TopicName") or ""
    topic = image.topic_by_name(name) if name else None
    for partition in image.partitions.values():
        if not name or (topic is not None and partition.topic_id == topic.topic_id):
            partition.elr, partition.last_known_elr = [], []
            partition.origin.touch(offset, time)


def _config(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    resource = (CONFIG_TYPES.get(int(fields["ResourceType"]), str(fields["ResourceType"])), fields["ResourceName"])
    values = image.configs.setdefault(resource, {})
    if fields.get("Value") is None:
        values.pop(fields["Name"], None)
        if not values:
            image.configs.pop(resource, None)
    else:
        values[fields["Name"]] = (fields["Value"], _origin(offset, time))


def _register_broker(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    broker_id = int(fields["BrokerId"])
    image.brokers[broker_id] = Broker(
        broker_id=broker_id, epoch=int(fields["BrokerEpoch"]), incarnation_id=fields["IncarnationId"],
        endpoints=list(fields.get("EndPoints") or []), features=list(fields.get("Features") or []),
        rack=fields.get("Rack"), fenced=bool(fields.get("Fenced", True)),
        in_controlled_shutdown=bool(fields.get("InControlledShutdown", False)),
        migrating_zk_broker=bool(fields.get("IsMigratingZkBroker", False)),
        log_dirs=list(fields.get("LogDirs") or []), origin=_origin(offset, time))


def _unregister_broker(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.brokers.pop(int(fields["BrokerId"]), None)


def _fencing(fenced: bool):  # noqa: ANN202 (a handler)
    def handler(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
        broker = image.brokers.get(int(fields["Id"]))
        if broker is not None:
            broker.fenced = fenced
            broker.origin.touch(offset, time)
    return handler


def _broker_change(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    broker = image.brokers.get(int(fields["BrokerId"]))
    if broker is None:
        image.anomalies.append(Anomaly("unknown_broker_changed", offset, time, str(fields["BrokerId"]),
                                       "BrokerRegistrationChangeRecord for a broker that is not registered"))
        return
    fenced = int(fields.get("Fenced") or 0)
    if fenced == FENCE:
        broker.fenced = True
    elif fenced == UNFENCE:
        broker.fenced = False
    shutdown = int(fields.get("InControlledShutdown") or 0)
    if shutdown == IN_CONTROLLED_SHUTDOWN:
        broker.in_controlled_shutdown = True
    if fields.get("LogDirs"):  # ClusterControlManager: an empty list (the default) changes nothing
        broker.log_dirs = list(fields["LogDirs"])
    broker.origin.touch(offset, time)


def _register_controller(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    controller_id = int(fields["ControllerId"])
    image.controllers[controller_id] = Controller(
        controller_id=controller_id, incarnation_id=fields["IncarnationId"],
        endpoints=list(fields.get("EndPoints") or []), features=list(fields.get("Features") or []),
        zk_migration_ready=bool(fields.get("ZkMigrationReady", False)), origin=_origin(offset, time))


def _acl(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.acls[fields["Id"]] = (dict(fields), _origin(offset, time))


def _remove_acl(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.acls.pop(fields["Id"], None)


def _quota(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    entity = tuple(sorted((part["EntityType"], part.get("EntityName")) for part in fields.get("Entity") or []))
    values = image.quotas.setdefault(entity, {})
    if fields.get("Remove"):
        values.pop(fields["Key"], None)
        if not values:
            image.quotas.pop(entity, None)
    else:
        values[fields["Key"]] = (float(fields["Value"]), _origin(offset, time))


def _scram(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.scram[(fields["Name"], int(fields["Mechanism"]))] = (dict(fields), _origin(offset, time))


def _remove_scram(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.scram.pop((fields["Name"], int(fields["Mechanism"])), None)


def _token(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.tokens[fields["TokenId"]] = (dict(fields), _origin(offset, time))


def _remove_token(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.tokens.pop(fields["TokenId"], None)


def _producer_ids(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.producer_ids = (dict(fields), _origin(offset, time))


def _migration_state(image: MetadataImage, fields: dict[str, Any], offset: int, time: int) -> None:
    image.migration_state = (int(fields["ZkMigrationState"]), _origin(offset, time))


_HANDLERS = {
    "FeatureLevelRecord": _feature,
    "TopicRecord": _topic,
    "RemoveTopicRecord": _remove_topic,
    "PartitionRecord": _partition,
    "PartitionChangeRecord": _partition_change,
    "ClearElrRecord": _clear_elr,
    "ConfigRecord": _config,
    "RegisterBrokerRecord": _register_broker,
    "UnregisterBrokerRecord": _unregister_broker,
    "FenceBrokerRecord": _fencing(True),
    "UnfenceBrokerRecord": _fencing(False),
    "BrokerRegistrationChangeRecord": _broker_change,
    "RegisterControllerRecord": _register_controller,
    "AccessControlEntryRecord": _acl,
    "RemoveAccessControlEntryRecord": _remove_acl,
    "ClientQuotaRecord": _quota,
    "UserScramCredentialRecord": _scram,
    "RemoveUserScramCredentialRecord": _remove_scram,
    "DelegationTokenRecord": _token,
    "RemoveDelegationTokenRecord": _remove_token,
    "ProducerIdsRecord": _producer_ids,
    "ZkMigrationStateRecord": _migration_state,
}
