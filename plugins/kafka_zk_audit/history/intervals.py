"""Between-run violations: from the change table, the intervals during which an invariant Kafka keeps was broken.

Every function is DataFrame -> DataFrame. The change table (``history.changes.CHANGES``) is first turned into
the states each znode went through (``znode_versions``: a state is valid from its zxid until the next change of
that path), those states are parsed by the live audit's own normalizer (a malformed state is unknown, never a
violation), and the states of the znodes one invariant reads are lined up per subject (``as_of``: at every
change of any of them, the latest state of each). A subject's consecutive violating states merge into one
interval (gaps and islands); an interval still open at the end of the logs has a null ``end_zxid``.

Checks (the live check each mirrors, whose severity it takes):

- ``interval_leader_not_in_isr``: a partition's leader (>= 0) is not in its isr.
- ``interval_offline_partition``: leader -1, or a leader not registered under /brokers/ids at that moment
  (not judged while a KRaft controller holds /controller: migrating brokers lead without registering).
- ``interval_under_replicated``: isr smaller than the replication factor (replicas minus those being added).
- ``interval_controller_missing``: no /controller while /controller_epoch exists (a cluster has elected before).
- ``interval_controller_epoch_regressed``: /controller_epoch below its highest earlier value (same znode
  generation), until it is back at that value.
- ``interval_offset_regressed``: an old consumer's offset below its highest earlier value (same offset znode and
  topic generation: a recreated topic or offset znode starts over), until it is back at that value.
- ``interval_partition_unowned``: an assigned partition of a topic that live (non-pykafka) consumers of the group
  subscribe to has no owner znode.
- ``interval_owner_not_registered``: an owner znode names a consumer not registered under /consumers/<g>/ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_zk_audit.audit import normalize
from kafka_zk_audit.audit.checks.common import int_list, kraft_controller, say
from kafka_zk_audit.audit.normalize import family_tables, name_part, to_int
from kafka_zk_audit.audit.unions import union_all
from kafka_zk_audit.contract.catalogue import BY_ID
from kafka_zk_audit.contract.schemas import KEY

BASE = "base"
CREATE_OPS = ("create", "create2", "createContainer", "createTTL")
DELETE_OPS = ("delete", "deleteContainer")
STATE_OPS = (BASE, *CREATE_OPS, "setData", *DELETE_OPS)
PREFIX = "interval_"
DEFAULT_MIN_INTERVAL_MS = 1_000
SUBJECT = ("topic", "partition", "group_id", "broker_id", "path")
INTERVAL_COLUMNS = ("check_id", "severity", *SUBJECT, "detail", "start_zxid", "end_zxid", "start_time",
                    "end_time", "duration_ms")
# Kinds whose states the interval checks read; the others are never parsed.
KIND_PATTERNS = (normalize.BROKER_PATH, normalize.TOPIC_PATH, normalize.PARTITION_STATE_PATH, "^/controller$",
                 "^/controller_epoch$", normalize.CONSUMER_REGISTRATION_PATH, normalize.CONSUMER_OWNER_PATH,
                 normalize.CONSUMER_OFFSET_PATH)
CHECKED_PATHS = "|".join(f"({pattern})" for pattern in KIND_PATTERNS)

_UNBOUNDED = (Window.unboundedPreceding, Window.currentRow)


def severity_of(check_id: str) -> str:
    """An interval check's severity: the live check's it mirrors."""
    return BY_ID[check_id.removeprefix(PREFIX)].severity


# -- znode states ---------------------------------------------------------------------------------
def znode_versions(changes: DataFrame) -> DataFrame:
    """The states each znode went through: ``path, zxid, time, end_zxid, end_time, exists, data, version,
    generation`` (count of creations so far, the base state counting as one), ``czxid`` (first zxid of the
    generation), ``ctime_ms``, ``ephemeral_owner``. Several changes of one path in one multi are one state."""
    rows = changes.where(F.col("path").isNotNull() & F.col("op").isin(*STATE_OPS))
    same_txn = Window.partitionBy("path", "zxid")
    created = F.col("op").isin(BASE, *CREATE_OPS)
    rows = rows.select(
        "*",
        F.max(created).over(same_txn).alias("created"),
        F.max(F.when(created, F.when(F.coalesce("ephemeral", F.lit(False)), F.col("session")).otherwise(0)))
        .over(same_txn).alias("owner_if_created"),
        F.row_number().over(same_txn.orderBy(F.desc("op_index"))).alias("_last"),
    ).where(F.col("_last") == 1)
    by_path = Window.partitionBy("path").orderBy("zxid")
    rows = rows.withColumn("generation", F.sum(F.col("created").cast("int")).over(by_path.rowsBetween(*_UNBOUNDED)))
    by_generation = Window.partitionBy("path", "generation").orderBy("zxid").rowsBetween(*_UNBOUNDED)
    return rows.select(
        "path", "zxid", "time",
        F.lead("zxid").over(by_path).alias("end_zxid"),
        F.lead("time").over(by_path).alias("end_time"),
        (~F.col("op").isin(*DELETE_OPS)).alias("exists"),
        "data",
        F.when(F.col("op").isin(*CREATE_OPS), F.lit(0)).otherwise(F.col("version")).alias("version"),
        "generation",
        F.first("zxid").over(by_generation).alias("czxid"),
        F.unix_millis(F.first("time").over(by_generation)).alias("ctime_ms"),
        F.last("owner_if_created", ignorenulls=True).over(by_generation).alias("ephemeral_owner"),
    )


def _snapshot_rows(versions: DataFrame) -> DataFrame:
    """Existing states of the checked kinds as rows of the keyed snapshot schema (one key: the logs), for the
    live normalizer."""
    return versions.where(F.col("exists") & F.col("path").rlike(CHECKED_PATHS)).select(
        F.lit("logs").alias(KEY),
        "path", "data", "czxid", F.col("zxid").alias("mzxid"), F.lit(None).cast("long").alias("pzxid"),
        F.col("ctime_ms").alias("ctime"), F.unix_millis("time").alias("mtime"), "version",
        F.lit(None).cast("int").alias("cversion"), F.lit(None).cast("int").alias("aversion"),
        F.coalesce("ephemeral_owner", F.lit(0).cast("long")).alias("ephemeral_owner"),
        F.length("data").alias("data_length"), F.lit(None).cast("int").alias("num_children"),
        F.lit(None).cast("string").alias("unreadable"), F.lit(None).cast("string").alias("fingerprinted"),
    )


def parsed_states(versions: DataFrame) -> dict[str, DataFrame]:
    """The live normalizer's row-wise tables (brokers, assignments, partition_states, controller,
    controller_epoch, consumer_registrations, consumer_owners, consumer_offsets) over every state, each row
    with ``zxid, time, end_zxid, end_time`` of its state (joined on path and mzxid)."""
    names = ("brokers", "assignments", "partition_states", "controller", "controller_epoch",
             "consumer_registrations", "consumer_owners", "consumer_offsets")
    tables = family_tables(_snapshot_rows(versions), names)
    spans = versions.select("path", F.col("zxid").alias("mzxid"), "zxid", "time", "end_zxid", "end_time",
                            "generation")
    return {name: frame.join(spans, ["path", "mzxid"]) for name, frame in tables.items()}


# -- lining states up --------------------------------------------------------------------------------
def _component(versions: DataFrame, pattern: str, keys: dict[str, Column], parsed: DataFrame | None,
               name: str, values: Sequence[str]) -> DataFrame:
    """Events of one component: at every state of the paths matching ``pattern``, ``name`` = struct(present,
    values...) — present only when the state exists and parsed. Keys come from the path."""
    states = versions.where(F.col("path").rlike(pattern)).select("path", "zxid", "time", "generation",
                                                                  *[k.alias(n) for n, k in keys.items()])
    if parsed is not None:
        states = states.join(parsed.select("path", "zxid", F.lit(True).alias("_parsed"), *values),
                             ["path", "zxid"], "left")
    else:
        states = states.select("*", F.lit(True).alias("_parsed"))
    present = F.coalesce(F.col("_parsed"), F.lit(False))
    value = F.struct(present.alias("present"), F.col("generation"),
                     *[F.when(present, F.col(v)).alias(v) for v in values])
    return states.where(F.col(list(keys)[0]).isNotNull()).select(*keys, "zxid", "time", value.alias(name))


def as_of(events: Sequence[DataFrame], keys: Sequence[str], components: Sequence[str]) -> DataFrame:
    """Per key, one row at every zxid where any component changed: each component's latest state then,
    ``end_zxid``/``end_time`` the next such change (null: still so at the end of the logs)."""
    union = union_all([frame.withColumn("_seq", F.lit(index)) for index, frame in enumerate(events)],
                      allow_missing_columns=True)
    ordered = Window.partitionBy(*keys).orderBy("zxid", "_seq").rowsBetween(*_UNBOUNDED)
    filled = union.select(*keys, "zxid", "time", "_seq",
                          *[F.last(c, ignorenulls=True).over(ordered).alias(c) for c in components])
    last = Window.partitionBy(*keys, "zxid").orderBy(F.desc("_seq"))
    rows = filled.withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1).drop("_n", "_seq")
    by_key = Window.partitionBy(*keys).orderBy("zxid")
    return rows.select("*", F.lead("zxid").over(by_key).alias("end_zxid"),
                       F.lead("time").over(by_key).alias("end_time"))


def islands(timeline: DataFrame, keys: Sequence[str], check_id: str, violated: Column, detail: Column,
            subject: dict[str, Column], logs_end: Column) -> DataFrame:
    """Consecutive violating rows of each key merged into one interval (INTERVAL_COLUMNS); the detail is the
    first state's evidence, ``duration_ms`` runs to the end of the logs for an open interval."""
    by_key = Window.partitionBy(*keys).orderBy("zxid")
    marked = timeline.select("*", F.coalesce(violated, F.lit(False)).alias("_bad"), detail.alias("_detail"),
                             *[column.alias(f"_s_{name}") for name, column in subject.items()])
    starts = marked.withColumn("_start", F.col("_bad") & ~F.coalesce(F.lag("_bad").over(by_key), F.lit(False)))
    numbered = starts.withColumn("_island", F.sum(F.col("_start").cast("int")).over(by_key.rowsBetween(*_UNBOUNDED)))
    grouped = numbered.where("_bad").groupBy(*keys, "_island").agg(
        F.min("zxid").alias("start_zxid"),
        F.min_by("time", "zxid").alias("start_time"),
        F.max_by("end_zxid", "zxid").alias("end_zxid"),
        F.max_by("end_time", "zxid").alias("end_time"),
        F.min_by("_detail", "zxid").alias("detail"),
        *[F.min_by(f"_s_{name}", "zxid").alias(f"_s_{name}") for name in subject],
    )
    until = F.coalesce(F.col("end_time"), logs_end)
    values = {
        "check_id": F.lit(check_id), "severity": F.lit(severity_of(check_id)),
        **{name: F.col(f"_s_{name}") if name in subject else F.lit(None) for name in SUBJECT},
        "detail": F.col("detail"), "start_zxid": F.col("start_zxid"), "end_zxid": F.col("end_zxid"),
        "start_time": F.col("start_time"), "end_time": F.col("end_time"),
        "duration_ms": F.unix_millis(until) - F.unix_millis("start_time"),
    }
    types = {"partition": "int", "broker_id": "int", "start_zxid": "long", "end_zxid": "long",
             "start_time": "timestamp", "end_time": "timestamp", "duration_ms": "long"}
    return grouped.select(*[values[c].cast(types.get(c, "string")).alias(c) for c in INTERVAL_COLUMNS])


