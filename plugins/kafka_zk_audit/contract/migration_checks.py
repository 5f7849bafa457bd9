"""The migration verification's findings: each kind of divergence between ZooKeeper's last state and the KRaft
metadata a ZK → KRaft migration wrote, and what Kafka leaves out on purpose (no finding).

One ``Divergence`` per kind: check id ``migration_diverged_<kind>`` (plus the dual-write lag), severity, meaning,
the Kafka code the mapping rule comes from (apache/kafka paths) and the remedy. The rules themselves, release by
release (3.4–3.9), are in ``snapshot.migration.mapping``. Pure Python: the CLI, the reports and the docs read it.
"""

from __future__ import annotations

from dataclasses import dataclass

ZMC = "core/src/main/scala/kafka/zk/ZkMigrationClient.scala"
ZTMC = "core/src/main/scala/kafka/zk/migration/ZkTopicMigrationClient.scala"
ZCMC = "core/src/main/scala/kafka/zk/migration/ZkConfigMigrationClient.scala"
ZAMC = "core/src/main/scala/kafka/zk/migration/ZkAclMigrationClient.scala"
KMD = "metadata/src/main/java/org/apache/kafka/metadata/migration/KRaftMigrationDriver.java"
KMZW = "metadata/src/main/java/org/apache/kafka/metadata/migration/KRaftMigrationZkWriter.java"
ZD = "core/src/main/scala/kafka/zk/ZkData.scala"
KML = "core/src/main/scala/kafka/raft/KafkaMetadataLog.scala"


@dataclass(frozen=True)
class Divergence:
    """One kind of divergence a migration diff reports."""

    check_id: str
    severity: str
    meaning: str
    source: str
    remedy: str


