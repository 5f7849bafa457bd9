"""KRaft metadata directories for tests and benchmarks, written record by record as a KRaft controller writes them.

``KraftCluster`` appends the records a healthy cluster's log holds (a LeaderChange, the finalized metadata.version,
controller and broker registrations with their unfencing, topics, partitions and configs, then NoOps) at the record
versions Kafka writes at that metadata.version, in batches 500 ms apart, and writes them with the codec's encoder
(``snapshot.kraft.batches.build_batch``, checked byte for byte against real logs) as ``__cluster_metadata-0/``
segments, with ``meta.properties``, ``quorum-state`` and ``bootstrap.checkpoint`` beside them.

``plant(name)`` adds one problem on a topic or broker of its own and says where (``Planted``, with the checks it
implies): the planted problems are what Kafka's controller never writes, so a healthy log gives no finding at all.
``corrupt`` and ``truncate`` damage the written files as a bad disk or a copy taken mid-write would.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_zk_audit.snapshot.kraft.batches import build_batch, iter_batches
from kafka_zk_audit.snapshot.kraft.schema import uuid_to_str
from kafka_zk_audit.snapshot.kraft.segments import write_checkpoint, write_segment
from kafka_zk_audit_testing.simulator.registry import Planted

T0 = 1_790_000_000_000  # 2026-09-21T14:13:20Z: the first batch's time
BATCH_GAP_MS = 500  # KRaft's NoOp interval (metadata.max.idle.interval.ms)
DAY_MS = 86_400_000
RECORDS_AT = 61  # a v2 batch's records start after its 61-byte header
LEADER_CHANGE, FEATURE_LEVEL, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE = 2, 12, 2, 3, 4, 5
REGISTER_BROKER, BROKER_CHANGE, REGISTER_CONTROLLER, NO_OP = 0, 17, 27, 20
PLANTS = ("leader_not_in_isr", "leader_fenced", "log_epoch_regressed", "elr_invalid", "partition_reassignment_stuck",
          "record_undecodable", "directory_unregistered", "metadata_version_unsupported")
DAMAGES = ("log_corrupt", "log_truncated")


def uuid(*parts: object) -> str:
    """A stable uuid (Kafka's base64url text) for a name: topic ids, incarnations, log directories."""
    return uuid_to_str(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:16])


@dataclass(frozen=True)
class KraftClusterSpec:
    """The shape of a generated KRaft cluster: combined-mode-free (controllers apart from brokers)."""

    brokers: int = 4
    topics: int = 3
    partitions: int = 2
    replication_factor: int = 3
    metadata_version: int = 21  # 3.9-IV0; 27 = 4.1-IV1 (ELR written)
    controller_id: int = 3000
    epoch: int = 5
    noops: int = 10
    cluster_id: str = "kRaFtAuDiTcLuStEr0001"


@dataclass
class Batch:
    records: list[tuple[int, int, dict[str, Any]] | bytes]
    control: bool = False
    gap_ms: int = BATCH_GAP_MS