def logs_end_time(changes: DataFrame) -> Column:
    """The time of the last change of the logs, as a scalar subquery-free literal column (collected once)."""
    last = changes.agg(F.max("time").alias("t")).first()
    return F.lit(last["t"] if last else None).cast("timestamp")


def window_start(changes: DataFrame) -> tuple[int, object]:
    """(zxid, time) of the base state: the base rows', else just before the first change."""
    row = changes.agg(F.min(F.when(F.col("op") == BASE, F.col("zxid"))).alias("base"), F.min("zxid").alias("first"),
                      F.min("time").alias("time")).first()
    if row is None or row["first"] is None:
        return 0, None
    return (row["base"] if row["base"] is not None else row["first"] - 1), row["time"]


# -- partitions -----------------------------------------------------------------------------------
def _partition_keys() -> dict[str, Column]:
    return {"topic": name_part(normalize.PARTITION_STATE_PATH, 1),
            "partition": to_int(name_part(normalize.PARTITION_STATE_PATH, 2))}


def _assignment_events(versions: DataFrame, assignments: DataFrame) -> DataFrame:
    """(topic, partition, zxid, time, a): per topic state, each partition it assigns or just stopped assigning."""
    per_state = assignments.groupBy("path", "zxid").agg(
        F.map_from_entries(F.collect_list(F.struct(
            "partition", F.struct("replicas", F.coalesce("adding_replicas", F.array().cast("array<int>"))
                                  .alias("adding"))))).alias("parts"))
    states = (versions.where(F.col("path").rlike(normalize.TOPIC_PATH))
              .select("path", "zxid", "time", name_part(normalize.TOPIC_PATH).alias("topic"))
              .join(per_state, ["path", "zxid"], "left"))
    by_path = Window.partitionBy("path").orderBy("zxid")
    no_parts = F.create_map().cast("map<int,struct<replicas:array<int>,adding:array<int>>>")
    parts = F.coalesce("parts", no_parts)
    states = states.select("*", F.coalesce(F.lag("parts").over(by_path), no_parts).alias("previous"))
    exploded = states.select("topic", "zxid", "time", parts.alias("parts"),
                             F.explode(F.array_union(F.map_keys(parts), F.map_keys("previous"))).alias("partition"))
    entry = F.try_element_at("parts", F.col("partition"))
    a = F.struct(entry.isNotNull().alias("present"), entry["replicas"].alias("replicas"),
                 entry["adding"].alias("adding"))
    return exploded.select("topic", "partition", "zxid", "time", a.alias("a"))