DIVERGENCES: tuple[Divergence, ...] = (
    Divergence("migration_diverged_topic", "critical",
               "a topic ZooKeeper holds has no TopicRecord of the same name, its topic id differs, or KRaft holds a "
               "topic ZooKeeper does not", f"{ZTMC} (iterateTopics: TopicRecord from /brokers/topics/<t>, topic_id)",
               "Do not finalize. Compare the topic in both; re-run the migration (a new KRaft quorum) or create the "
               "missing topic in KRaft with its ZooKeeper id before any client uses it."),
    Divergence("migration_diverged_partition", "critical",
               "a partition missing or extra, or its replicas (order), adding/removing replicas, ISR, leader, leader "
               "epoch or (at the load) partition epoch differ",
               f"{ZTMC} (iterateTopics: PartitionRecord from the assignment and the state znode; PartitionEpoch = "
               "the state znode's version)",
               "Do not finalize. Reassign or elect the partition in KRaft to the state ZooKeeper shows (or the "
               "reverse) and re-run the diff; a replica order that differs moves the preferred leader."),
    Divergence("migration_diverged_config", "error",
               "a topic or broker config key missing, extra or different (broker <default> = \"\"; passwords by the "
               "fingerprint of their clear text when the brokers' password.encoder.secret is given, else by key)",
               f"{ZCMC} (iterateBrokerConfigs, readTopicConfigs); {ZMC} @3.4 (migrateBrokerConfigs)",
               "Set the config in KRaft (kafka-configs --bootstrap-server) to the ZooKeeper value, or the reverse "
               "while dual writes run; a password config that differs: set it again in KRaft."),
    Divergence("migration_diverged_password_encoded", "error",
               "a KRaft password config holds ZooKeeper's encrypted text (KAFKA-14801: the controller had no "
               "password.encoder.secret, or the release is 3.4)",
               f"{ZCMC} (passwordEncoder.decode, 3.5.0+); core/src/main/scala/kafka/server/ControllerServer.scala",
               "Give the controllers the brokers' password.encoder.secret and set the password config again in "
               "KRaft (kafka-configs --alter --add-config); brokers cannot use the encrypted text."),
    Divergence("migration_diverged_quota", "error",
               "a client quota entity or value missing, extra or different (values compared as numbers)",
               f"{ZCMC} (iterateClientQuotas, buildClientQuotaEntityData)",
               "Set the quota in KRaft (kafka-configs --entity-type users|clients|ips --alter) to the ZooKeeper "
               "value."),
    Divergence("migration_diverged_quota_name", "error",
               "a quota or SCRAM entity name still sanitized, a default entity written as \"\" or a 3.4 entity "
               "type (KAFKA-16222, KAFKA-16411): KRaft does not apply it to the client it names",
               f"{ZCMC} (buildClientQuotaEntityData: Sanitizer.desanitize, null default, 3.6.2/3.7.1+); {ZMC} @3.4",
               "Delete the mangled entity in KRaft and set the quota (or SCRAM credential) again under the real "
               "name; migrate with 3.6.2, 3.7.1 or later."),
    Divergence("migration_diverged_scram", "error",
               "a SCRAM credential missing, extra or different (compared by fingerprint)",
               f"{ZCMC} (iterateClientQuotas: UserScramCredentialRecord, 3.5.0+)",
               "Set the user's SCRAM credential again in KRaft (kafka-configs --alter --add-config "
               "'SCRAM-SHA-256=[password=…]')."),
    Divergence("migration_diverged_acl", "error",
               "an ACL (resource, pattern, principal, host, operation, permission) missing or extra; ids are "
               "KRaft's own and never compared", f"{ZAMC} (iterateAcls); {ZMC} (migrateAcls: Uuid.randomUuid)",
               "Add the missing ACL in KRaft (kafka-acls --bootstrap-server --add) or remove the extra one; an "
               "authorizer with a missing ACL denies the client."),
    Divergence("migration_diverged_producer_ids", "critical",
               "KRaft's next producer id is not past ZooKeeper's last block (KAFKA-15552: producer ids handed out "
               "twice), or the block was not migrated",
               f"{ZMC} (migrateProducerId: nextBlockFirstId, 3.5.2/3.6.1+); {KMZW} (writeProducerId)",
               "Before producers use KRaft, move KRaft's next producer id past ZooKeeper's block_end (migrate with "
               "3.5.2/3.6.1+); idempotent and transactional producers may otherwise share ids."),
    Divergence("migration_diverged_token", "error",
               "a delegation token missing or extra (compared by id: its HMAC is on neither side)",
               "core/src/main/scala/kafka/zk/migration/ZkDelegationTokenMigrationClient.scala (3.6.0+)",
               "Renew or re-create the token in KRaft; clients holding the missing token fail to authenticate."),
    Divergence("migration_diverged_state", "critical",
               "the log shows no completed migration at the offset ZooKeeper reflects (no MIGRATION record, an open "
               "or aborted ZK Migration transaction only), or /migration names an offset past the log",
               f"{KMD} (MigrateMetadataEvent, completeMigration); "
               "metadata/src/main/java/org/apache/kafka/controller/QuorumController.java (MigrationRecordConsumer)",
               "Do not finalize: the load did not finish. Check the KRaft controller's log, fix what aborted it and "
               "let the controller run the load again."),
    Divergence("migration_diverged_offset_epoch", "error",
               "the batch holding /migration's kraft_metadata_offset has another leader epoch than its "
               "kraft_metadata_epoch (or one newer than its kraft_controller_epoch): ZooKeeper reflects another log",
               f"{ZD} (MigrationZNode); {KMD} (MetadataChangeEvent: image.highestOffsetAndEpoch())",
               "Check that the metadata directory is the active controller's and current (copy it again); a log "
               "truncated after a leader change rewrote the offsets ZooKeeper names: restart the migration driver "
               "(a controller failover) so that it syncs ZooKeeper again, then re-run the diff."),
    Divergence("migration_unverifiable", "error",
               "the migration could not be verified: the KRaft metadata directory is missing, unreadable or corrupt "
               "beyond use, or was truncated past /migration's offset with no checkpoint at or before it",
               f"{KML} (deleteBeforeSnapshot: segments before the newest snapshot are deleted)",
               "Give the audit read access to the controller's metadata.log.dir (clusters[].migration.kraft), copy "
               "the whole __cluster_metadata-0 folder with its .checkpoint files, or run the diff before the "
               "controller deletes the segments; the verdict's error says which file and why."),
    Divergence("migration_dual_write_lagging", "error",
               "ZooKeeper trails KRaft by more records or time than the limit (/migration kraft_metadata_offset "
               "against the log's end)", f"{KMD} (MetadataChangeEvent: /migration written after each image)",
               "Check the active KRaft controller's log for ZooKeeper write errors; while dual writes stall, "
               "ZooKeeper-mode brokers read stale metadata and a rollback loses the changes."),
)

