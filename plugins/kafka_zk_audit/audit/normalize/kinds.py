"""Classify snapshot rows into znode kinds by path, and decode their data once.

``classify`` is the single pass over the snapshot frame (one or many snapshots, keyed by
``snapshot_id``): it keeps the key, adds ``kind`` (one of the constants below),
``text`` (the data decoded as UTF-8, null when absent or not UTF-8) and ``bad_utf8``, keeps the
snapshot's ``unreadable`` and ``fingerprinted`` marks and only the stat columns the tables use, and
drops rows of no known kind (containers such as ``/brokers/ids``, and paths Kafka does not own such
as ``/kafka-manager/…`` or ``/zookeeper/…``) unless the auditor could not read them: every
unreadable znode stays, for the unreadable_znodes table. ``data_was_read`` tells the rows a parser
may judge: an unreadable znode's data is unknown, not malformed.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.contract.schemas import KEY
from kafka_zk_audit.contract.secrets import NO_READ_PERMISSION

BROKER = "broker"
TOPIC = "topic"
PARTITION_STATE = "partition_state"
CONTROLLER = "controller"
CONTROLLER_EPOCH = "controller_epoch"
CLUSTER_ID = "cluster_id"
FEATURE = "feature"
MIGRATION = "migration"
CONFIG = "config"
CONFIG_CHANGE = "config_change"
ISR_CHANGE = "isr_change"
LOG_DIR_EVENT = "log_dir_event"
DELETE_TOPIC = "delete_topic"
REASSIGNMENT = "reassignment"
PREFERRED_ELECTION = "preferred_election"
PRODUCER_ID_BLOCK = "producer_id_block"
ACL = "acl"
ACL_EXTENDED = "acl_extended"
ACL_CHANGE = "acl_change"
ACL_EXTENDED_CHANGE = "acl_extended_change"
DELEGATION_TOKEN = "delegation_token"
TOKEN_CHANGE = "token_change"
CONSUMER_REGISTRATION = "consumer_registration"
CONSUMER_OWNER = "consumer_owner"
CONSUMER_OFFSET = "consumer_offset"
KRAFT_BROKER = "kraft_broker"
KRAFT_CONTROLLER = "kraft_controller"
KRAFT_PARTITION = "kraft_partition"
KRAFT_QUORUM = "kraft_quorum"
KRAFT_FEATURES = "kraft_features"
KRAFT_LOG = "kraft_log"
KRAFT_ANOMALY = "kraft_anomaly"

SEQ = "[0-9]{10}"
NAME = "[^/]+"

# Path patterns; group 1.. capture the names each family needs. Sequential children end in 10 digits.
BROKER_PATH = f"^/brokers/ids/({NAME})$"
TOPIC_PATH = f"^/brokers/topics/({NAME})$"
PARTITION_STATE_PATH = f"^/brokers/topics/({NAME})/partitions/({NAME})/state$"
CONFIG_PATH = f"^/config/(topics|clients|users|brokers|ips)/({NAME})$"
CONFIG_USER_CLIENT_PATH = f"^/config/users/({NAME})/clients/({NAME})$"
CONFIG_CHANGE_PATH = f"^/config/changes/config_change_({SEQ})$"
ISR_CHANGE_PATH = f"^/isr_change_notification/isr_change_({SEQ})$"
LOG_DIR_EVENT_PATH = f"^/log_dir_event_notification/log_dir_event_({SEQ})$"
DELETE_TOPIC_PATH = f"^/admin/delete_topics/({NAME})$"
ACL_PATH = f"^/kafka-acl/({NAME})/({NAME})$"
ACL_EXTENDED_PATH = f"^/kafka-acl-extended/({NAME})/({NAME})/({NAME})$"
ACL_CHANGE_PATH = f"^/kafka-acl-changes/acl_changes_({SEQ})$"
ACL_EXTENDED_CHANGE_PATH = f"^/kafka-acl-extended-changes/acl_changes_({SEQ})$"
DELEGATION_TOKEN_PATH = f"^/delegation_token/tokens/({NAME})$"
TOKEN_CHANGE_PATH = f"^/delegation_token/token_changes/token_change_({SEQ})$"
CONSUMER_REGISTRATION_PATH = f"^/consumers/({NAME})/ids/({NAME})$"
CONSUMER_OWNER_PATH = f"^/consumers/({NAME})/owners/({NAME})/({NAME})$"
CONSUMER_OFFSET_PATH = f"^/consumers/({NAME})/offsets/({NAME})/({NAME})$"
# A KRaft snapshot's own znodes (snapshot.kraft.render): what ZooKeeper never held.
KRAFT_BROKER_PATH = f"^/kraft/brokers/({NAME})$"
KRAFT_CONTROLLER_PATH = f"^/kraft/controllers/({NAME})$"
KRAFT_PARTITION_PATH = f"^/kraft/partitions/({NAME})/({NAME})$"

# (top-level znode, kind, path pattern). The top level is compared first so that a row is matched
# against only the few patterns of its own subtree.
RULES: tuple[tuple[str, str, str], ...] = (
    ("/brokers", PARTITION_STATE, PARTITION_STATE_PATH),
    ("/brokers", TOPIC, TOPIC_PATH),
    ("/brokers", BROKER, BROKER_PATH),
    ("/consumers", CONSUMER_OFFSET, CONSUMER_OFFSET_PATH),
    ("/consumers", CONSUMER_OWNER, CONSUMER_OWNER_PATH),
    ("/consumers", CONSUMER_REGISTRATION, CONSUMER_REGISTRATION_PATH),
    ("/config", CONFIG_CHANGE, CONFIG_CHANGE_PATH),
    ("/config", CONFIG, CONFIG_PATH),
    ("/config", CONFIG, CONFIG_USER_CLIENT_PATH),
    ("/controller", CONTROLLER, "^/controller$"),
    ("/controller_epoch", CONTROLLER_EPOCH, "^/controller_epoch$"),
    ("/cluster", CLUSTER_ID, "^/cluster/id$"),
    ("/feature", FEATURE, "^/feature$"),
    ("/migration", MIGRATION, "^/migration$"),
    ("/isr_change_notification", ISR_CHANGE, ISR_CHANGE_PATH),
    ("/log_dir_event_notification", LOG_DIR_EVENT, LOG_DIR_EVENT_PATH),
    ("/admin", DELETE_TOPIC, DELETE_TOPIC_PATH),
    ("/admin", REASSIGNMENT, "^/admin/reassign_partitions$"),
    ("/admin", PREFERRED_ELECTION, "^/admin/preferred_replica_election$"),
    ("/latest_producer_id_block", PRODUCER_ID_BLOCK, "^/latest_producer_id_block$"),
    ("/kafka-acl", ACL, ACL_PATH),
    ("/kafka-acl-extended", ACL_EXTENDED, ACL_EXTENDED_PATH),
    ("/kafka-acl-changes", ACL_CHANGE, ACL_CHANGE_PATH),
    ("/kafka-acl-extended-changes", ACL_EXTENDED_CHANGE, ACL_EXTENDED_CHANGE_PATH),
    ("/delegation_token", DELEGATION_TOKEN, DELEGATION_TOKEN_PATH),
    ("/delegation_token", TOKEN_CHANGE, TOKEN_CHANGE_PATH),
    ("/kraft", KRAFT_BROKER, KRAFT_BROKER_PATH),
    ("/kraft", KRAFT_CONTROLLER, KRAFT_CONTROLLER_PATH),
    ("/kraft", KRAFT_PARTITION, KRAFT_PARTITION_PATH),
    ("/kraft", KRAFT_QUORUM, "^/kraft/quorum$"),
    ("/kraft", KRAFT_FEATURES, "^/kraft/features$"),
    ("/kraft", KRAFT_LOG, "^/kraft/log$"),
    ("/kraft", KRAFT_ANOMALY, f"^/kraft/anomalies/{NAME}$"),
)

# Sequential notification kinds, as named in the notifications table.
NOTIFICATION_KINDS = (ISR_CHANGE, LOG_DIR_EVENT, CONFIG_CHANGE, ACL_CHANGE, ACL_EXTENDED_CHANGE, TOKEN_CHANGE)

# Stat columns the normalized tables use; the others are dropped after classification.
KEPT_STAT = ("czxid", "mzxid", "ctime", "mtime", "version", "ephemeral_owner")


def kind_of_sql(path: str = "path") -> str:
    """SQL for the kind of a znode path, or null for containers and unknown paths.

    The top-level znode is compared first, so a row is matched only against its subtree's patterns.
    """
    by_top: dict[str, list[tuple[str, str]]] = {}
    for top_level, kind, pattern in RULES:
        by_top.setdefault(top_level, []).append((kind, pattern))
    branches = []
    for top_level, rules in by_top.items():
        inner = " ".join(f"WHEN {path} RLIKE r'{pattern}' THEN '{kind}'" for kind, pattern in rules)
        branches.append(f"WHEN '{top_level}' THEN CASE {inner} END")
    return f"CASE substring_index({path}, '/', 2) {' '.join(branches)} END"


# Snapshot columns added after the first snapshots were written: null when a snapshot lacks them.
MARK_COLUMNS = ("unreadable", "fingerprinted")


def data_was_read() -> Column:
    """True for rows whose data the snapshot holds (not a znode the auditor could not read)."""
    return F.col("unreadable").isNull() | (F.col("unreadable") != NO_READ_PERMISSION)


def require_key(snapshot: DataFrame) -> None:
    """Raise ValueError unless the snapshot frame carries the snapshot key (schema ``keyed(SNAPSHOT)``)."""
    if KEY not in snapshot.columns:
        raise ValueError(
            f"the snapshot frame has no {KEY} column: the normalizer reads keyed(SNAPSHOT) frames"
            f" (columns: {', '.join(snapshot.columns)})"
        )


def classify(snapshot: DataFrame) -> DataFrame:
    """Snapshot rows of known kinds (and unreadable rows of any path) with their ``snapshot_id``, ``kind``,
    ``text``, ``bad_utf8``, the ``unreadable`` and ``fingerprinted`` marks and the stat columns used.

    Raises ValueError when the frame has no ``snapshot_id`` column."""
    require_key(snapshot)
    data_as_string = F.col("data").cast("string")
    bad_utf8 = F.col("data").isNotNull() & ~F.is_valid_utf8(data_as_string)
    marks = [
        (F.col(name) if name in snapshot.columns else F.lit(None).cast("string")).alias(name) for name in MARK_COLUMNS
    ]
    return snapshot.select(
        KEY,
        "path",
        F.expr(kind_of_sql()).alias("kind"),
        F.when(~bad_utf8, data_as_string).alias("text"),
        bad_utf8.alias("bad_utf8"),
        *marks,
        *KEPT_STAT,
    ).filter(F.col("kind").isNotNull() | F.col("unreadable").isNotNull())
