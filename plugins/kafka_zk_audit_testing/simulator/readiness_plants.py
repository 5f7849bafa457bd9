"""Plant the ZooKeeper → KRaft migration readiness conditions (R01–R20 of the readiness note) into a
simulated cluster, and move a ``3.x-migration`` cluster through the phases of a migration.

``plant_readiness(sim, name)`` plants one condition on a subject of its own and returns its ``Planted``
(``check_id`` is the readiness check id; ``implied`` the health checks of the catalogue the plant cannot
help triggering, as in ``plants``). ``name`` is a readiness check id, or ``<check_id>:<variant>`` for a
second form of the same condition (``READINESS_PLANTS`` lists them all). Every plant is written the way
the Kafka version concerned writes it: topics without ``topic_id`` by 1.x/2.x admin tools, a v4 broker
registration (IBP < 2.7), ``/feature`` v1 (IBP < 3.3), SCRAM credentials, ACLs, delegation tokens and
``encryptedPassword`` broker configs as 3.x brokers store them. Planted broker ids stay at or below
``reserved.broker.max.id`` (1000, from 900 up) so that only the generated-id plant shows an id above it.

Global znodes make some plants exclusive or shared: ``kraft_ibp_too_low:feature`` rewrites /feature,
``kraft_cluster_id_missing`` deletes /cluster/id, ``kraft_controller_epoch_missing`` deletes
/controller_epoch (after it, ``advance()`` and controller elections fail), ``kraft_default_broker_config``
and ``kraft_encrypted_passwords:default`` both write /config/brokers/<default>.
``kraft_generated_broker_ids`` registers a broker the way ``broker.id.generation.enable`` does (bump
/brokers/seqid, id = 1000 + its version), so it leaves the subject of ``kraft_generated_broker_ids:seqid``
too.

``inherent_readiness(sim)`` lists the conditions the base cluster of the era already carries (a secured
3.x cluster has ACLs, SCRAM credentials, a delegation token, a cluster-default broker config and
``<default>``/%-sanitized quota entities; older eras lack topic ids, v5 registrations or /feature): the
expected readiness rows of a cluster are the union of its plants and these.

The phases of a migration itself (waiting for brokers, initial load, dual writes, a revert) are ``migration_phases``;
the znode writes the plants share are ``readiness_writes``.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from kazoo.client import KazooClient
from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

from kafka_zk_audit_testing.simulator import layout
from kafka_zk_audit_testing.simulator.cluster import KRAFT_CONTROLLER_ID
from kafka_zk_audit_testing.simulator.encodings import BrokerInfo, Encoder, Listener, compact, scram_credential
from kafka_zk_audit_testing.simulator.migration_phases import reverted_migration
from kafka_zk_audit_testing.simulator.model import make_broker, random_uuid
from kafka_zk_audit_testing.simulator.planting import (
    Planted,
    Planters,
    add_reassignment,
    healthy_assignment,
    healthy_state,
    now_ms,
    spare_broker,
    write_topic,
)
from kafka_zk_audit_testing.simulator.readiness_writes import (
    RESERVED_BROKER_MAX_ID,
    config_change,
    create_znode,
    encrypted_password,
    planted_broker_id,
    read_json,
    sanitize,
    write_znode,
)
from kafka_zk_audit_testing.simulator.spec import ERAS

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

log = logging.getLogger(__name__)

READINESS_PLANTERS = Planters()
readiness_planter = READINESS_PLANTERS.register
NOTES = "readiness"  # sim.plant_notes key: plant name -> Planted
# A resource type SecurityUtils does not know (Kafka's: Topic, Group, Cluster, TransactionalId, DelegationToken,
# User): AclAuthorizer.loadAllAcls ignores its ACLs, so the migration drops them.
UNKNOWN_ACL_RESOURCE_TYPE = "Broker"
SECURED_PATH = "/log_dir_event_notification"  # a Kafka top-level znode the R20 plant re-ACLs


def check_id_of(name: str) -> str:
    """``kraft_ibp_too_low:feature`` -> ``kraft_ibp_too_low``."""
    return name.split(":", 1)[0]


def plant_readiness(sim: Simulator, name: str) -> Planted:
    """Plant the readiness condition ``name`` (a check id or ``<check_id>:<variant>``) on a subject of its own."""
    if sim.model is None:
        raise RuntimeError("write() a cluster first")
    if name not in READINESS_PLANTERS:
        raise ValueError(f"unknown readiness plant {name!r}; known: {', '.join(READINESS_PLANTERS)}")
    done = sim.plant_notes.setdefault(NOTES, {})
    if name in done:
        raise ValueError(f"{name} is already planted")
    planted = READINESS_PLANTERS[name](sim, name)
    done[name] = planted
    log.info("planted readiness condition %s at %s", name, planted.path)
    return planted


def subject_name(name: str) -> str:
    """A topic, user, client or resource name for the plant ``name`` (``:`` is not allowed in topics)."""
    return "planted-" + name.replace(":", "-").replace("_", "-")


# -- R01 ---------------------------------------------------------------------------------------
@readiness_planter("kraft_migration_leftover")
def _migration_leftover(sim: Simulator, plant: str) -> Planted:
    """A reverted attempt: /migration with dual writes done (offset > 0) while a ZooKeeper-mode controller
    (ephemeral, kraftControllerEpoch -1) holds /controller. On a 3.x-migration cluster: ``reverted_migration``."""
    if sim.model.era.kraft_migration:
        return reverted_migration(sim)
    if sim.model.era.controller_version < 2:
        raise ValueError("/migration exists from Kafka 3.4 (eras 3.x and later)")
    data = sim.encoder.migration(KRAFT_CONTROLLER_ID, 4, 81_234, 4)
    write_znode(sim, "/migration", data)
    return Planted(check_id_of(plant), path="/migration")


# -- R02–R06: topics and partitions -------------------------------------------------------------
@readiness_planter("kraft_replica_on_unregistered_broker")
def _replica_on_unregistered_broker(sim: Simulator, plant: str) -> Planted:
    """Partition 0's last replica is a broker that never registered (still in the isr, the leader alive)."""
    name = subject_name(plant)
    gone = planted_broker_id(sim)
    assignment = healthy_assignment(sim, 2)
    assignment[0] = assignment[0][:-1] + (gone,)
    states = {p: healthy_state(sim, replicas) for p, replicas in assignment.items()}
    write_topic(sim, name, assignment, states)
    return Planted(check_id_of(plant), topic=name, partition=0, broker_id=gone, path=layout.topic_path(name),
                   implied=("replica_on_unknown_broker",))