def _cluster_events(versions: DataFrame, tables: dict[str, DataFrame]) -> DataFrame:
    """(zxid, time, c): at every change of a broker registration or /controller, the registered broker ids
    and whether a KRaft controller holds /controller."""
    points = (versions.where(F.col("path").rlike(normalize.BROKER_PATH) | (F.col("path") == "/controller"))
              .select(F.col("zxid").alias("at"), F.col("time").alias("at_time")).distinct())
    far = F.lit(2**62)

    during = (F.col("since") <= F.col("at")) & (F.col("at") < F.coalesce(F.col("until"), far))
    brokers = tables["brokers"].select("broker_id", F.col("zxid").alias("since"), F.col("end_zxid").alias("until"))
    registered = (points.join(brokers, during, "left")
                  .groupBy("at", "at_time").agg(F.collect_set("broker_id").alias("registered")))
    controller = tables["controller"].select(kraft_controller().alias("kraft"), F.col("zxid").alias("since"),
                                             F.col("end_zxid").alias("until"))
    kraft = (points.join(controller, during, "left").groupBy("at")
             .agg(F.coalesce(F.max("kraft"), F.lit(False)).alias("kraft")))
    joined = registered.join(kraft, "at")
    return joined.select(F.col("at").alias("zxid"), F.col("at_time").alias("time"),
                         F.struct("registered", "kraft").alias("c"))


