"""What an operator should do about each check of the catalogue: one or two sentences per check id.

``docs/checks.md`` is generated from these and the catalogue (``scripts/generate_docs.py``); a test keeps
one remedy per catalogue id. The remedies say what Kafka itself does with the znode, so the first step
is finding out why Kafka did not (or who else wrote it).
"""

from __future__ import annotations

from kafka_zk_audit.contract.migration_checks import DIVERGENCES

REMEDIES: dict[str, str] = {
    # Partitions and replicas
    "leader_not_in_isr": (
        "Kafka never writes a leader outside its ISR, so find who rewrote the state znode (a hand edit or a "
        "third-party tool). Restarting the leader broker makes the controller hand leadership to a live ISR "
        "member (controlled shutdown) and write a consistent state; the old leader rejoins the ISR as a follower."
    ),
    "isr_not_subset_of_replicas": (
        "The ISR names a broker the topic znode does not assign, which happens when the assignment was rewritten "
        "without the controller (a hand edit or an interrupted tool). Restore the intended assignment with a "
        "reassignment (`kafka-reassign-partitions`) so the controller reconciles assignment and ISR."
    ),
    "leader_not_alive": (
        "The controller has not handled the leader's departure: check that a healthy controller exists (see the "
        "controller checks and its log). Restart the dead broker, or move the controller (delete `/controller`) "
        "so the new one elects leaders from the live ISR members."
    ),
    "offline_partition": (
        "No replica can serve the partition: bring back the brokers of its ISR (if they are alive and the leader "
        "is still -1, the controller is not working; see the controller checks). Only when they are lost for good, "
        "consider `unclean.leader.election.enable=true` for the topic, which loses the messages the new leader "
        "never received."
    ),
    "under_replicated": (
        "Look at the replicas missing from the ISR: their brokers must be up, have no failed log directory and "
        "keep up with the leader (disk, network, `replica.lag.time.max.ms`). Followers rejoin the ISR by "
        "themselves once they have caught up."
    ),
    "preferred_leader_not_leader": (
        "Run a preferred replica election (`kafka-leader-election --election-type preferred` on 2.4+, "
        "`kafka-preferred-replica-election` before 3.0) or keep `auto.leader.rebalance.enable=true`; it only "
        "moves leadership to a preferred replica that is alive and in the ISR."
    ),
    "replica_on_unknown_broker": (
        "A replica is assigned to a broker id that is not registered: start that broker, or if it was "
        "decommissioned, reassign its partitions to live brokers with `kafka-reassign-partitions`."
    ),
    "duplicate_replica": (
        "Kafka's own assignment code never lists a broker twice, so a hand edit or a third-party tool wrote this "
        "assignment; reassign the partition to distinct brokers with `kafka-reassign-partitions`."
    ),
    "replication_factor_inconsistent": (
        "Partitions of the topic keep different numbers of replicas outside any reassignment; bring them to one "
        "replication factor with a reassignment that adds or removes replicas (`kafka-reassign-partitions`)."
    ),
    "partition_state_missing": (
        "The controller has not initialised the partition (it was created while no controller was active, or the "
        "controller failed in between). Check the controller; a controller failover (delete `/controller`) makes "
        "the new controller bring new partitions online and write their state."
    ),
    "partition_state_orphaned": (
        "Kafka never removes partitions from a topic, so either the topic znode was rewritten with fewer "
        "partitions or a deletion stopped half-way. Restore the partition in the assignment if it was lost; "
        "otherwise delete the orphaned `…/partitions/<p>` subtree once no broker hosts that partition."
    ),
    "partition_epoch_ahead_of_controller": (
        "`/controller_epoch` went back (ZooKeeper restored from a backup, or the znode recreated or edited), and "
        "the controller refuses to change the leader of a partition whose state carries a higher epoch. Set "
        "`/controller_epoch` to at least the highest `controller_epoch` of the partition states, then move the "
        "controller (delete `/controller`)."
    ),
    "leader_epoch_regressed": (
        "Kafka only ever increases a leader epoch, so the state was rewritten or ZooKeeper restored from an older "
        "backup. Brokers ignore leadership changes whose epoch is not above the one they hold: check their logs for "
        "ignored LeaderAndIsr requests and find who rewrote the state."
    ),
    # Controller
    "controller_missing": (
        "No broker is acting as controller, so no leader election or ISR change is carried out: check that brokers "
        "run and are registered under `/brokers/ids`, and their logs for failed controller elections (ZooKeeper "
        "sessions, ACLs). Restarting a broker triggers an election."
    ),
    "controller_not_alive": (
        "The controller znode names a broker that is not registered. If `/controller` is persistent outside a KRaft "
        "migration, someone created it by hand and no election can happen until it is deleted; otherwise restart "
        "that broker or delete `/controller` so the live brokers elect a new controller."
    ),
    "controller_session_mismatch": (
        "`/controller` belongs to another ZooKeeper session than that broker's registration (a zombie session after "
        "an expiry, or another client wrote it). Delete `/controller` so the brokers elect a controller afresh, and "
        "check that broker's log for session expirations."
    ),
    "migration_dual_write_stalled": (
        "The active KRaft controller no longer mirrors metadata into ZooKeeper, so ZooKeeper-mode brokers and a "
        "rollback would see stale metadata. Check the KRaft controller's log for ZooKeeper errors (authentication, "
        "`MigrationClientException`, a fenced /controller_epoch) and its ZkWriteBehindLag metric; restart or move the "
        "active KRaft controller once the cause is fixed."
    ),
    "migration_stuck": (
        "Waiting: every ZooKeeper broker must register with `zookeeper.metadata.migration.enable=true`, the KRaft "
        "controller connect settings and IBP >= 3.4 (see the readiness report for replicas on unregistered brokers); "
        "roll the missing ones. Loading: read the active KRaft controller's log for the error that aborts "
        "'Starting ZK migration' and fix it before it retries."
    ),
    "migration_crash_loop": (
        "Each new KRaft leader starts the load over and fails again: read the KRaft controllers' logs around "
        "'Aborted metadata migration' for the record or znode that fails (the readiness report lists the usual ones: "
        "topics without ids, missing partition states, bad quotas) and fix it in ZooKeeper before the next attempt."
    ),
    "migration_rolled_back": (
        "If the rollback was deliberate, finish it as Kafka's documentation describes (stop the KRaft controllers, "
        "delete /controller and, before any new attempt, /migration). If not, two controllers may be writing: stop "
        "the ZooKeeper-mode controller (roll its broker without the migration settings changed) and compare the "
        "brokers' metadata before anything else."
    ),
    "migration_offset_regressed": (
        "KRaft offsets never go back while a migration lives, so /migration was rewritten by something other than "
        "the active KRaft controller (a restore from backup or a second quorum). Stop and find the writer before the "
        "KRaft controller acts on the older state."
    ),
    "controller_epoch_regressed": (
        "ZooKeeper was restored from an older backup or `/controller_epoch` was rewritten; brokers reject requests "
        "from a controller whose epoch is lower than one they have seen. Set `/controller_epoch` above the previous "
        "snapshot's value, then force a controller election (delete `/controller`)."
    ),
    # Brokers and topics
    "broker_registration_not_ephemeral": (
        "A persistent registration makes the broker look alive forever and stops the real broker with that id from "
        "registering (NodeExists at startup). Find who wrote it, delete the znode, and restart the broker."
    ),
    "broker_endpoint_conflict": (
        "Clients that connect to the shared host:port reach only one of the brokers, so requests for the other "
        "broker's partitions fail. Fix `advertised.listeners` (`advertised.host.name`/`advertised.port` on 0.8) of "
        "the misconfigured broker and restart it."
    ),
    "topic_config_missing": (
        "The topic was created by a tool that wrote only `/brokers/topics/<t>`, or its config znode was deleted; the "
        "topic runs on broker defaults. Set its intended overrides with `kafka-configs --alter --entity-type topics "
        "--entity-name <t> --add-config …`, or create `/config/topics/<t>` as `{\"version\":1,\"config\":{}}`."
    ),
    "deleted_topic_remnants": (
        "A topic deletion did not finish, or a creation stopped after writing the config. Once you are sure the "
        "topic is gone, delete the listed znodes: a later topic of the same name would find them (old consumers "
        "would resume from the old offsets)."
    ),
    # Admin operations
    "delete_topic_stuck": (
        "The controller cannot finish the deletion: check `delete.topic.enable=true` on every broker (before 0.10.2 "
        "a disabled deletion leaves the marker forever), that every replica's broker is online and that no "
        "reassignment of the topic is running; the controller log says why the topic is ineligible."
    ),
    "delete_marker_orphaned": (
        "There is nothing left to delete, but the marker stayed (deletion disabled on Kafka before 0.10.2, or a "
        "controller that stopped half-way). Delete `/admin/delete_topics/<t>`."
    ),
    "reassignment_stuck": (
        "Check the entry's target replicas: their brokers must be alive and catching up (throttles set with the "
        "reassignment slow them down; `kafka-reassign-partitions --verify` reports progress and removes throttles "
        "when done). A reassignment to a broker that is gone never completes: cancel it with "
        "`kafka-reassign-partitions --cancel` (2.5+), or on older versions delete `/admin/reassign_partitions` and "
        "move the controller (delete `/controller`)."
    ),
    "reassignment_invalid": (
        "The controller cannot carry out this entry (it names a partition that does not exist or a broker that is "
        "not registered). Cancel or remove the reassignment and submit one that names existing partitions and "
        "registered brokers."
    ),
    "preferred_election_stuck": (
        "The controller deletes this znode once it has attempted the election, successful or not, so a lasting one "
        "means no controller is processing it: check the controller and move it (delete `/controller`) if it is "
        "stuck, or delete the znode if the election is no longer wanted."
    ),
    "notification_backlog": (
        "Nobody consumes the queue. `isr_change` and `log_dir_event` children are the controller's to process: "
        "check it (a new controller clears both queues at failover). Stale `config_change` children mean the "
        "brokers do not process config changes, which they purge as they go: check their logs."
    ),
    # Old (ZooKeeper-based) consumer groups
    "owner_not_registered": (
        "The partition is claimed by a consumer that is no longer registered, so the group's rebalances fail on it "
        "(NodeExists) and nobody consumes it. Stop the process named in the owner (host and start time are part of "
        "the consumer id), or delete the owner znode so the group can rebalance."
    ),
    "partition_unowned": (
        "A rebalance failed or is in progress. If it lasts, look for ConsumerRebalanceFailedException "
        "(`rebalance.max.retries` exhausted) in the group's consumer logs and restart them, which rebalances the group."
    ),
    "partition_multiply_owned": (
        "Two kinds of client claim the partition, typically Kafka's consumer (`owners/<t>/<p>`) and pykafka "
        "(`owners/<t>/<broker>-<p>`) sharing a group id, so messages are consumed twice. Give each kind of client "
        "its own group id."
    ),
    "owner_assignment_mismatch": (
        "The group's consumers disagree on the range assignment: a rebalance is in progress, or consumers run with "
        "different settings or versions; if it lasts, restart them with the same settings. Groups that use "
        "`partition.assignment.strategy=roundrobin` cannot be told apart in ZooKeeper: suppress this check for them."
    ),
    "offset_invalid": (
        "The group's consumers cannot resume from this znode. Find its writer and rewrite it with the intended "
        "position (the next offset to consume), e.g. with `kafka.tools.ImportZkOffsets` (Kafka before 2.0) or "
        "`zookeeper-shell` `set`."
    ),
    "offset_for_unknown_partition": (
        "The topic has fewer partitions than when this offset was committed (it was deleted and recreated). Delete "
        "the stale offset znode so that a partition added later with that number does not start from it."
    ),
    "offset_regressed": (
        "If nobody reset the group's offsets on purpose, a consumer committed an older position (a zombie instance "
        "of the group, or a restore from backup) and messages will be consumed again: find the committer. A topic "
        "or offset znode that was deleted and recreated explains the drop; such findings are info and need nothing."
    ),
    # Any znode
    # KRaft clusters
    "leader_fenced": (
        "The quorum controller moves leadership off a broker it fences, so a fenced leader means the controller "
        "has not acted: check the active controller's log and the broker's heartbeats. Restart the broker so it "
        "registers and unfences, or run `kafka-leader-election --election-type unclean` only if its ISR is lost."
    ),
    "elr_invalid": (
        "Kafka keeps the eligible leader replicas outside the ISR and inside the replicas (KIP-966). An overlap "
        "means a record was written by a tool or build that broke that rule: compare the partition's "
        "PartitionChangeRecords (`kafka-dump-log --cluster-metadata-decoder`) and report it with the offsets."
    ),
    "directory_unregistered": (
        "The broker no longer registers the log directory the partition's replica is assigned to (a disk was "
        "removed or re-formatted). Bring the directory back, or reassign the replica "
        "(`kafka-reassign-partitions --reassignment-json-file` with a `log_dirs` entry) to one the broker has."
    ),
    "partition_reassignment_stuck": (
        "A reassignment finishes when the adding replicas join the ISR: check that their brokers are up, have room "
        "and keep up (`kafka-reassign-partitions --verify`, the followers' lag). Cancel it with "
        "`kafka-reassign-partitions --cancel` if the target brokers cannot take the partition."
    ),
    "log_epoch_regressed": (
        "Epochs only grow in Kafka; a lower one fences the leader out and confuses followers. The log was spliced "
        "from two histories (a restored controller directory, a copied checkpoint): stop the controller that "
        "holds it and rebuild its directory from a healthy voter."
    ),
    "quorum_leader_missing": (
        "No controller has been elected: start a majority of the voters (`controller.quorum.voters` / "
        "`controller.quorum.bootstrap.servers`) and check `kafka-metadata-quorum describe --status`. If the "
        "files were copied from a stopped controller, copy them again from a running one."
    ),
    "voter_not_controller": (
        "A voter that never registered as a controller is not running (or runs a release older than the "
        "metadata.version). Start it, or remove it from the quorum (`kafka-metadata-quorum remove-controller`, "
        "dynamic quorums) so that a majority stays reachable."
    ),
    "metadata_version_unsupported": (
        "The broker cannot read the cluster's metadata.version: upgrade the broker's Kafka release before it "
        "rejoins, or (only if nothing newer is used yet) lower the level with `kafka-features downgrade`."
    ),
    "log_replay_inconsistent": (
        "A record changes something the log never created, so part of the log is missing or foreign (a deleted "
        "segment without a checkpoint, files copied from two controllers). Audit a complete copy of one voter's "
        "metadata.log.dir, with its .checkpoint files."
    ),
    "log_corrupt": (
        "The controller's disk or the copy damaged a batch; Kafka truncates the segment there on restart and "
        "fetches the rest from the quorum leader. Audit another voter's copy, and check that controller's disk."
    ),
    "log_truncated": (
        "The copy was taken while the controller wrote, or it crashed mid-write: Kafka drops the torn batch on "
        "restart. Copy the directory again (or from a stopped controller) to audit the last records."
    ),
    "record_undecodable": (
        "The record was written by a Kafka release (or pre-release build) whose record layout this audit does "
        "not know; it is left out of the image. Check the writing controller's version; a released Kafka up to "
        "4.2 writes nothing this audit cannot read, so report the offset and version."
    ),
    "malformed_znode": (
        "Kafka cannot read this znode (the detail names its kind and why), so the broker or controller that reads it "
        "fails or skips it. Find who wrote it (hand edit, third-party tool, restore) and rewrite it in a format Kafka "
        "writes, or delete it if it is a leftover."
    ),
    "unreadable_znode": (
        "Nothing is wrong with the cluster: the auditor's identity lacks READ on this znode. Kafka in secure mode "
        "(`zookeeper.set.acl=true`) makes `/config/users`, `/config/brokers` and `/delegation_token/tokens` "
        "creator-only; to audit them, add READ for the auditor (`setAcl` with `digest:<auditor>:<hash>:r` or "
        "`sasl:<principal>:r` next to Kafka's entry); otherwise leave it: an info finding does not gate."
    ),
}

# The migration diff's findings: their remedies are with their kinds (contract.migration_checks).
REMEDIES.update({divergence.check_id: divergence.remedy for divergence in DIVERGENCES})
