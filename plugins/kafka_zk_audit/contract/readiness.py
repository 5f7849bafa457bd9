"""ZooKeeper → KRaft migration readiness: the conditions, their level per target version, and the verdict.

A readiness condition is something in the ZooKeeper tree that blocks or endangers a KIP-866 migration
(Kafka 3.4–3.9); ``condition_id`` is its number in ``notes/kraft-migration-readiness.md`` (R01–R20, R14
being the node-id list of the report, not a row). How bad it is depends on the Kafka version the operator
migrates with (``migration.target_version``): :func:`level_for` gives the level of a check at a target,
``None`` when it is no problem there. Readiness is not health: its rows never become findings or alerts.

The phase of a migration in flight (``PHASES``) is named here too: ``audit/checks/migration.py`` tells them apart,
the readiness report shows them.

Pure Python; ``audit/checks/readiness/`` computes the rows in Spark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_zk_audit.contract.catalogue import FINDING_SUBJECT

Version = tuple[int, int, int]

# The readiness vocabulary, worst first.
LEVELS: tuple[str, ...] = ("blocker", "high", "warn", "info")
# Levels that make the verdict "ready_with_warnings" (a blocker makes it "blocked"; info changes nothing).
WARNING_LEVELS = frozenset({"high", "warn"})
VERDICTS: tuple[str, ...] = ("blocked", "ready_with_warnings", "ready")

# The phases of a ZooKeeper → KRaft migration as /migration and /controller show them (readiness.json's ``phase``),
# in the order a migration goes through them; ``reverted`` is a rolled-back attempt, ``unknown`` anything else.
PHASES: tuple[str, ...] = ("not_started", "waiting_for_brokers", "initial_load", "dual_write", "reverted", "unknown")
NOT_STARTED, WAITING_FOR_BROKERS, INITIAL_LOAD, DUAL_WRITE, REVERTED, UNKNOWN_PHASE = PHASES
# The columns of a readiness row (contract.schemas.READINESS) that name its subject, as the report shows them: a
# finding's.
SUBJECT_COLUMNS: tuple[str, ...] = FINDING_SUBJECT

# The Kafka releases that migrate from ZooKeeper to KRaft (KIP-866): 3.4 to 3.9.
FIRST_MINOR, LAST_MINOR = 4, 9
DEFAULT_TARGET = "3.9"
_TARGET = re.compile(r"3\.(\d)(?:\.(\d{1,3}))?")
TARGET_HELP = 'write the Kafka version you migrate with, "3.4" to "3.9", optionally with a patch such as "3.5.1"'


def parse_target(text: object) -> Version:
    """A target Kafka version "3.4".."3.9" (optional patch, "3.6.1") as (3, minor, patch); ValueError otherwise.

    "3.5" means any 3.5 release and reads as 3.5.0, the earliest (its limitations apply).
    """
    match = _TARGET.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None or not FIRST_MINOR <= int(match.group(1)) <= LAST_MINOR:
        raise ValueError(
            f"target version {text!r} is not a Kafka release that migrates from ZooKeeper to KRaft; {TARGET_HELP}"
        )
    return 3, int(match.group(1)), int(match.group(2) or 0)


def format_version(version: Version) -> str:
    """(3, 6, 1) as "3.6.1", (3, 5, 0) as "3.5"."""
    major, minor, patch = version
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


@dataclass(frozen=True)
class LevelRule:
    """``level`` for targets from ``since`` (inclusive, None: any) up to ``until`` (exclusive, None: any)."""

    level: str
    since: Version | None = None
    until: Version | None = None

    def applies(self, target: Version) -> bool:
        return (self.since is None or target >= self.since) and (self.until is None or target < self.until)

    def describe(self) -> str:
        """E.g. "blocker below 3.6.1", "warn from 3.6.1", "blocker from 3.5 below 3.5.2", "high"."""
        bounds = [f"from {format_version(self.since)}" if self.since else "",
                  f"below {format_version(self.until)}" if self.until else ""]
        return " ".join([self.level, *[b for b in bounds if b]])


@dataclass(frozen=True)
class Condition:
    """One readiness check: what it detects, what to do, the Kafka code that shows why, and its level rule."""

    condition_id: str
    check_id: str
    title: str
    detects: str
    remedy: str
    source: str
    levels: tuple[LevelRule, ...]

    def level_at(self, target: Version) -> str | None:
        """The level of this condition's rows at the target version (None: no problem there, no row)."""
        return next((rule.level for rule in self.levels if rule.applies(target)), None)

    def describe_levels(self) -> str:
        """The level rule in words, e.g. "blocker below 3.6.1; warn from 3.6.1"; none listed: no row at all."""
        return "; ".join(rule.describe() for rule in self.levels)