def _topic_by(sim: Simulator, name: str, era: str) -> None:
    """A healthy topic whose znode the ``era``'s admin tools wrote (v1 for 1.x, v2 for 2.x: no topic_id)."""
    assignment = healthy_assignment(sim, 2)
    states = {p: healthy_state(sim, replicas) for p, replicas in assignment.items()}
    with sim.writer(sim.admin, f"plant {name}") as writer:
        layout.write_topic(writer, Encoder(ERAS[era]), name, assignment, states, {}, None)


@readiness_planter("kraft_topic_without_id", "kraft_topic_without_id:v1")
def _topic_without_id(sim: Simulator, plant: str) -> Planted:
    """A topic created by a 2.x (v2 JSON) or, as ``:v1``, a 1.x (v1 JSON) controller; never given a topic id."""
    topic = subject_name(plant)
    _topic_by(sim, topic, "1.x" if plant.endswith(":v1") else "2.x")
    return Planted(check_id_of(plant), topic=topic, path=layout.topic_path(topic))


@readiness_planter("kraft_partition_state_missing")
def _partition_state_missing(sim: Simulator, plant: str) -> Planted:
    """Partition 1 is assigned; the controller never wrote its state."""
    name = subject_name(plant)
    assignment = healthy_assignment(sim, 2)
    states = {0: healthy_state(sim, assignment[0])}
    write_topic(sim, name, assignment, states)
    return Planted(check_id_of(plant), topic=name, partition=1, path=layout.topic_path(name),
                   implied=("partition_state_missing",))


@readiness_planter("kraft_pending_topic_deletion")
def _pending_topic_deletion(sim: Simulator, plant: str) -> Planted:
    """A topic marked for deletion that the controller has not deleted yet."""
    name = subject_name(plant)
    write_topic(sim, name, healthy_assignment(sim, 2))
    with sim.writer(sim.admin, plant) as writer:
        writer.create(f"/admin/delete_topics/{name}", sim.encoder.delete_marker())
    return Planted(check_id_of(plant), topic=name, path=layout.topic_path(name), implied=("delete_topic_stuck",))