def partition_timeline(versions: DataFrame, tables: dict[str, DataFrame]) -> DataFrame:
    """Per (topic, partition), the latest partition state ``s``, assignment ``a`` and cluster ``c`` at each change."""
    states = _component(versions, normalize.PARTITION_STATE_PATH, _partition_keys(), tables["partition_states"], "s",
                        ("leader", "leader_epoch", "isr"))
    assigned = _assignment_events(versions, tables["assignments"])
    keys = states.select("topic", "partition").union(assigned.select("topic", "partition")).distinct()
    cluster = keys.crossJoin(_cluster_events(versions, tables))
    return as_of([states, assigned, cluster], ("topic", "partition"), ("s", "a", "c"))


def partition_intervals(timeline: DataFrame, logs_end: Column) -> DataFrame:
    """interval_leader_not_in_isr, interval_offline_partition and interval_under_replicated."""
    has_state = F.coalesce(F.col("s.present"), F.lit(False))
    leader, isr = F.col("s.leader"), F.coalesce(F.col("s.isr"), F.array().cast("array<int>"))
    path = F.format_string("/brokers/topics/%s/partitions/%d/state", F.col("topic"), F.col("partition"))
    subject = {"topic": F.col("topic"), "partition": F.col("partition"), "path": path}
    keys = ("topic", "partition")
    not_in_isr = islands(
        timeline, keys, "interval_leader_not_in_isr", has_state & (leader >= 0) & ~F.array_contains(isr, leader),
        say("leader %s not in isr %s (leader_epoch %s)", leader, int_list(isr), F.col("s.leader_epoch")),
        subject, logs_end)
    registered = F.coalesce(F.col("c.registered"), F.array().cast("array<int>"))
    dead_leader = (leader >= 0) & ~F.array_contains(registered, leader) & ~F.coalesce(F.col("c.kraft"), F.lit(False))
    offline = islands(
        timeline, keys, "interval_offline_partition", has_state & ((leader == -1) | dead_leader),
        F.when(leader == -1, say("leader is -1 (no leader), isr %s", int_list(isr)))
        .otherwise(say("leader %s is not registered under /brokers/ids (registered: %s)", leader,
                       int_list(F.array_sort(registered)))),
        subject, logs_end)
    replicas = F.col("a.replicas")
    adding = F.coalesce(F.col("a.adding"), F.array().cast("array<int>"))
    factor = F.size(replicas) - F.size(F.array_intersect(adding, replicas))
    assigned = F.coalesce(F.col("a.present"), F.lit(False))
    under = islands(
        timeline, keys, "interval_under_replicated", has_state & assigned & (F.size(isr) < factor),
        say("isr %s has %s of replication factor %s (replicas %s)", int_list(isr), F.size(isr), factor,
            int_list(replicas)),
        subject, logs_end)
    return not_in_isr.unionByName(offline).unionByName(under)