def _always(level: str) -> tuple[LevelRule, ...]:
    return (LevelRule(level),)


CONDITIONS: tuple[Condition, ...] = (
    Condition(
        "R01", "kraft_migration_leftover", "/migration left over from a reverted migration",
        "/migration records KRaft metadata (offset > 0) while a ZooKeeper-mode controller holds /controller "
        "(ephemeral, kraftControllerEpoch -1): a migration was rolled back",
        "Delete /migration (and make sure no KRaft controller quorum of the old attempt is running) before "
        "re-attempting; a new quorum that finds it takes the migration as done and skips the metadata load.",
        "KRaftMigrationDriver (3.9) ~686-718, 823ff; docs/ops.html, reverting to ZooKeeper mode",
        _always("blocker"),
    ),
    Condition(
        "R02", "kraft_replica_on_unregistered_broker", "replicas on unregistered brokers",
        "a partition assigns a replica to a broker id that is not registered under /brokers/ids",
        "Start that broker, or reassign its partitions to live brokers (kafka-reassign-partitions) before "
        "migrating; the KRaft controller waits until every broker named in an assignment has registered.",
        "KRaftMigrationDriver.areZkBrokersReadyForMigration (3.9)",
        _always("blocker"),
    ),
    Condition(
        "R03", "kraft_topic_without_id", "topics without a topic id",
        "a /brokers/topics/<t> znode without topic_id, or one that does not parse",
        "Run a ZooKeeper-mode controller with inter.broker.protocol.version >= 2.8 once (a rolling restart at "
        "that IBP) so it assigns topic ids; fix or delete a topic znode that does not parse.",
        "ZkTopicMigrationClient.iterateTopics ~67 (topicIdOpt.get); ZkData TopicZNode",
        _always("blocker"),
    ),
    Condition(
        "R04", "kraft_partition_state_missing", "assigned partitions without state",
        "an assigned partition has no …/partitions/<p>/state znode",
        "Let the ZooKeeper-mode controller create the state first (check the controller; a controller failover "
        "initialises new partitions); otherwise KRaft invents leader and ISR from the replica list.",
        "ZkTopicMigrationClient.iterateTopics ~89",
        _always("high"),
    ),
    Condition(
        "R05", "kraft_pending_topic_deletion", "pending topic deletions",
        "a /admin/delete_topics/<t> marker",
        "Let the deletions finish (all replicas' brokers up, topic deletion enabled) or migrate with 3.6.1+, "
        "which skips them; before 3.6.1 the topic is migrated as a live topic.",
        "ZkTopicMigrationClient.iterateTopics ~52; KAFKA-15605 (fixed in 3.6.1)",
        (LevelRule("blocker", until=(3, 6, 1)), LevelRule("warn", since=(3, 6, 1))),
    ),
    Condition(
        "R06", "kraft_reassignment_in_flight", "reassignments in flight",
        "adding_replicas/removing_replicas in a topic znode, or /admin/reassign_partitions",
        "Let the reassignments complete (or cancel them with kafka-reassign-partitions --cancel) before "
        "migrating, so KRaft does not start from a half-moved assignment.",
        "ZkMigrationClient.visitPartition (adding/removing replicas copied into KRaft)",
        _always("warn"),
    ),
    Condition(
        "R07", "kraft_scram_credentials", "SCRAM credentials",
        "/config/users/<u> holds SCRAM-SHA-256 or SCRAM-SHA-512 credentials",
        "Migrate with 3.5+ and metadata.version >= 3.5-IV2 on the controllers, which migrate SCRAM credentials; "
        "3.4 does not, so those users could no longer authenticate.",
        "ZkMigrationClient (3.4.0, no SCRAM); ZkConfigMigrationClient.visitScramCredential (3.5+)",
        (LevelRule("blocker", until=(3, 5, 0)), LevelRule("info", since=(3, 5, 0))),
    ),
    Condition(
        "R08", "kraft_acls_present", "ACLs (an authorizer is in use)",
        "ACL resource znodes under /kafka-acl or /kafka-acl-extended",
        "Migrate with 3.5.1+ (earlier releases reject brokers with an authorizer) and configure the controllers "
        "with org.apache.kafka.metadata.authorizer.StandardAuthorizer and the same super users.",
        "KafkaConfig (3.4, 3.5.0: authorizer rejected with migration); KAFKA-15098; docs/ops.html",
        (LevelRule("blocker", until=(3, 5, 1)), LevelRule("info", since=(3, 5, 1))),
    ),
    Condition(
        "R08", "kraft_acl_unknown_resource_type", "ACLs of unknown resource types",
        "an ACL znode whose resource type or pattern type Kafka does not know",
        "Delete or rewrite these ACL znodes before migrating; the migration drops ACLs it cannot parse, so "
        "whatever they allowed or denied is lost.",
        "ZkAclMigrationClient / ZkData ZkAclStore (ResourceType.fromString)",
        _always("warn"),
    ),
    Condition(
        "R09", "kraft_delegation_tokens", "delegation tokens",
        "a /delegation_token/tokens/<id> znode",
        "Migrate with 3.6.0+, which migrates delegation tokens (and set delegation.token.secret.key on the "
        "controllers); with an earlier release expire the tokens and issue new ones after the migration.",
        "ZkMigrationClient.migrateDelegationTokens (3.6+); KAFKA-15219",
        (LevelRule("blocker", until=(3, 6, 0)),),
    ),
    Condition(
        "R10", "kraft_encrypted_passwords", "encrypted dynamic passwords",
        "a dynamic broker config under /config/brokers holds a password (encrypted with password.encoder.secret)",
        "Give every KRaft controller the same password.encoder.secret as the brokers; otherwise it cannot "
        "decrypt these passwords and the migrated values are unusable.",
        "KAFKA-14801; ZkConfigMigrationClient (password configs decrypted with password.encoder.secret)",
        _always("high"),
    ),
    Condition(
        "R11", "kraft_default_broker_config", "cluster-default broker config",
        "a /config/brokers/<default> znode",
        "Migrate with 3.5.2+ or a 3.4 release, or move the cluster-wide dynamic configs into each broker's "
        "static configuration and delete /config/brokers/<default> first.",
        "ZkMigrationClient (3.5.0-3.5.1, <default> broker entity migrated wrongly)",
        (LevelRule("blocker", since=(3, 5, 0), until=(3, 5, 2)),),
    ),
    Condition(
        "R12", "kraft_quota_invalid", "invalid quota entities",
        "a quota config whose value is not a number, or a malformed users/<u>/clients/<c> entity",
        "Fix or delete the quota with kafka-configs (a quota value must be a number); the controller fails the "
        "migration on a quota it cannot parse.",
        "ZkConfigMigrationClient.iterateClientQuotas",
        _always("blocker"),
    ),
    Condition(
        "R12", "kraft_quota_odd_entity_name", "quota entities with <default> or sanitized names",
        "a quota entity named <default> or with %-sanitized characters",
        "Migrate with 3.6.2+ (or 3.7.1+), which decode these names; earlier releases migrate them under the "
        "sanitized name, so the quota no longer applies to the intended user or client.",
        "ZkConfigMigrationClient; KAFKA-16222, KAFKA-16411",
        (LevelRule("high", until=(3, 6, 2)), LevelRule("high", since=(3, 7, 0), until=(3, 7, 1))),
    ),
    Condition(
        "R13", "kraft_no_common_listener", "no listener shared by all brokers",
        "no listener name is advertised by every broker under /brokers/ids",
        "Give every broker a common listener (and use it as inter.broker.listener.name) before migrating; the "
        "KRaft controller must reach all brokers through one listener.",
        "ClusterControlManager (KAFKA-16468)",
        _always("high"),
    ),
    Condition(
        "R15", "kraft_generated_broker_ids", "generated broker ids",
        "a broker id above reserved.broker.max.id (1000 by default), or /brokers/seqid used",
        "Give those brokers explicit broker.id (node.id) values below reserved.broker.max.id before migrating "
        "with 3.9, which rejects generated broker ids.",
        "KafkaConfig (3.9, KAFKA-17543)",
        (LevelRule("high", since=(3, 9, 0)),),
    ),
    Condition(
        "R16", "kraft_ibp_too_low", "inter.broker.protocol.version provably too low",
        "a broker registration below version 5 or /feature absent or disabled (IBP < 2.7), or /feature "
        "version 1 (IBP < 3.3-IV0)",
        "Upgrade every broker to the target release and raise inter.broker.protocol.version to at least 3.4 "
        "(rolling restarts) before enabling the migration.",
        "KafkaConfig (migration requires IBP >= 3.4); ZkData BrokerInfo (v5 from 2.7-IV0), FeatureZNode "
        "(enabled from 2.7, v2 from 3.3-IV0)",
        _always("blocker"),
    ),
    Condition(
        "R17", "kraft_cluster_id_missing", "cluster id missing",
        "no /cluster/id, or one without an id",
        "Start the brokers once with a release that writes /cluster/id (0.10.1+); the KRaft controllers must be "
        "formatted with that same cluster id.",
        "docs/ops.html (kafka-storage format --cluster-id from /cluster/id)",
        _always("blocker"),
    ),
    Condition(
        "R18", "kraft_controller_epoch_missing", "controller epoch missing",
        "no /controller_epoch",
        "Let a ZooKeeper-mode controller start and write /controller_epoch before migrating; the KRaft "
        "controller's claim of /controller fails without it.",
        "KafkaZkClient.tryRegisterKRaftControllerAsActiveController ~194",
        _always("blocker"),
    ),
    Condition(
        "R19", "kraft_producer_id_block_invalid", "producer-id block unparseable",
        "/latest_producer_id_block does not parse",
        "Rewrite /latest_producer_id_block with the last block Kafka handed out (or let a broker allocate a new "
        "block); the migration fails on it, and before 3.5.2/3.6.1 it may hand out duplicate producer ids.",
        "ZkMigrationClient.migrateProducerId; KAFKA-15552",
        _always("blocker"),
    ),
    Condition(
        "R20", "kraft_secured_znodes", "secured Kafka znodes",
        "a Kafka znode with a ZooKeeper ACL other than world:anyone:cdrwa (zookeeper.set.acl, CREATOR_ALL)",
        "Configure the KRaft controllers' ZooKeeper client with the principal that owns these znodes "
        "(JAAS Client section, zookeeper.set.acl=true); otherwise their dual writes fail with NoAuth.",
        "ZkMigrationClient.wrapZkException; KafkaZkClient (zookeeper.set.acl)",
        _always("high"),
    ),
)