@readiness_planter("kraft_reassignment_in_flight")
def _reassignment_in_flight(sim: Simulator, plant: str) -> Planted:
    """A KIP-455 reassignment of partition 0 in the topic znode (2.4+): replicas = target + origin,
    ``adding_replicas`` and ``removing_replicas`` set; one partition, so its replication factor stands alone."""
    name = subject_name(plant)
    origin = healthy_assignment(sim, 1)[0]
    target = origin[1:] + (spare_broker(sim, origin),)
    replicas = tuple(dict.fromkeys(target + origin))
    adding = [b for b in target if b not in origin]
    removing = [b for b in origin if b not in target]
    topic_id = random_uuid(sim.rng) if sim.model.era.topic_version >= 3 else None
    document: dict[str, Any] = {"partitions": {"0": list(replicas)}}
    if topic_id:
        document["topic_id"] = topic_id
    document.update({"adding_replicas": {"0": adding}, "removing_replicas": {"0": removing},
                     "version": sim.model.era.topic_version})
    state = healthy_state(sim, replicas)
    with sim.writer(sim.admin, plant) as writer:
        writer.create(f"/config/topics/{name}", sim.encoder.config({}))
        writer.create(layout.topic_path(name), compact(document))
        writer.create(f"{layout.topic_path(name)}/partitions", None)
        writer.create(f"{layout.topic_path(name)}/partitions/0", None)
        writer.create(layout.state_path(name, 0), sim.encoder.state(state))
    return Planted(check_id_of(plant), topic=name, partition=0, path=layout.topic_path(name))


@readiness_planter("kraft_reassignment_in_flight:admin")
def _reassignment_requested(sim: Simulator, plant: str) -> Planted:
    """A reassignment of partition 0 requested through /admin/reassign_partitions, not yet done."""
    name = subject_name(plant)
    assignment = healthy_assignment(sim, 2)
    write_topic(sim, name, assignment)
    add_reassignment(sim, (name, 0, assignment[0][:-1] + (spare_broker(sim, assignment[0]),)))
    return Planted(check_id_of(plant), topic=name, partition=0, path="/admin/reassign_partitions",
                   implied=("reassignment_stuck",))


# -- R07–R12: security and configs ----------------------------------------------------------------
@readiness_planter("kraft_scram_credentials")
def _scram_credentials(sim: Simulator, plant: str) -> Planted:
    """A SASL/SCRAM user with both mechanisms, as ``kafka-configs --alter --add-config SCRAM-SHA-…`` writes it."""
    user = subject_name(plant)
    salt = secrets.token_hex(16).encode()
    config = {
        "SCRAM-SHA-256": scram_credential("planted-secret", salt, 8192, "SCRAM-SHA-256"),
        "SCRAM-SHA-512": scram_credential("planted-secret", salt, 8192, "SCRAM-SHA-512"),
    }
    path = f"/config/users/{user}"
    create_znode(sim, path, sim.encoder.config(config))
    config_change(sim, "users", user)
    return Planted(check_id_of(plant), path=path)


def _acl_change(sim: Simulator, resource_type: str, name: str, prefixed: bool) -> None:
    if prefixed:
        parent, data = "/kafka-acl-extended-changes", sim.encoder.extended_acl_change(resource_type, name)
    else:
        parent, data = "/kafka-acl-changes", sim.encoder.acl_change(resource_type, name)
    sim.admin.ensure_path(parent)
    sim.admin.create(f"{parent}/acl_changes_", data, sequence=True)
    sim.counts.creates += 1


@readiness_planter("kraft_acls_present", "kraft_acls_present:prefixed")
def _acls_present(sim: Simulator, plant: str) -> Planted:
    """A literal Topic ACL under /kafka-acl, or a prefixed Group ACL under /kafka-acl-extended/prefixed."""
    prefixed = plant.endswith(":prefixed")
    name = subject_name(plant)
    if prefixed:
        path = f"/kafka-acl-extended/prefixed/Group/{name}"
        entries = [("User:planted", "Allow", "Read", "*")]
    else:
        path = f"/kafka-acl/Topic/{name}"
        entries = [("User:planted", "Allow", "Write", "*"), ("User:planted", "Allow", "Describe", "*")]
    create_znode(sim, path, sim.encoder.acls(entries))
    _acl_change(sim, "Group" if prefixed else "Topic", name, prefixed)
    return Planted(check_id_of(plant), path=path)