def leadership_history(tables: dict[str, DataFrame]) -> DataFrame:
    """One row per partition state: topic, partition, leader, leader_epoch, isr, controller_epoch, from/to
    zxid and time (to null: still so at the end of the logs)."""
    return tables["partition_states"].select(
        "topic", "partition", "leader", "leader_epoch", "isr", "controller_epoch",
        F.col("zxid").alias("from_zxid"), F.col("end_zxid").alias("to_zxid"),
        F.col("time").alias("from_time"), F.col("end_time").alias("to_time"),
    )


# -- controller -----------------------------------------------------------------------------------
def controller_timeline(versions: DataFrame, tables: dict[str, DataFrame]) -> DataFrame:
    """One row per change of /controller or /controller_epoch: ``ctl`` (present, broker_id) and ``epoch``."""
    key = {"cluster": F.lit(0)}
    ctl = _component(versions, "^/controller$", key, tables["controller"], "ctl", ("broker_id",))
    epoch = _component(versions, "^/controller_epoch$", key, tables["controller_epoch"], "epoch", ("epoch",))
    return as_of([ctl, epoch], ("cluster",), ("ctl", "epoch"))


def controller_intervals(versions: DataFrame, tables: dict[str, DataFrame], logs_end: Column) -> DataFrame:
    """interval_controller_missing and interval_controller_epoch_regressed."""
    timeline = controller_timeline(versions, tables).localCheckpoint()
    missing = islands(
        timeline, ("cluster",), "interval_controller_missing",
        ~F.coalesce(F.col("ctl.present"), F.lit(False)) & F.coalesce(F.col("epoch.present"), F.lit(False)),
        say("no /controller (last /controller_epoch %s)", F.col("epoch.epoch")),
        {"path": F.lit("/controller")}, logs_end)
    epochs = _component(versions, "^/controller_epoch$", {"cluster": F.lit(0)}, tables["controller_epoch"], "e",
                        ("epoch",)).where("e.present")
    highest = F.max("e.epoch").over(Window.partitionBy("e.generation").orderBy("zxid").rowsBetween(
        Window.unboundedPreceding, -1))
    by_key = Window.partitionBy("cluster").orderBy("zxid")
    ranked = epochs.select("*", highest.alias("highest")).select(
        "*", F.lead("zxid").over(by_key).alias("end_zxid"), F.lead("time").over(by_key).alias("end_time"))
    regressed = islands(
        ranked, ("cluster",), "interval_controller_epoch_regressed", F.col("e.epoch") < F.col("highest"),
        say("/controller_epoch %s < %s written earlier", F.col("e.epoch"), F.col("highest")),
        {"path": F.lit("/controller_epoch")}, logs_end)
    return missing.unionByName(regressed)


