"""The content of a healthy simulated cluster, drawn deterministically from a ``ClusterSpec``.

Healthy means no check of the catalogue fires on it: every leader is its partition's preferred
replica and in a full isr, every topic has its config, every old-consumer group owns its partitions
exactly as the range assignment says, and partition states carry controller epochs strictly below
/controller_epoch (written by earlier controllers), so a history plant can lower /controller_epoch
by one without touching any partition.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from kafka_zk_audit_testing.range_assignment import range_assign, thread_ids
from kafka_zk_audit_testing.simulator.encodings import BrokerInfo, Listener, PartitionState, uuid_base64
from kafka_zk_audit_testing.simulator.spec import ClusterSpec, Era

# Names from the seed articles first, then generated ones (no '.' so that no two collide in metrics).
SEED_TOPICS = ("report-log", "bl_mall_orders", "bl_mall_products", "open_platform_opt_push_plus1", "login", "topic2")
TOPIC_WORDS = (
    "orders", "payments", "clicks", "page-views", "user-events", "audit-log", "metrics", "inventory",
    "shipments", "search-queries", "app-logs", "notifications",
)
GROUP_NAMES = ("report-log-consumer", "bl_mall_etl", "audit-archiver", "search-indexer")
TOPIC_CONFIG_OVERRIDES = (
    {"retention.ms": "172800000"},
    {"cleanup.policy": "compact"},
    {"max.message.bytes": "5242880"},
    {"retention.ms": "604800000", "segment.bytes": "536870912"},
    {"min.insync.replicas": "2"},
)
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_CONFIG = {"segment.bytes": "104857600", "cleanup.policy": "compact", "compression.type": "producer"}


@dataclass
class Topic:
    """One topic: replicas per partition and the state history that matters (epochs)."""

    name: str
    replicas: list[tuple[int, ...]]
    leader_epochs: list[int]
    controller_epochs: list[int]
    config: dict[str, str]
    topic_id: str | None = None

    @property
    def partitions(self) -> list[int]:
        return list(range(len(self.replicas)))

    def assignment(self) -> dict[int, tuple[int, ...]]:
        return dict(enumerate(self.replicas))

    def state(self, partition: int) -> PartitionState:
        """Healthy state: the preferred replica leads a full isr."""
        replicas = self.replicas[partition]
        return PartitionState(
            leader=replicas[0], leader_epoch=self.leader_epochs[partition],
            controller_epoch=self.controller_epochs[partition], isr=replicas,
        )


@dataclass
class Consumer:
    """A live old consumer: its id (§6.2), host and subscription (topic -> streams)."""

    consumer_id: str
    host: str
    subscription: dict[str, int]
    timestamp_ms: int

    def threads(self, topic: str) -> list[str]:
        return thread_ids(self.consumer_id, self.subscription.get(topic, 0))


@dataclass
class Group:
    """An old-consumer group: live consumers and committed offsets per (topic, partition)."""

    group_id: str
    consumers: list[Consumer]
    topics: list[str]
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)

    def owners(self, topic: Topic) -> dict[int, str]:
        """The range assignment every consumer of the group computes for ``topic``."""
        threads = [thread for consumer in self.consumers for thread in consumer.threads(topic.name)]
        return range_assign(topic.partitions, threads)


@dataclass
class ClusterModel:
    """Everything the simulator writes for a healthy cluster."""

    spec: ClusterSpec
    era: Era
    now_ms: int
    cluster_id: str
    brokers: list[BrokerInfo]
    controller_id: int
    controller_epoch: int
    controller_timestamp_ms: int
    topics: dict[str, Topic]
    groups: list[Group]
    broker_order: list[int]  # the order replicas are assigned over (rack-alternated with racks)

    @property
    def broker_ids(self) -> list[int]:
        return [broker.broker_id for broker in self.brokers]

    @property
    def partition_count(self) -> int:
        return sum(len(topic.replicas) for topic in self.topics.values())

    def max_state_controller_epoch(self) -> int:
        return max((max(t.controller_epochs) for t in self.topics.values() if t.replicas), default=0)


def random_uuid(rng: random.Random) -> str:
    """A Kafka ``Uuid.randomUuid`` string: never starting with '-'."""
    while True:
        text = uuid_base64(rng.randbytes(16))
        if not text.startswith("-"):
            return text


def listeners_for(era: Era, host: str) -> tuple[Listener, ...]:
    """The listeners a broker of the era typically advertises."""
    if era.broker_version <= 2 or era.name == "1.x":
        return (Listener("PLAINTEXT", "PLAINTEXT", host, 9092),)
    if era.broker_version == 3:
        return (Listener("PLAINTEXT", "PLAINTEXT", host, 9092), Listener("SSL", "SSL", host, 9093))
    if era.broker_version == 4:
        return (
            Listener("INTERNAL", "PLAINTEXT", host, 9092),
            Listener("EXTERNAL", "SASL_SSL", f"{host}.example.com", 9093),
        )
    return (Listener("REPLICATION", "PLAINTEXT", host, 9091), Listener("CLIENT", "SASL_SSL", host, 9092))


def jmx_port_for(era: Era) -> int:
    """As in the seed articles: -1 (0.8, 0.9, 2.x+), 6061 (0.10) and 9393 (1.x)."""
    return {"0.10": 6061, "1.x": 9393}.get(era.name, -1)


def make_broker(era: Era, broker_id: int, timestamp_ms: int, rack: str | None, host: str | None = None) -> BrokerInfo:
    host = host or f"hadoop{broker_id}"
    return BrokerInfo(
        broker_id=broker_id, host=host, jmx_port=jmx_port_for(era), timestamp_ms=timestamp_ms,
        listeners=listeners_for(era, host), rack=rack if era.broker_version >= 3 else None,
    )


def rack_alternated(brokers: list[BrokerInfo]) -> list[int]:
    """``getRackAlternatedBrokerList``: one broker of each rack in turn."""
    by_rack: dict[str, list[int]] = {}
    for broker in brokers:
        by_rack.setdefault(broker.rack or "", []).append(broker.broker_id)
    racks = sorted(by_rack)
    result: list[int] = []
    index = 0
    while len(result) < len(brokers):
        rack_brokers = by_rack[racks[index % len(racks)]]
        position = index // len(racks)
        if position < len(rack_brokers):
            result.append(rack_brokers[position])
        index += 1
    return result


def assign_replicas(
    broker_ids: list[int], partitions: int, replication_factor: int, start_index: int, shift: int
) -> list[tuple[int, ...]]:
    """Kafka's ``assignReplicasToBrokers`` (without racks) over the given broker order."""
    count = len(broker_ids)
    result: list[tuple[int, ...]] = []
    for partition in range(partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        replicas = [broker_ids[first]]
        for index in range(replication_factor - 1):
            replicas.append(broker_ids[(first + 1 + (shift + index) % (count - 1)) % count])
        result.append(tuple(replicas))
    return result


def topic_name(index: int) -> str:
    if index < len(SEED_TOPICS):
        return SEED_TOPICS[index]
    return f"{TOPIC_WORDS[index % len(TOPIC_WORDS)]}-{index}"


def group_name(index: int) -> str:
    return GROUP_NAMES[index] if index < len(GROUP_NAMES) else f"consumer-group-{index}"


def consumer_id(group_id: str, host: str, timestamp_ms: int, rng: random.Random) -> str:
    """``<group>_<host>-<ms>-<first 8 hex of a random UUID's high bits>`` (§6.2)."""
    return f"{group_id}_{host}-{timestamp_ms}-{rng.getrandbits(32):08x}"


class ModelBuilder:
    """Draws one healthy cluster from a spec; also makes topics for plants and recreations."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.era = spec.era_info
        self.rng = random.Random(spec.seed)
        self.now_ms = spec.start_ms if spec.start_ms is not None else int(time.time() * 1000)

    def build(self) -> ClusterModel:
        spec, rng = self.spec, self.rng
        brokers = self._brokers()
        controller_epoch = rng.randint(3, 40)
        controller_id = rng.choice(brokers).broker_id
        controller_ts = max(b.timestamp_ms for b in brokers) + rng.randint(1_000, 60_000)
        order = rack_alternated(brokers) if spec.racks and self.era.broker_version >= 3 else [
            b.broker_id for b in brokers
        ]
        topics: dict[str, Topic] = {}
        for index in range(spec.topics):
            name = topic_name(index)
            topics[name] = self.topic(name, order, spec.partitions, spec.replication_factor, controller_epoch)
        if topics:
            # A base partition with a leader epoch above 0, for the leader_epoch_regressed plant.
            first = next(iter(topics.values()))
            first.leader_epochs[0] = max(first.leader_epochs[0], 1)
        if spec.internal_topics and self.era.at_least(0, 8, 2):
            topics[OFFSETS_TOPIC] = self.topic(
                OFFSETS_TOPIC, order, 50, min(3, len(brokers)), controller_epoch, OFFSETS_TOPIC_CONFIG
            )
        groups = self._groups([name for name in topics if name != OFFSETS_TOPIC], topics)
        return ClusterModel(
            spec=spec, era=self.era, now_ms=self.now_ms, cluster_id=random_uuid(rng), brokers=brokers,
            controller_id=controller_id, controller_epoch=controller_epoch,
            controller_timestamp_ms=min(controller_ts, self.now_ms), topics=topics, groups=groups,
            broker_order=order,
        )

    def _brokers(self) -> list[BrokerInfo]:
        spec = self.spec
        brokers = []
        for index in range(spec.brokers):
            broker_id = spec.first_broker_id + index
            rack = f"rack{index % spec.racks + 1}" if spec.racks else None
            started = self.now_ms - self.rng.randint(3_600_000, 30 * 86_400_000)
            brokers.append(make_broker(self.era, broker_id, started, rack))
        return brokers

    def topic(
        self,
        name: str,
        broker_order: list[int],
        partitions: int,
        replication_factor: int,
        controller_epoch: int,
        config: dict[str, str] | None = None,
        fresh: bool = False,
    ) -> Topic:
        """A healthy topic. ``fresh`` (just created by the current controller): epochs start at 0."""
        rng = self.rng
        replicas = assign_replicas(
            broker_order, partitions, replication_factor,
            start_index=rng.randrange(len(broker_order)), shift=rng.randrange(len(broker_order)),
        )
        if fresh:
            leader_epochs = [0] * partitions
            controller_epochs = [controller_epoch] * partitions
        else:
            created_at = rng.randint(1, controller_epoch - 1)
            leader_epochs, controller_epochs = [], []
            for _ in range(partitions):
                elected = rng.random() < 0.05
                leader_epochs.append(rng.randint(1, 3) if elected else 0)
                controller_epochs.append(rng.randint(created_at, controller_epoch - 1) if elected else created_at)
        if config is None:
            config = dict(rng.choice(TOPIC_CONFIG_OVERRIDES)) if self.spec.topic_configs and rng.random() < 0.3 else {}
        topic_id = random_uuid(rng) if self.era.topic_version >= 3 else None
        return Topic(name, replicas, leader_epochs, controller_epochs, config, topic_id)

    def _groups(self, topic_names: list[str], topics: dict[str, Topic]) -> list[Group]:
        spec, rng = self.spec, self.rng
        if not topic_names:
            return []
        groups = []
        for index in range(spec.groups):
            group_id = group_name(index)
            subscribed = rng.sample(topic_names, min(spec.topics_per_group, len(topic_names)))
            consumers = []
            for number in range(spec.consumers_per_group):
                host = f"node{number + 1}"
                started = self.now_ms - rng.randint(60_000, 7 * 86_400_000)
                consumers.append(
                    Consumer(
                        consumer_id(group_id, host, started, rng), host,
                        {topic: spec.threads_per_consumer for topic in subscribed}, started,
                    )
                )
            offsets = {
                (name, partition): rng.randint(1_000, 10_000_000)
                for name in subscribed
                for partition in topics[name].partitions
            }
            groups.append(Group(group_id, consumers, subscribed, offsets))
        return groups