@readiness_planter("kraft_acl_unknown_resource_type")
def _acl_unknown_resource_type(sim: Simulator, plant: str) -> Planted:
    """ACLs stored under a resource type Kafka does not know (``AclAuthorizer.loadAllAcls`` ignores it, so
    the migration drops them)."""
    path = f"/kafka-acl/{UNKNOWN_ACL_RESOURCE_TYPE}/{subject_name(plant)}"
    create_znode(sim, path, sim.encoder.acls([("User:planted", "Allow", "Alter", "*")]))
    return Planted(check_id_of(plant), path=path)


@readiness_planter("kraft_delegation_tokens")
def _delegation_tokens(sim: Simulator, plant: str) -> Planted:
    """A delegation token's metadata (v3 from 3.3, v1 before) and its change notification."""
    token_id = random_uuid(sim.rng)
    issued = now_ms() - 3_600_000
    encoder = sim.encoder if sim.model.era.delegation_token_version else Encoder(ERAS["3.x"])
    path = f"/delegation_token/tokens/{token_id}"
    create_znode(sim, path, encoder.delegation_token(
        token_id, "User%3Aplanted", [], issued, issued + 7 * 86_400_000, issued + 86_400_000,
    ))
    sim.admin.ensure_path("/delegation_token/token_changes")
    sim.admin.create("/delegation_token/token_changes/token_change_", token_id.encode(), sequence=True)
    sim.counts.creates += 1
    return Planted(check_id_of(plant), path=path)


def _merge_broker_config(sim: Simulator, entity: str, values: dict[str, str]) -> None:
    path = f"/config/brokers/{entity}"
    if sim.admin.exists(path):
        config = {**read_json(sim, path).get("config", {}), **values}
        sim.admin.set(path, sim.encoder.config(config))
        sim.counts.sets += 1
    else:
        create_znode(sim, path, sim.encoder.config(values))
    config_change(sim, "brokers", entity)


@readiness_planter("kraft_encrypted_passwords", "kraft_encrypted_passwords:default")
def _encrypted_passwords(sim: Simulator, plant: str) -> Planted:
    """A dynamic listener keystore password of the first broker (or of the cluster default), stored
    encrypted with the brokers' ``password.encoder.secret``."""
    default = plant.endswith(":default")
    entity = "<default>" if default else str(sim.model.broker_ids[0])
    _merge_broker_config(sim, entity, {
        "listener.name.client.ssl.keystore.password": encrypted_password("keystore-secret"),
    })
    if default:
        return Planted(check_id_of(plant), path="/config/brokers/<default>")
    return Planted(check_id_of(plant), broker_id=int(entity), path=f"/config/brokers/{entity}")


@readiness_planter("kraft_default_broker_config")
def _default_broker_config(sim: Simulator, plant: str) -> Planted:
    """A cluster-wide dynamic broker config (/config/brokers/<default>, 1.1+; kept when already there)."""
    if not sim.admin.exists("/config/brokers/<default>"):
        _merge_broker_config(sim, "<default>", {"log.cleaner.threads": "2"})
    return Planted(check_id_of(plant), path="/config/brokers/<default>")


@readiness_planter("kraft_quota_invalid")
def _quota_invalid(sim: Simulator, plant: str) -> Planted:
    """A client-id quota whose value is not a number (written around the config tool's validation)."""
    client = subject_name(plant)
    path = f"/config/clients/{client}"
    create_znode(sim, path, sim.encoder.config({"producer_byte_rate": "10MB", "consumer_byte_rate": "2097152"}))
    config_change(sim, "clients", client)
    return Planted(check_id_of(plant), path=path)


@readiness_planter("kraft_quota_invalid:user_client")
def _quota_user_client_malformed(sim: Simulator, plant: str) -> Planted:
    """A users/<u>/clients/<c> quota whose value is no number: ``ZkConfigMigrationClient.iterateClientQuotas``
    throws "Unexpected client quota configuration value" on it. The user above holds no config of its own,
    as ``createRecursive`` leaves it."""
    user = subject_name(plant)
    path = f"/config/users/{user}/clients/reporting-app"
    sim.admin.ensure_path(f"/config/users/{user}/clients")
    sim.admin.create(path, sim.encoder.config({"producer_byte_rate": "1048576", "consumer_byte_rate": "unlimited"}))
    sim.counts.creates += 1
    config_change(sim, "users", f"{user}/clients/reporting-app")
    return Planted(check_id_of(plant), path=path)