def controller_failovers(tables: dict[str, DataFrame]) -> DataFrame:
    """One row per /controller holder: broker_id, epoch (the /controller_epoch last written while it held the
    role), from/to zxid and time, and the gap without controller before it (gap_ms, null for the first)."""
    holders = tables["controller"].select("broker_id", "zxid", "end_zxid", "time", "end_time")
    epochs = tables["controller_epoch"].select(F.col("epoch"), F.col("zxid").alias("epoch_zxid"))
    far = F.lit(2**62)
    joined = holders.join(epochs, F.col("epoch_zxid") < F.coalesce(F.col("end_zxid"), far), "left")
    per_holder = joined.groupBy("broker_id", "zxid", "end_zxid", "time", "end_time").agg(
        F.max_by("epoch", "epoch_zxid").alias("epoch"))
    order = Window.orderBy("zxid")
    previous_end = F.lag("end_time").over(order)
    return per_holder.select(
        "broker_id", "epoch", F.col("zxid").alias("from_zxid"), F.col("end_zxid").alias("to_zxid"),
        F.col("time").alias("from_time"), F.col("end_time").alias("to_time"),
        F.lag("end_zxid").over(order).alias("gap_from_zxid"),
        (F.unix_millis("time") - F.unix_millis(previous_end)).alias("gap_ms"),
    )


# -- old consumers --------------------------------------------------------------------------------
def _group_topic_partition(pattern: str) -> dict[str, Column]:
    """group_id, topic and partition from the path of an offset or owner znode (/consumers/<g>/…/<t>/<p>)."""
    return {"group_id": name_part(pattern, 1), "topic": name_part(pattern, 2),
            "partition": to_int(name_part(pattern, 3))}


