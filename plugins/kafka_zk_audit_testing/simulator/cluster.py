"""The simulator: writes a cluster into a real ZooKeeper and keeps its sessions alive.

Sessions are as in a real cluster: one per broker (holding its /brokers/ids/<id>), the controller's
/controller in the controller broker's session, one per old consumer (holding its ids/<id> and
the owner nodes of its threads), and an admin session for every persistent node.

Plants register on the simulator (``registry``): ``plant()`` looks the planter up there and ``advance()`` runs the
plants' hooks; this module imports no plant module (the package's ``__init__`` imports them).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Mapping
from typing import Any

from kazoo.client import KazooClient

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.encodings import BrokerInfo, Encoder
from kafka_zk_audit_testing.simulator.model import ClusterModel, Group, ModelBuilder
from kafka_zk_audit_testing.simulator.registry import ADVANCE_HOOKS, PLANTERS, Planted
from kafka_zk_audit_testing.simulator.spec import ClusterSpec
from kafka_zk_audit_testing.simulator.writer import BatchWriter, WriteCounts

log = logging.getLogger(__name__)

KRAFT_CONTROLLER_ID = 3000


def split_hosts(hosts: str) -> tuple[str, str]:
    """``"h:p,h2:p/chroot"`` -> (``"h:p,h2:p"``, ``"/chroot"`` or ``""``)."""
    servers, slash, chroot = hosts.partition("/")
    return servers, (slash + chroot).rstrip("/") if chroot else ""


class Simulator:
    """Writes a simulated Kafka cluster into ZooKeeper at ``hosts`` (``host:port[,…][/chroot]``)."""

    def __init__(self, hosts: str, auth: tuple[str, str] | None = None, timeout: float = 15.0) -> None:
        self.hosts = hosts
        self.auth = auth
        self.timeout = timeout
        self.counts = WriteCounts()
        self.model: ClusterModel | None = None
        self.encoder: Encoder | None = None
        self.planted: dict[str, Planted] = {}
        self.plant_notes: dict[str, Any] = {}
        self.broker_sessions: dict[int, KazooClient] = {}
        self.consumer_sessions: dict[str, KazooClient] = {}
        self.other_sessions: list[KazooClient] = []
        self.controller_id: int | None = None
        self.controller_epoch = 0
        self.kraft_controller_epoch = 0
        self.rng = random.Random(0)
        self._admin: KazooClient | None = None
        self._builder: ModelBuilder | None = None
        self._next_plant_broker_id = 1001

    # -- sessions --------------------------------------------------------------------------
    def new_session(self, label: str) -> KazooClient:
        """A started session on the cluster's chroot (closed by ``close()``)."""
        client = KazooClient(hosts=self.hosts, auth_data=[self.auth] if self.auth else None, timeout=self.timeout)
        client.start(timeout=self.timeout)
        log.debug("session %s: 0x%x", label, client.client_id[0])
        return client

    @property
    def admin(self) -> KazooClient:
        if self._admin is None:
            self._ensure_chroot()
            self._admin = self.new_session("admin")
        return self._admin

    def writer(self, client: KazooClient, label: str) -> BatchWriter:
        """A batch writer through ``client`` whose counts add to this simulator's totals."""
        return BatchWriter(client, label, totals=self.counts)

    def _ensure_chroot(self) -> None:
        servers, chroot = split_hosts(self.hosts)
        if not chroot:
            return
        root = KazooClient(hosts=servers, auth_data=[self.auth] if self.auth else None, timeout=self.timeout)
        root.start(timeout=self.timeout)
        try:
            root.ensure_path(chroot)
        finally:
            root.stop()
            root.close()

    # -- the whole cluster -----------------------------------------------------------------
    def write(self, spec: ClusterSpec) -> WriteCounts:
        """Write the whole healthy cluster of ``spec``; returns what was written and how long it took.

        ``self.counts`` goes on counting what plants, ``advance()`` and ``recreate_topic()`` write."""
        if self.model is not None:
            raise RuntimeError("this simulator already wrote a cluster")
        started = time.monotonic()
        if self.admin.exists("/brokers"):
            raise RuntimeError(f"{self.hosts} already holds a Kafka cluster (/brokers exists)")
        builder = ModelBuilder(spec)
        model = builder.build()
        self.model, self._builder, self.encoder = model, builder, Encoder(model.era)
        self.rng = random.Random(spec.seed * 7919 + 1)
        self._next_plant_broker_id = max(1001, max(model.broker_ids) + 1)
        log.info(
            "writing era %s: %d brokers, %d topics, %d partitions, %d groups",
            spec.era, len(model.brokers), len(model.topics), model.partition_count, len(model.groups),
        )
        self._write_roots_and_epoch(model)
        for broker in model.brokers:
            self.register_broker(broker)
        self._elect_initial_controller(model)
        with self.writer(self.admin, "topics") as writer:
            for topic in model.topics.values():
                layout.write_model_topic(writer, self.encoder, topic)
        for group in model.groups:
            owners = {
                topic: {str(p): thread for p, thread in sorted(group.owners(model.topics[topic]).items())}
                for topic in group.topics
            }
            self.write_group(group, owners, group.offsets)
        with self.writer(self.admin, "extras") as writer:
            layout.write_extras(writer, self.encoder, model, self.rng)
        self.counts.seconds = time.monotonic() - started
        log.info(
            "wrote %d znodes (%d operations) in %.1f s: %.0f znodes/s",
            self.counts.creates, self.counts.ops, self.counts.seconds,
            self.counts.creates / max(self.counts.seconds, 1e-9),
        )
        return dataclasses.replace(self.counts)

    def _write_roots_and_epoch(self, model: ClusterModel) -> None:
        era = model.era
        with self.writer(self.admin, "roots") as writer:
            layout.write_roots(writer, era)
            # 2.1+: created as 0 and bumped by every election; before: created as 1 by the first one.
            first = 0 if era.controller_epoch_in_multi_op else 1
            writer.create("/controller_epoch", self.encoder.controller_epoch(first))
            for epoch in range(first + 1, model.controller_epoch):
                writer.set_data("/controller_epoch", self.encoder.controller_epoch(epoch))
        self.controller_epoch = model.controller_epoch - 1

    def register_broker(self, broker: BrokerInfo, data: bytes | None = None) -> KazooClient:
        """Register ``broker`` in a session of its own, the way its era does."""
        session = self.new_session(f"broker-{broker.broker_id}")
        self.broker_sessions[broker.broker_id] = session
        payload = data if data is not None else self.encoder.broker(broker)
        path = f"/brokers/ids/{broker.broker_id}"
        with self.writer(session, f"broker {broker.broker_id}") as writer:
            if self.model.era.registers_then_sets_data:
                # One multi-op: create with null data, then set it (dataVersion 1; czxid = broker epoch).
                writer.create(path, None, ephemeral=True)
                writer.set_data(path, payload, 0)
            else:
                writer.create(path, payload, ephemeral=True)
        return session

    def _elect_initial_controller(self, model: ClusterModel) -> None:
        if model.era.kraft_migration:
            self._write_kraft_controller(model, first=True)
            return
        self.elect_controller(model.controller_id, model.controller_timestamp_ms)

    def elect_controller(self, broker_id: int, timestamp_ms: int) -> None:
        """``broker_id`` wins an election: /controller in its session, /controller_epoch + 1."""
        session = self.broker_sessions[broker_id]
        epoch = self.controller_epoch + 1
        data = self.encoder.controller(broker_id, timestamp_ms)
        with self.writer(session, f"controller {broker_id}") as writer:
            writer.create("/controller", data, ephemeral=True)
            if self.model.era.controller_epoch_in_multi_op:
                writer.set_data("/controller_epoch", self.encoder.controller_epoch(epoch))
        if not self.model.era.controller_epoch_in_multi_op:
            with self.writer(session, f"controller {broker_id}") as writer:
                writer.set_data("/controller_epoch", self.encoder.controller_epoch(epoch))
        self.controller_id, self.controller_epoch = broker_id, epoch

    def _write_kraft_controller(self, model: ClusterModel, first: bool) -> None:
        """During a ZK→KRaft migration the active KRaft controller owns a persistent /controller."""
        self.kraft_controller_epoch += 1
        self.controller_epoch += 1
        data = self.encoder.controller(KRAFT_CONTROLLER_ID, model.now_ms, self.kraft_controller_epoch)
        migration = self.encoder.migration(
            KRAFT_CONTROLLER_ID, self.kraft_controller_epoch, 1_000 * self.kraft_controller_epoch + 42,
            self.kraft_controller_epoch,
        )
        with self.writer(self.admin, "kraft controller") as writer:
            if first:
                writer.create("/controller", data)
                writer.create("/migration", migration)
            else:
                writer.set_data("/controller", data)
                writer.set_data("/migration", migration)
            writer.set_data("/controller_epoch", self.encoder.controller_epoch(self.controller_epoch))
        self.controller_id = KRAFT_CONTROLLER_ID

    def write_group(
        self, group: Group, owner_nodes: Mapping[str, Mapping[str, str]], offsets: Mapping[tuple[str, int], object]
    ) -> None:
        """An old-consumer group: persistent parents and offsets by the admin session; each consumer's
        ids/<id> and the owner nodes of its threads (``owner_nodes``: topic -> node name -> thread id)
        by that consumer's own session."""
        with self.writer(self.admin, f"group {group.group_id}") as writer:
            layout.write_group_persistent(writer, group, offsets)
        base = layout.group_path(group.group_id)
        for consumer in group.consumers:
            session = self.new_session(f"consumer {consumer.consumer_id}")
            self.consumer_sessions[consumer.consumer_id] = session
            with self.writer(session, f"consumer {consumer.consumer_id}") as writer:
                writer.create(
                    f"{base}/ids/{consumer.consumer_id}",
                    self.encoder.consumer_registration(consumer.subscription, consumer.timestamp_ms),
                    ephemeral=True,
                )
                for topic, nodes in owner_nodes.items():
                    mine = set(consumer.threads(topic))
                    for node, thread in nodes.items():
                        if thread in mine:
                            writer.create(f"{base}/owners/{topic}/{node}", thread.encode(), ephemeral=True)

    # -- time passes -----------------------------------------------------------------------
    def advance(self, steps: int = 1, move_controller: bool = True) -> None:
        """Let time pass: per step the controller fails over (epoch + 1; not while a controller
        plant holds /controller), a few partitions re-elect their preferred leader (leader_epoch + 1,
        written with the current controller epoch) and every committed offset grows."""
        model = self._require_model()
        for _ in range(steps):
            if move_controller and not PLANTERS.controller_holders & set(self.planted):
                self._move_controller(model)
            with self.writer(self.admin, "advance") as writer:
                self._elect_leaders(model, writer)
                for group in model.groups:
                    base = layout.group_path(group.group_id)
                    for (topic, partition), value in group.offsets.items():
                        group.offsets[(topic, partition)] = value + self.rng.randint(1, 50_000)
                        writer.set_data(f"{base}/offsets/{topic}/{partition}",
                                        self.encoder.offset(group.offsets[(topic, partition)]))
                for hook in ADVANCE_HOOKS:  # e.g. a planted state kept one controller epoch ahead
                    hook(self, writer)

    def _move_controller(self, model: ClusterModel) -> None:
        if model.era.kraft_migration:
            self._write_kraft_controller(model, first=False)
            return
        candidates = [b for b in model.broker_ids if b != self.controller_id] or model.broker_ids
        successor = self.rng.choice(candidates)
        if self.controller_id in self.broker_sessions:
            self.broker_sessions[self.controller_id].delete("/controller")
        else:
            self.admin.delete("/controller")
        self.elect_controller(successor, int(time.time() * 1000))

    def _elect_leaders(self, model: ClusterModel, writer: BatchWriter) -> None:
        topics = [topic for topic in model.topics.values() if topic.replicas]
        if not topics:
            return
        elections = max(1, min(1_000, model.partition_count // 100))
        for _ in range(elections):
            topic = self.rng.choice(topics)
            partition = self.rng.randrange(len(topic.replicas))
            topic.leader_epochs[partition] += 1
            topic.controller_epochs[partition] = self.controller_epoch
            writer.set_data(layout.state_path(topic.name, partition), self.encoder.state(topic.state(partition)))

    # -- topic recreation ------------------------------------------------------------------
    def recreate_topic(self, topic: str) -> None:
        """Delete ``topic`` the way the controller does, then create it again (new czxid, new
        topic_id, leader epochs 0); the groups' committed offsets on it restart low."""
        model = self._require_model()
        if topic not in model.topics:
            raise ValueError(f"{topic!r} is not a topic of the simulated cluster")
        old = model.topics[topic]
        with self.writer(self.admin, f"delete {topic}") as writer:
            writer.create(f"/admin/delete_topics/{topic}", self.encoder.delete_marker())
        with self.writer(self.admin, f"delete {topic}") as writer:
            layout.delete_topic(writer, old)
            writer.delete(f"/admin/delete_topics/{topic}")
        new = self._builder.topic(
            topic, model.broker_order, len(old.replicas), len(old.replicas[0]), self.controller_epoch,
            config=old.config, fresh=True,
        )
        model.topics[topic] = new
        with self.writer(self.admin, f"create {topic}") as writer:
            layout.write_model_topic(writer, self.encoder, new)
            for group in model.groups:
                base = layout.group_path(group.group_id)
                for key in [key for key in group.offsets if key[0] == topic]:
                    group.offsets[key] = self.rng.randint(0, 500)
                    writer.set_data(f"{base}/offsets/{topic}/{key[1]}", self.encoder.offset(group.offsets[key]))

    # -- plants ----------------------------------------------------------------------------
    def plant(self, check_id: str) -> Planted:
        """Plant the problem ``check_id`` of the catalogue on a subject of its own."""
        self._require_model()
        if check_id in self.planted:
            raise ValueError(f"{check_id} is already planted")
        if check_id not in CHECK_IDS:
            raise ValueError(f"unknown check id {check_id!r}")
        planter = PLANTERS.get(check_id)
        if planter is None:
            raise ValueError(f"no plant registered for {check_id} (the package kafka_zk_audit_testing.simulator "
                             "registers them as it is imported)")
        planted = planter(self, check_id)
        self.planted[check_id] = planted
        log.info("planted %s at %s", check_id, planted.path)
        return planted

    def allocate_broker_id(self) -> int:
        """A broker id no broker of the cluster or earlier plant has used."""
        broker_id = self._next_plant_broker_id
        self._next_plant_broker_id += 1
        return broker_id

    # -- the end ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close every session: the cluster's ephemeral nodes vanish."""
        sessions = [*self.consumer_sessions.values(), *self.other_sessions, *self.broker_sessions.values()]
        if self._admin is not None:
            sessions.append(self._admin)
        for session in sessions:
            try:
                session.stop()
                session.close()
            except Exception:  # noqa: BLE001 - closing what may already be gone
                log.debug("closing a session failed", exc_info=True)
        self.consumer_sessions.clear()
        self.other_sessions.clear()
        self.broker_sessions.clear()
        self._admin = None

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------
    def _require_model(self) -> ClusterModel:
        if self.model is None:
            raise RuntimeError("write() a cluster first")
        return self.model