@readiness_planter("kraft_quota_odd_entity_name", "kraft_quota_odd_entity_name:default")
def _quota_odd_entity_name(sim: Simulator, plant: str) -> Planted:
    """A quota on a %-sanitized user principal (a TLS distinguished name), or the client-id default
    ``<default>``: migrated under the wrong name before 3.6.2/3.7.1."""
    if plant.endswith(":default"):
        path = "/config/clients/<default>"
        create_znode(sim, path, sim.encoder.config({"request_percentage": "200"}))
        config_change(sim, "clients", "<default>")
        return Planted(check_id_of(plant), path=path)
    user = sanitize("CN=planted-odd-entity,OU=ops")
    path = f"/config/users/{user}"
    create_znode(sim, path, sim.encoder.config({"producer_byte_rate": "1048576"}))
    config_change(sim, "users", user)
    return Planted(check_id_of(plant), path=path)


# -- R13, R15, R16: brokers ----------------------------------------------------------------------------
def _register(sim: Simulator, broker: BrokerInfo, encoder: Encoder | None = None) -> None:
    sim.register_broker(broker, (encoder or sim.encoder).broker(broker))


@readiness_planter("kraft_no_common_listener")
def _no_common_listener(sim: Simulator, plant: str) -> Planted:
    """A live broker that advertises only a listener no other broker has."""
    broker_id = planted_broker_id(sim)
    host = f"edge{broker_id}"
    base = make_broker(sim.model.era, broker_id, now_ms(), sim.model.brokers[0].rack, host)
    broker = BrokerInfo(base.broker_id, host, base.jmx_port, base.timestamp_ms,
                        (Listener("EDGE", "SASL_SSL", f"{host}.example.com", 9095),), base.rack)
    _register(sim, broker)
    return Planted(check_id_of(plant), path="/brokers/ids")


@readiness_planter("kraft_generated_broker_ids")
def _generated_broker_id(sim: Simulator, plant: str) -> Planted:
    """A broker started with ``broker.id.generation.enable``: it bumps /brokers/seqid and takes
    1000 + its new version as id (KafkaServer.getOrGenerateBrokerId)."""
    while True:
        stat = sim.admin.set("/brokers/seqid", b"")
        sim.counts.sets += 1
        broker_id = RESERVED_BROKER_MAX_ID + stat.version
        if broker_id not in sim.broker_sessions:
            break
    _register(sim, make_broker(sim.model.era, broker_id, now_ms(), sim.model.brokers[0].rack))
    return Planted(check_id_of(plant), broker_id=broker_id, path=f"/brokers/ids/{broker_id}")


@readiness_planter("kraft_generated_broker_ids:seqid")
def _seqid_used(sim: Simulator, plant: str) -> Planted:
    """/brokers/seqid at version > 0: a broker id was generated once (already so after the broker plant)."""
    if not sim.admin.exists("/brokers/seqid").version:
        sim.admin.set("/brokers/seqid", b"")
        sim.counts.sets += 1
    return Planted(check_id_of(plant), path="/brokers/seqid")


@readiness_planter("kraft_ibp_too_low")
def _old_registration(sim: Simulator, plant: str) -> Planted:
    """A live broker whose registration is v4, as brokers with inter.broker.protocol.version < 2.7 write it
    (same listeners as the others)."""
    broker_id = planted_broker_id(sim)
    _register(sim, make_broker(sim.model.era, broker_id, now_ms(), sim.model.brokers[0].rack), Encoder(ERAS["2.x"]))
    return Planted(check_id_of(plant), broker_id=broker_id, path=f"/brokers/ids/{broker_id}")


@readiness_planter("kraft_ibp_too_low:feature")
def _feature_v1(sim: Simulator, plant: str) -> Planted:
    """/feature v1 (enabled, no features), as a controller with IBP 2.7 to 3.2 writes it."""
    data = Encoder(ERAS["2.8"]).feature()
    write_znode(sim, "/feature", data)
    return Planted(check_id_of(plant), path="/feature")


# -- R17–R20: cluster nodes ---------------------------------------------------------------------------
MISSING_ZNODES = {"kraft_cluster_id_missing": "/cluster/id", "kraft_controller_epoch_missing": "/controller_epoch"}