def offset_intervals(versions: DataFrame, tables: dict[str, DataFrame], logs_end: Column) -> DataFrame:
    """interval_offset_regressed: per offset znode and topic generation, an offset below an earlier one."""
    keys = _group_topic_partition(normalize.CONSUMER_OFFSET_PATH)
    offsets = _component(versions, normalize.CONSUMER_OFFSET_PATH, keys, tables["consumer_offsets"], "o", ("offset",))
    topic_states = _component(versions, normalize.TOPIC_PATH, {"topic": name_part(normalize.TOPIC_PATH)}, None, "t", ())
    topic_events = offsets.select("group_id", "topic", "partition").distinct().join(topic_states, "topic")
    names = ("group_id", "topic", "partition")
    timeline = as_of([offsets, topic_events], names, ("o", "t"))
    lineage = Window.partitionBy(*names, "o.generation", "t.generation").orderBy("zxid").rowsBetween(
        Window.unboundedPreceding, -1)
    ranked = timeline.select("*", F.max("o.offset").over(lineage).alias("highest"))
    path = F.format_string("/consumers/%s/offsets/%s/%d", F.col("group_id"), F.col("topic"), F.col("partition"))
    return islands(
        ranked, names, "interval_offset_regressed",
        F.coalesce(F.col("o.present"), F.lit(False)) & (F.col("o.offset") < F.col("highest")),
        say("offset %s < %s committed earlier", F.col("o.offset"), F.col("highest")),
        {"group_id": F.col("group_id"), "topic": F.col("topic"), "partition": F.col("partition"), "path": path},
        logs_end)


def _group_events(versions: DataFrame, registrations: DataFrame, topic_names: DataFrame) -> DataFrame:
    """(group_id, topic, zxid, time, g): at every registration change of a group, its registered consumer ids
    and how many of them (pykafka aside) subscribe to the topic (static names, or Java regex on topic names)."""
    points = (versions.where(F.col("path").rlike(normalize.CONSUMER_REGISTRATION_PATH))
              .select(name_part(normalize.CONSUMER_REGISTRATION_PATH, 1).alias("group_id"),
                      F.col("zxid").alias("at"), F.col("time").alias("at_time")).distinct())
    live = registrations.select("group_id", "consumer_id", "format", F.coalesce("pattern", F.lit("static"))
                                .alias("pattern"), "subscription", F.col("zxid").alias("since"),
                                F.col("end_zxid").alias("until"))
    during = (F.col("since") <= F.col("at")) & (F.col("at") < F.coalesce(F.col("until"), F.lit(2**62)))
    at_point = points.join(live, ["group_id"], "left").where(during | F.col("since").isNull())
    consumers = at_point.groupBy("group_id", "at", "at_time").agg(F.collect_set("consumer_id").alias("consumers"))
    entries = at_point.where(F.coalesce(F.col("format"), F.lit("")) != "pykafka").select(
        "group_id", "at", "consumer_id", "pattern", F.explode("subscription").alias("key", "streams"))
    static = entries.where(F.col("pattern") == "static").select("group_id", "at", "consumer_id",
                                                                 F.col("key").alias("topic"))
    matches = F.try_reflect(F.lit("java.util.regex.Pattern"), F.lit("matches"), F.col("key"), F.col("topic"))
    wildcard = (entries.where(F.col("pattern").isin("white_list", "black_list")).crossJoin(topic_names)
                .where(((F.col("pattern") == "white_list") & (matches == "true"))
                       | ((F.col("pattern") == "black_list") & (matches == "false")))
                .select("group_id", "at", "consumer_id", "topic"))
    subscribed = static.unionByName(wildcard)
    pairs = subscribed.select("group_id", "topic").distinct()
    counts = (pairs.join(consumers, "group_id")
              .join(subscribed.groupBy("group_id", "topic", "at").agg(F.countDistinct("consumer_id").alias("n")),
                    ["group_id", "topic", "at"], "left"))
    g = F.struct(F.col("consumers"), F.coalesce("n", F.lit(0)).alias("subscribers"))
    return counts.select("group_id", "topic", F.col("at").alias("zxid"), F.col("at_time").alias("time"), g.alias("g"))


