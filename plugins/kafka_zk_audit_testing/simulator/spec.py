"""What to simulate: the Kafka era (which encodings and znodes exist) and the size of the cluster.

Each era names the Kafka release whose writers it imitates (kafka-zk-layout.md):

| era | release | broker | topic | controller | config change | extras |
|---|---|---|---|---|---|---|
| 0.8 | 0.8.0 brokers, 0.8.1 admin tools | v1 hand-built | v1 hand-built | v1 hand-built | JSON string | |
| 0.9 | 0.9.0 | v2 | v1 | v1 | v1 | seqid, isr_change, clients, ACLs |
| 0.10 | 0.10.1 | v3 (+rack) | v1 | v1 | v2 | cluster id, users, brokers configs |
| 1.x | 1.1 | v4 | v1 | v1 | v2 | producer id block, log dir events, SCRAM, tokens v1 |
| 2.x | 2.6 | v4 | v2 | v1 | v2 | prefixed ACLs, create-then-setData registration |
| 2.8 | 2.8 | v5 | v3 (topic_id) | v1 | v2 | /feature v1, ips |
| 3.x | 3.7 | v5 | v3 (topic_id) | v2 | v2 | /feature v2, tokens v3 |
| 3.x-migration | 3.7 during ZK→KRaft | v5 | v3 | v2, persistent, KRaft owner | v2 | /migration |
| 3.9 | 3.9.0, unsecured | v5 | v3 (topic_id) | v2 | v2 | /feature v2; no ACLs, SCRAM or tokens |

The 0.8 era writes what 0.8.0 brokers write (hand-built JSON with sorted keys and spaces) plus the
topic configs, config changes and delete markers of the 0.8.1 admin tools, so that every topic has
its ``/config/topics/<t>`` as in every later era.

Every era but 3.9 is a secured cluster: an authorizer's ACLs, SCRAM credentials and a delegation
token in ZooKeeper, as far as its release has them (``Era.secured``). The 3.9 era is a cluster ready
for a ZK→KRaft migration to 3.9: the encodings of the 3.x era and nothing such a migration must
treat specially (no ACLs, SCRAM credentials or tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

Release = tuple[int, int, int]


@dataclass(frozen=True)
class Era:
    """One Kafka release line: the encodings and znodes its brokers, controller and tools write."""

    name: str
    release: Release
    handbuilt_json: bool = False
    kraft_migration: bool = False
    secured: bool = True  # an authorizer's ACLs, SCRAM credentials and a delegation token

    def at_least(self, *release: int) -> bool:
        return self.release >= tuple(release)

    def since(self, steps: dict[Release, tuple[str, ...]]) -> list[str]:
        """The names of ``steps`` (release -> names it brought, oldest first) that this era's release has."""
        return [name for release, names in steps.items() if self.release >= release for name in names]

    @property
    def broker_version(self) -> int:
        if self.release < (0, 9, 0):
            return 1
        if self.release < (0, 10, 0):
            return 2
        if self.release < (0, 10, 2):
            return 3
        if self.release < (2, 7, 0):
            return 4
        return 5

    @property
    def topic_version(self) -> int:
        if self.release < (2, 4, 0):
            return 1
        return 2 if self.release < (2, 8, 0) else 3

    @property
    def controller_version(self) -> int:
        return 2 if self.at_least(3, 4, 0) else 1

    @property
    def config_change_format(self) -> str:
        """``string`` (0.8.1–0.8.2), ``v1`` (0.9–0.10.0) or ``v2`` (0.10.1+)."""
        if self.release < (0, 9, 0):
            return "string"
        return "v1" if self.release < (0, 10, 1) else "v2"

    @property
    def feature_version(self) -> int | None:
        if self.release < (2, 7, 0):
            return None
        return 1 if self.release < (3, 3, 0) else 2

    @property
    def delegation_token_version(self) -> int | None:
        if self.release < (1, 1, 0):
            return None
        return 1 if self.release < (3, 3, 0) else 3

    @property
    def controller_epoch_in_multi_op(self) -> bool:
        """2.1+: /controller_epoch starts at 0 and is bumped in the multi-op creating /controller."""
        return self.at_least(2, 1, 0)

    @property
    def registers_then_sets_data(self) -> bool:
        """2.2+: a broker creates its registration with null data, then sets it (dataVersion 1)."""
        return self.at_least(2, 2, 0)

    @property
    def null_delete_marker(self) -> bool:
        return self.at_least(1, 1, 0)

    @property
    def config_entity_types(self) -> tuple[str, ...]:
        return ("topics", *self.since({(0, 9, 0): ("clients",), (0, 10, 1): ("users", "brokers"), (2, 8, 0): ("ips",)}))

    @property
    def acl_resource_types(self) -> tuple[str, ...]:
        if self.release < (0, 9, 0):
            return ()
        return ("Topic", "Group", "Cluster",
                *self.since({(0, 11, 0): ("TransactionalId",), (1, 1, 0): ("DelegationToken",), (3, 3, 0): ("User",)}))

    @property
    def acl_change_uses_java_names(self) -> bool:
        """2.5+ writes ``TOPIC:foo`` in ACL change notifications, before ``Topic:foo``."""
        return self.at_least(2, 5, 0)