@dataclass
class KraftCluster:
    """A KRaft cluster's metadata log under construction (see the module docstring)."""

    spec: KraftClusterSpec = field(default_factory=KraftClusterSpec)
    batches: list[Batch] = field(default_factory=list)
    leaders: dict[tuple[str, int], tuple[list[int], int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        spec = self.spec
        self.add([(LEADER_CHANGE, 0, {"Version": 0, "LeaderId": spec.controller_id,
                                      "Voters": [{"VoterId": spec.controller_id}],
                                      "GrantingVoters": [{"VoterId": spec.controller_id}]})], control=True)
        self.add([(FEATURE_LEVEL, 0, {"Name": "metadata.version", "FeatureLevel": spec.metadata_version})])
        self.add([(REGISTER_CONTROLLER, 0, {
            "ControllerId": spec.controller_id, "IncarnationId": uuid("controller", spec.controller_id),
            "ZkMigrationReady": False,
            "EndPoints": [{"Name": "CONTROLLER", "Host": "127.0.0.1", "Port": 9093, "SecurityProtocol": 0}],
            "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1,
                          "MaxSupportedVersion": spec.metadata_version}]})])
        for broker in range(1, spec.brokers + 1):
            self.register_broker(broker)
        for index in range(spec.topics):
            self.create_topic(f"topic-{index}", spec.partitions)
        self.noops(spec.noops)

    # -- what a controller writes ------------------------------------------------------------------------------
    def add(self, records: list[tuple[int, int, dict[str, Any]] | bytes], control: bool = False,
            gap_ms: int = BATCH_GAP_MS) -> None:
        self.batches.append(Batch(records, control, gap_ms))

    @property
    def partition_version(self) -> int:
        mv = self.spec.metadata_version
        return 2 if mv >= 23 else 1 if mv >= 17 else 0

    def register_broker(self, broker: int, max_metadata_version: int | None = None) -> None:
        mv = self.spec.metadata_version
        self.add([(REGISTER_BROKER, 3 if mv >= 17 else 2, {
            "BrokerId": broker, "IncarnationId": uuid("broker", broker), "BrokerEpoch": len(self.batches) + 10,
            "EndPoints": [{"Name": "PLAINTEXT", "Host": f"broker-{broker}", "Port": 9092, "SecurityProtocol": 0}],
            "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1,
                          "MaxSupportedVersion": max_metadata_version or mv}],
            "Rack": None, "Fenced": True, "InControlledShutdown": False, "LogDirs": [uuid("dir", broker)]})])
        self.set_fenced(broker, False)

    def set_fenced(self, broker: int, fenced: bool) -> None:
        self.add([(BROKER_CHANGE, 0, {"BrokerId": broker, "BrokerEpoch": 0, "Fenced": 1 if fenced else -1})])

    def create_topic(self, name: str, partitions: int, replicas: list[int] | None = None) -> None:
        brokers = self.spec.brokers
        topic_id = uuid("topic", name)
        records: list[tuple[int, int, dict[str, Any]] | bytes] = [(TOPIC, 0, {"Name": name, "TopicId": topic_id})]
        for p in range(partitions):
            chosen = replicas or [(p + i) % brokers + 1 for i in range(self.spec.replication_factor)]
            records.append((PARTITION, self.partition_version, {
                "PartitionId": p, "TopicId": uuid("topic", name), "Replicas": chosen, "Isr": chosen,
                "Leader": chosen[0], "LeaderEpoch": 0, "PartitionEpoch": 0,
                "Directories": [uuid("dir", b) for b in chosen]}))
            self.leaders[(name, p)] = (chosen, chosen[0], 0)
        records.append((CONFIG, 0, {"ResourceType": 2, "ResourceName": name, "Name": "retention.ms",
                                    "Value": "604800000"}))
        self.add(records)

    def change(self, topic: str, partition: int, gap_ms: int = BATCH_GAP_MS, **fields: Any) -> None:
        record = {"PartitionId": partition, "TopicId": uuid("topic", topic), **fields}
        self.add([(PARTITION_CHANGE, self.partition_version, record)], gap_ms=gap_ms)

    def noops(self, count: int, gap_ms: int = BATCH_GAP_MS) -> None:
        for _ in range(count):
            self.add([(NO_OP, 0, {})], gap_ms=gap_ms)

    # -- problems ----------------------------------------------------------------------------------------------
    def plant(self, name: str) -> Planted:
        """Add one problem (one of ``PLANTS``) on a topic or broker of its own; where it is."""
        topic = f"planted-{name.replace('_', '-')}"
        if name == "metadata_version_unsupported":
            broker = self.spec.brokers + 1
            self.register_broker(broker, max_metadata_version=self.spec.metadata_version - 1)
            return Planted(name, broker_id=broker, path=f"/kraft/brokers/{broker}")
        if name == "record_undecodable":
            # a PartitionRecord at a version no released Kafka writes: frame 1, apiKey 3, version 9, a tagless body
            self.add([bytes([1, PARTITION, 9, 0])])  # type: ignore[list-item]
            return Planted(name, path="/kraft/anomalies/")
        self.create_topic(topic, 1, [1, 2, 3])
        state = f"/brokers/topics/{topic}/partitions/0/state"
        if name == "leader_not_in_isr":
            self.change(topic, 0, Isr=[2, 3])  # the leader, 1, left out of the ISR: Kafka never writes that
            return Planted(name, topic, 0, path=state, implied=("under_replicated",))
        if name == "leader_fenced":
            self.create_topic(f"{topic}-led", 1, [4, 1, 2])
            self.set_fenced(4, True)  # fenced while it leads, with no leader change: Kafka moves leadership first
            return Planted(name, f"{topic}-led", 0, path=f"/brokers/topics/{topic}-led/partitions/0/state")
        if name == "log_epoch_regressed":
            self.change(topic, 0, Leader=2)
            self.change(topic, 0, Leader=1)
            self.add([(PARTITION, self.partition_version, {
                "PartitionId": 0, "TopicId": uuid("topic", topic), "Replicas": [1, 2, 3], "Isr": [1, 2, 3],
                "Leader": 1, "LeaderEpoch": 0, "PartitionEpoch": 0,
                "Directories": [uuid("dir", b) for b in (1, 2, 3)]})])
            return Planted(name, topic, 0, path="/kraft/anomalies/")
        if name == "elr_invalid":
            self.change(topic, 0, EligibleLeaderReplicas=[3], LastKnownElr=[])  # 3 is still in the ISR
            return Planted(name, topic, 0, path=f"/kraft/partitions/{topic}/0")
        if name == "partition_reassignment_stuck":
            self.change(topic, 0, Replicas=[1, 2, 3, 4], AddingReplicas=[4])
            self.noops(1, gap_ms=2 * DAY_MS)  # two days pass and replica 4 never joins the ISR
            return Planted(name, topic, 0, path=f"/kraft/partitions/{topic}/0")
        if name == "directory_unregistered":
            self.change(topic, 0, Directories=[uuid("dir", 1), uuid("gone", 2), uuid("dir", 3)])
            return Planted(name, topic, 0, broker_id=2, path=f"/kraft/partitions/{topic}/0")
        raise KeyError(f"no KRaft plant {name!r}; known: {', '.join(PLANTS)}")

    # -- files -------------------------------------------------------------------------------------------------
    def encoded(self) -> list[bytes]:
        """Every batch as bytes, at consecutive offsets and times."""
        out, offset, time = [], 0, T0
        for batch in self.batches:
            time += batch.gap_ms
            out.append(build_batch(batch.records, offset, self.spec.epoch, time, control=batch.control))
            offset += len(batch.records)
        return out

    def write(self, root: Path, segments: int = 2) -> Path:
        """The ``metadata.log.dir`` at ``root``: ``__cluster_metadata-0/`` (the log in ``segments`` files),
        ``meta.properties``, ``quorum-state``, ``bootstrap.checkpoint``; returns ``root``."""
        spec = self.spec
        partition = root / "__cluster_metadata-0"
        partition.mkdir(parents=True, exist_ok=True)
        batches = self.encoded()
        cut = max(1, len(batches) // segments)
        for start in range(0, len(batches), cut):
            write_segment(partition, batches[start:start + cut])
        (root / "meta.properties").write_text(
            f"node.id={spec.controller_id}\ndirectory.id={uuid('dir', 'controller')}\nversion=1\n"
            f"cluster.id={spec.cluster_id}\n")
        (partition / "quorum-state").write_text(json.dumps(
            {"clusterId": "", "leaderId": spec.controller_id, "leaderEpoch": spec.epoch, "votedId": -1,
             "appliedOffset": 0, "currentVoters": [{"voterId": spec.controller_id}], "data_version": 0}))
        write_checkpoint(root / "bootstrap.checkpoint",
                         [(FEATURE_LEVEL, 0, {"Name": "metadata.version", "FeatureLevel": spec.metadata_version})],
                         0, 0)
        return root


def corrupt(root: Path) -> Planted:
    """Flip a byte inside the records of the middle batch of the first segment (its CRC no longer matches)."""
    segment = sorted((root / "__cluster_metadata-0").glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    positions = [batch.position for batch in iter_batches(bytes(data), str(segment), decode=False)]
    data[positions[len(positions) // 2] + RECORDS_AT] ^= 0xFF
    segment.write_bytes(bytes(data))
    return Planted("log_corrupt", path="/kraft/anomalies/")


def truncate(root: Path, drop: int = 7) -> Planted:
    """Cut the last segment ``drop`` bytes short, inside its last batch (a copy taken while the controller wrote)."""
    segment = sorted((root / "__cluster_metadata-0").glob("*.log"))[-1]
    data = segment.read_bytes()
    segment.write_bytes(data[:-drop])
    return Planted("log_truncated", path="/kraft/anomalies/")


def planted_cluster(root: Path, spec: KraftClusterSpec | None = None) -> list[Planted]:
    """A KRaft cluster with every plant of ``PLANTS`` and a torn last batch, written at ``root``."""
    cluster = KraftCluster(spec or KraftClusterSpec(metadata_version=27))
    planted = [cluster.plant(name) for name in PLANTS]
    cluster.noops(3)
    cluster.write(root)
    planted.append(truncate(root))
    return planted