def owner_intervals(versions: DataFrame, tables: dict[str, DataFrame], logs_end: Column) -> DataFrame:
    """interval_partition_unowned and interval_owner_not_registered (owner znodes named after the partition)."""
    keys = _group_topic_partition(normalize.CONSUMER_OWNER_PATH)
    owners = tables["consumer_owners"].withColumn("owner_consumer", F.coalesce("owner_consumer_id", "owner"))
    owned = _component(versions, normalize.CONSUMER_OWNER_PATH, keys, owners, "o", ("owner", "owner_consumer"))
    assigned = _assignment_events(versions, tables["assignments"]).localCheckpoint()
    topic_names = assigned.select("topic").distinct()
    groups = _group_events(versions, tables["consumer_registrations"], topic_names).localCheckpoint()
    pairs = groups.select("group_id", "topic").union(owned.select("group_id", "topic")).distinct()
    subjects = (pairs.join(assigned.select("topic", "partition").distinct(), "topic")
                .union(owned.select("group_id", "topic", "partition")).distinct())
    assigned_events = subjects.join(assigned, ["topic", "partition"])
    group_events = subjects.join(groups, ["group_id", "topic"])
    names = ("group_id", "topic", "partition")
    timeline = as_of([owned, assigned_events, group_events], names, ("o", "a", "g")).localCheckpoint()
    has_owner = F.coalesce(F.col("o.present"), F.lit(False))
    group_path = F.format_string("/consumers/%s/owners/%s/%d", F.col("group_id"), F.col("topic"), F.col("partition"))
    subject = {"group_id": F.col("group_id"), "topic": F.col("topic"), "partition": F.col("partition"),
               "path": group_path}
    unowned = islands(
        timeline, names, "interval_partition_unowned",
        ~has_owner & F.coalesce(F.col("a.present"), F.lit(False)) & (F.coalesce(F.col("g.subscribers"), F.lit(0)) > 0),
        say("partition %s of %s has no owner although %s live consumer(s) of the group subscribe to it",
            F.col("partition"), F.col("topic"), F.col("g.subscribers")),
        subject, logs_end)
    consumers = F.coalesce(F.col("g.consumers"), F.array().cast("array<string>"))
    stranger = islands(
        timeline, names, "interval_owner_not_registered",
        has_owner & ~F.array_contains(consumers, F.col("o.owner_consumer")),
        say("owner %s names consumer %s, which is not registered under /consumers/%s/ids", F.col("o.owner"),
            F.col("o.owner_consumer"), F.col("group_id")),
        subject, logs_end)
    return unowned.unionByName(stranger)


# -- all of it --------------------------------------------------------------------------------------
def all_intervals(changes: DataFrame) -> tuple[DataFrame, dict[str, DataFrame]]:
    """(every interval of every check, the parsed states) from a change table; the states and the partition
    timeline are checkpointed locally (computed once, lineage cut) for the several checks that read them."""
    versions = znode_versions(changes).localCheckpoint()
    tables = {name: frame.localCheckpoint() for name, frame in parsed_states(versions).items()}
    logs_end = logs_end_time(changes)
    partitions = partition_intervals(partition_timeline(versions, tables).localCheckpoint(), logs_end)
    found = (partitions.unionByName(controller_intervals(versions, tables, logs_end))
             .unionByName(offset_intervals(versions, tables, logs_end))
             .unionByName(owner_intervals(versions, tables, logs_end)))
    return found, tables


def split_by_floor(intervals: DataFrame, min_interval_ms: int = DEFAULT_MIN_INTERVAL_MS) -> tuple[DataFrame,
                                                                                                    DataFrame]:
    """(intervals lasting at least the floor, (check_id, short) counts of the others)."""
    long_enough = F.coalesce(F.col("duration_ms") >= min_interval_ms, F.lit(True))
    short = intervals.where(~long_enough).groupBy("check_id").agg(F.count(F.lit(1)).alias("short"))
    return intervals.where(long_enough), short