@readiness_planter(*MISSING_ZNODES)
def _znode_missing(sim: Simulator, plant: str) -> Planted:
    """/cluster/id or /controller_epoch deleted."""
    path = MISSING_ZNODES[check_id_of(plant)]
    if sim.admin.exists(path):
        sim.admin.delete(path)
        sim.counts.deletes += 1
    return Planted(check_id_of(plant), path=path)


@readiness_planter("kraft_producer_id_block_invalid")
def _producer_id_block_invalid(sim: Simulator, plant: str) -> Planted:
    """A truncated producer-id block: ``ProducerIdBlockZNode.parseProducerIdBlockData`` fails on it."""
    data = b'{"version":1,"broker":1,"block_start":"4000","block_end":"49'
    write_znode(sim, "/latest_producer_id_block", data)
    return Planted(check_id_of(plant), path="/latest_producer_id_block", implied=("malformed_znode",))


@readiness_planter("kraft_secured_znodes")
def _secured_znode(sim: Simulator, plant: str) -> Planted:
    """A Kafka znode with the ACL ``zookeeper.set.acl=true`` brokers give it: all rights for the creating
    principal (the simulator's digest identity), read for the world (so the auditor still reads it)."""
    identity = sim.auth or ("digest", f"kafka-zk-audit-simulator:{secrets.token_hex(16)}")
    sim.admin.ensure_path(SECURED_PATH)
    owner = KazooClient(hosts=sim.hosts, auth_data=[identity], timeout=sim.timeout)
    owner.start(timeout=sim.timeout)
    try:
        owner.set_acls(SECURED_PATH, CREATOR_ALL_ACL + READ_ACL_UNSAFE)
    finally:
        owner.stop()
        owner.close()
    return Planted(check_id_of(plant), path=SECURED_PATH)


READINESS_PLANTS: tuple[str, ...] = tuple(READINESS_PLANTERS)


# -- what the base cluster already carries ---------------------------------------------------------------
def inherent_readiness(sim: Simulator) -> list[Planted]:
    """The readiness conditions the era's healthy cluster (``Simulator.write``) carries without any plant."""
    model = sim.model
    if model is None:
        raise RuntimeError("write() a cluster first")
    era = model.era
    found: list[Planted] = []
    if era.topic_version < 3:
        found += [Planted("kraft_topic_without_id", topic=name, path=layout.topic_path(name)) for name in model.topics]
    if era.broker_version < 5:
        found += [Planted("kraft_ibp_too_low", broker_id=b, path=f"/brokers/ids/{b}") for b in model.broker_ids]
    if era.feature_version != 2:
        found.append(Planted("kraft_ibp_too_low", path="/feature"))
    if not era.at_least(0, 10, 1):
        found.append(Planted("kraft_cluster_id_missing", path="/cluster/id"))
    found += [Planted("kraft_generated_broker_ids", broker_id=b, path=f"/brokers/ids/{b}")
              for b in model.broker_ids if b > RESERVED_BROKER_MAX_ID]
    if era.at_least(0, 10, 1):
        found.append(Planted("kraft_quota_odd_entity_name", path="/config/users/<default>"))
    if era.at_least(1, 0, 0):
        found.append(Planted("kraft_quota_odd_entity_name", path="/config/users/CN%3Dreport-app%2COU%3Dops"))
    if era.at_least(2, 8, 0):
        found.append(Planted("kraft_quota_odd_entity_name", path="/config/ips/<default>"))
    if era.at_least(1, 1, 0):
        found.append(Planted("kraft_default_broker_config", path="/config/brokers/<default>"))
    if not era.secured:
        return found
    if era.at_least(1, 0, 0):
        found.append(Planted("kraft_scram_credentials", path="/config/users/alice"))
    if era.acl_resource_types:
        topic = next((name for name in model.topics if not name.startswith("__")), "report-log")
        group = model.groups[0].group_id if model.groups else "report-log-consumer"
        paths = [f"/kafka-acl/Topic/{topic}", f"/kafka-acl/Group/{group}", "/kafka-acl/Cluster/kafka-cluster"]
        if era.at_least(2, 0, 0):
            paths.append("/kafka-acl-extended/prefixed/Topic/report-")
        found += [Planted("kraft_acls_present", path=path) for path in paths]
    if era.delegation_token_version:
        found += [Planted("kraft_delegation_tokens", path=f"/delegation_token/tokens/{token}")
                  for token in sim.admin.get_children("/delegation_token/tokens")]
    return found