# The finding of an entry of each kind (snapshot.migration.mapping) that is missing, extra or different.
CHECK_OF_KIND = {"topic": "migration_diverged_topic", "partition": "migration_diverged_partition",
                 "config": "migration_diverged_config", "quota": "migration_diverged_quota",
                 "scram": "migration_diverged_scram", "acl": "migration_diverged_acl",
                 "token": "migration_diverged_token", "producer_ids": "migration_diverged_producer_ids"}
BY_ID: dict[str, Divergence] = {divergence.check_id: divergence for divergence in DIVERGENCES}
DIVERGENCE_IDS: tuple[str, ...] = tuple(BY_ID)

# What Kafka leaves out of the migration on purpose: no finding. (what, Kafka code it comes from)
OMISSIONS: tuple[tuple[str, str], ...] = (
    ("topics pending deletion (/admin/delete_topics) on 3.6.1+: left out of the load (KAFKA-15605)",
     f"{ZTMC} (iterateTopics: allTopics -- topicDeletions)"),
    ("broker registrations and finalized features: ZooKeeper never had them (brokers register themselves)",
     "core/src/main/scala/kafka/server/KafkaServer.scala (BrokerRegistrationRequest); "
     f"{KMZW} (never written to ZooKeeper)"),
    ("ISR, leader and other changes past /migration's kraft_metadata_offset: dual writes have not reached "
     "ZooKeeper yet; the diff compares at that offset and reports the lag when it is past the limit",
     f"{KMD} (MetadataChangeEvent: the offset is written after the image's ZooKeeper writes)"),
    ("partition epoch against the state znode version once KRaft changed the partition after the load",
     f"{KMZW} (one SetData per published delta)"),
    ("controller_epoch of state znodes, /controller, /controller_epoch, /brokers/ids, /cluster/id, /feature, "
     "/admin/reassign_partitions, notifications, /consumers: not read by the load",
     f"{ZMC} (readAllMetadata)"),
    ("ACL ids (new random ids on every load) and the order of records, batches and transactions",
     f"{ZMC} (migrateAcls: Uuid.randomUuid)"),
    ("ACLs and SCRAM credentials on 3.4, delegation tokens before 3.6: not migrated by that release",
     f"{ZMC} @3.4, @3.5"),
    ("a password config's value when no password.encoder.secret is given (clusters[].migration."
     "password_encoder_secret_conn_id), or when it does not decode it: compared by key only (the verdict's notes say "
     "so)", f"{ZCMC} (passwordEncoder.decode); core/src/main/scala/kafka/utils/PasswordEncoder.scala"),
    ("a topic without /config/topics/<t>: the same as an empty config",
     f"{ZCMC} (readTopicConfigs); {KMZW} (KAFKA-16003)"),
)

# The entries table a paired snapshot's task lays out for the audit's diff (Warehouse.migration_entries_dir): one row
# per entity of one side (``side``: zk or kraft), keyed by (snapshot, kind, key); ``partition`` and ``broker_id`` are
# ints, the rest strings.
ENTRY_FIELDS = ("kind", "key", "value", "extra", "evidence", "topic", "partition", "broker_id", "path", "flag")
INT_ENTRY_FIELDS = ("partition", "broker_id")
SIDES = ("zk", "kraft")
# migration_diff.json's status: laid out by the snapshot task, then compared by the audit, or not comparable.
PREPARED, VERIFIED, DIVERGED, UNVERIFIED = "prepared", "verified", "diverged", "unverified"
EQUAL_LABELS = (("topic", "topics"), ("partition", "partitions"), ("config", "configs"), ("acl", "ACLs"),
                ("quota", "quotas"), ("scram", "users"))


def summary_line(findings: int, equal: dict[str, int], offset: int | None, release: str) -> str:
    """``migration verified at offset O (Kafka R): N topics, … equal``, or DIVERGED with the findings' count."""
    counts = ", ".join(f"{equal.get(kind, 0)} {label}" for kind, label in EQUAL_LABELS)
    verdict = "migration verified" if not findings else f"migration DIVERGED ({findings} finding(s))"
    at = f"offset {offset}" if offset is not None else "the log's end"
    return f"{verdict} at {at} (Kafka {release}): {counts} equal"