BY_CHECK_ID: dict[str, Condition] = {condition.check_id: condition for condition in CONDITIONS}
READINESS_CHECK_IDS: tuple[str, ...] = tuple(BY_CHECK_ID)
LEVEL_RANK: dict[str, int] = {level: rank for rank, level in enumerate(LEVELS)}


def level_for(check_id: str, target: str | Version) -> str | None:
    """The level of a readiness check's rows at the target version ("3.6.1" or (3, 6, 1)); None: no row."""
    version = parse_target(target) if isinstance(target, str) else target
    return BY_CHECK_ID[check_id].level_at(version)


def verdict(levels: Iterable[str | None]) -> str:
    """``blocked`` with any blocker, else ``ready_with_warnings`` with any high or warn, else ``ready``."""
    seen = set(levels)
    if "blocker" in seen:
        return "blocked"
    return "ready_with_warnings" if seen & WARNING_LEVELS else "ready"


@dataclass(frozen=True)
class Prerequisite:
    """A migration prerequisite ZooKeeper cannot show: what to check, why it matters, how to check it."""

    item: str
    why: str
    how: str


NOT_VISIBLE: tuple[Prerequisite, ...] = (
    Prerequisite(
        "inter.broker.protocol.version >= 3.4 on every broker, and the controllers' metadata.version",
        "ZooKeeper shows only lower bounds (R16); the migration needs IBP >= 3.4 and the KRaft quorum's "
        "metadata.version must match it (3.5-IV2+ for SCRAM).",
        "Read inter.broker.protocol.version in each broker's server.properties; on the controllers run "
        "kafka-features describe after formatting.",
    ),
    Prerequisite(
        "JBOD (several log.dirs) on brokers",
        "3.5.2-3.6 reject JBOD brokers in migration; 3.7+ need IBP/metadata.version >= 3.7-IV2; 3.8+ shut a "
        "broker down on a log-dir failure during migration (KAFKA-16431).",
        "Check log.dirs in each broker's configuration (kafka-log-dirs --describe lists them).",
    ),
    Prerequisite(
        "zookeeper.metadata.migration.enable and the controller quorum settings",
        "Brokers and controllers need zookeeper.metadata.migration.enable=true, zookeeper.connect and "
        "controller.quorum.voters (or bootstrap servers) with the controller listener.",
        "Review server.properties of every broker and controller before each rolling restart.",
    ),
    Prerequisite(
        "authorizer class",
        "ACLs in ZooKeeper (R08) show an authorizer was used; the controllers and migrated brokers need "
        "StandardAuthorizer with the same super.users.",
        "Check authorizer.class.name and super.users on brokers and controllers.",
    ),
    Prerequisite(
        "password.encoder.secret on the controllers",
        "Encrypted dynamic passwords (R10) can only be migrated by controllers with the brokers' secret.",
        "Compare password.encoder.secret of the controllers with the brokers' (without logging it).",
    ),
    Prerequisite(
        "controllers' node ids",
        "A controller's node.id must not equal any broker id in use (the node id list of this report).",
        "Compare node.id of every controller with the listed ids.",
    ),
)