ERAS: dict[str, Era] = {
    era.name: era
    for era in (
        Era("0.8", (0, 8, 1), handbuilt_json=True),
        Era("0.9", (0, 9, 0)),
        Era("0.10", (0, 10, 1)),
        Era("1.x", (1, 1, 1)),
        Era("2.x", (2, 6, 3)),
        Era("2.8", (2, 8, 2)),
        Era("3.x", (3, 7, 1)),
        Era("3.x-migration", (3, 7, 1), kraft_migration=True),
        Era("3.9", (3, 9, 0), secured=False),
    )
}


@dataclass(frozen=True)
class ClusterSpec:
    """The size and shape of a simulated cluster. Everything random is drawn from ``seed``.

    ``topics`` × ``partitions`` are the cluster's own topics. ``topic_configs`` gives a share of them
    config overrides (every topic always has its ``/config/topics/<t>``). ``internal_topics`` adds
    ``__consumer_offsets`` (50 partitions, as 0.9+ brokers create it) on top. Each group subscribes
    ``topics_per_group`` topics with ``consumers_per_group`` live old consumers of
    ``threads_per_consumer`` streams each. ``start_ms`` fixes the clock used for
    timestamps and consumer ids (default: now), which makes a whole write reproducible.
    """

    era: str = "3.x"
    brokers: int = 5
    racks: int = 3
    topics: int = 8
    partitions: int = 6
    replication_factor: int = 3
    groups: int = 2
    consumers_per_group: int = 2
    threads_per_consumer: int = 2
    topics_per_group: int = 2
    topic_configs: bool = True
    internal_topics: bool = False
    first_broker_id: int = 1
    seed: int = 7
    start_ms: int | None = None

    def __post_init__(self) -> None:
        if self.era not in ERAS:
            raise ValueError(f"unknown era {self.era!r}; known: {', '.join(ERAS)}")
        if self.brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if not 1 <= self.replication_factor <= self.brokers:
            raise ValueError(f"replication_factor must be 1..brokers ({self.brokers}), not {self.replication_factor}")
        if self.partitions < 1:
            raise ValueError("topics need at least one partition")
        for name in ("racks", "topics", "groups", "consumers_per_group", "threads_per_consumer", "topics_per_group"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.groups and self.topics and (self.consumers_per_group < 1 or self.threads_per_consumer < 1):
            raise ValueError("consumer groups need at least one consumer with at least one thread")
        if self.first_broker_id < 0:
            raise ValueError("broker ids are not negative")

    @property
    def era_info(self) -> Era:
        return ERAS[self.era]
