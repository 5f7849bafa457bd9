"""The whole catalogue on two small clusters: a healthy one (no findings) and one with every problem.

Both clusters, with the clean cluster of every era (real ZooKeeper, snapshot and normalizer), run through
``run_checks`` once, as the snapshots of one keyed batch (one Spark action); the assertions then cover every
check id: its positive cases on the broken cluster and its negative case on the healthy one.
"""

from __future__ import annotations

import copy
import inspect
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from kazoo.client import KazooClient
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from kafka_zk_audit.audit.checks import CHECK_FUNCTIONS, FAMILIES, run_checks
from kafka_zk_audit.audit.checks.common import BASELINE_ID, family_functions
from kafka_zk_audit.audit.job import read_snapshots
from kafka_zk_audit.audit.keyed_io import collect_all_at_once, local_keyed
from kafka_zk_audit.audit.normalize import normalize
from kafka_zk_audit.audit.params import snapshot_params
from kafka_zk_audit.contract.catalogue import CHECK_IDS, CHECKS, KRAFT_CHECK_IDS, PAIRED_CHECK_IDS
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, KEY, TABLES, keyed
from kafka_zk_audit.contract.settings import load_config, parse_config
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.simulator.spec import ERAS

pytestmark = [pytest.mark.spark, pytest.mark.zk]  # the batch holds snapshots of real clusters

NOW = 1_800_000_000_000  # the snapshot's start time, epoch ms
MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000
PREVIOUS_SNAPSHOT = "20261122T050000Z"
FAMILY_NAMES = {module.__name__.rsplit(".", 1)[-1] for module in FAMILIES}
SNAPSHOT_KEY = "20261122T060000Z"  # the snapshot_id of the test frames
HEALTHY_KEY = "20261122T060000Z-healthy"  # the snapshot_id of the healthy cluster's frames, beside the broken one's


# ---------------------------------------------------------------------------------------------------
# Building normalized tables from plain rows


def make_tables(spark: SparkSession, rows: dict[str, list[dict[str, Any]]],
                snapshot_id: str = SNAPSHOT_KEY) -> dict[str, DataFrame]:
    """Every TABLES table from dict rows (missing tables empty, missing columns null), keyed by ``snapshot_id``.

    ``partitions`` is derived as the normalizer does: assignments FULL OUTER JOIN partition_states.
    """
    rows = {**rows, "partitions": derive_partitions(rows)}
    return {name: make_frame(spark, name, rows.get(name, []), snapshot_id) for name in TABLES}


def make_frame(spark: SparkSession, name: str, rows: list[dict[str, Any]],
               snapshot_id: str = SNAPSHOT_KEY) -> DataFrame:
    """One TABLES table from dict rows (missing columns null), keyed: ``snapshot_id`` (SNAPSHOT_KEY unless given)
    unless a row names its own."""
    schema = keyed(TABLES[name])
    records = [{column: row.get(column) for column in schema.names} for row in rows]
    for record in records:
        record[KEY] = record[KEY] or snapshot_id
    return spark.createDataFrame(pa.Table.from_pylist(records, schema=to_arrow_schema(schema)))


def derive_partitions(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    assigned = {(a["topic"], a["partition"]): a for a in rows.get("assignments", [])}
    states = {(s["topic"], s["partition"]): s for s in rows.get("partition_states", [])}
    out = []
    for key in sorted(set(assigned) | set(states)):
        a, s = assigned.get(key, {}), states.get(key, {})
        out.append({
            "topic": key[0], "partition": key[1], "replicas": a.get("replicas"),
            "leader": s.get("leader"), "isr": s.get("isr"), "leader_epoch": s.get("leader_epoch"),
            "controller_epoch": s.get("controller_epoch"), "assigned": bool(a), "has_state": bool(s),
            "path": s.get("path") or a.get("path"),
        })
    return out


def broker(broker_id: int, session: int, *endpoints: str, ephemeral: bool = True) -> dict[str, Any]:
    hosts = [e.split(":") for e in endpoints]
    return {
        "broker_id": broker_id, "version": 5, "host": hosts[0][0], "port": int(hosts[0][1]),
        "endpoints": [{"listener": "PLAINTEXT", "security_protocol": "PLAINTEXT", "host": h, "port": int(p)}
                      for h, p in hosts],
        "session": session if ephemeral else 0, "is_ephemeral": ephemeral, "path": f"/brokers/ids/{broker_id}",
    }


def topic(name: str, partitions: dict[int, list[int]], czxid: int,
          reassigning: dict[int, tuple[list[int], list[int]]] | None = None,
          **states: dict[str, Any]) -> dict[str, list]:
    """A topic's rows: topic, assignments, and a healthy state per partition unless overridden.

    ``reassigning`` maps a partition to its (adding_replicas, removing_replicas) while a reassignment
    runs (its replicas are then the union of the original and the target ones). ``states`` maps "p<n>"
    to state fields to override, or to None for no state znode.
    """
    moving = {p: {"adding_replicas": adding, "removing_replicas": removing}
              for p, (adding, removing) in (reassigning or {}).items()}
    out: dict[str, list] = {
        "topics": [{"topic": name, "version": 2, "partition_count": len(partitions), "czxid": czxid,
                    "path": f"/brokers/topics/{name}"}],
        "assignments": [{"topic": name, "partition": p, "replicas": r, "path": f"/brokers/topics/{name}",
                         **moving.get(p, {})}
                        for p, r in partitions.items()],
        "partition_states": [],
    }
    for p, replicas in partitions.items():
        override = states.get(f"p{p}", {})
        if override is None:
            continue
        out["partition_states"].append(state(name, p, **{
            "leader": replicas[0], "isr": sorted(set(replicas), key=replicas.index), **override,
        }))
    return out


def state(name: str, p: int, leader: int, isr: list[int], leader_epoch: int = 3,
          controller_epoch: int = 5) -> dict[str, Any]:
    return {"topic": name, "partition": p, "version": 1, "leader": leader, "isr": isr,
            "leader_epoch": leader_epoch, "controller_epoch": controller_epoch,
            "path": f"/brokers/topics/{name}/partitions/{p}/state"}


def topic_config(name: str) -> dict[str, Any]:
    return {"entity_type": "topics", "entity_name": name, "version": 1, "config": {},
            "path": f"/config/topics/{name}"}


def consumer(group: str, consumer_id: str, subscription: dict[str, int], pattern: str = "static",
             fmt: str = "kafka") -> dict[str, Any]:
    return {"group_id": group, "consumer_id": consumer_id, "format": fmt, "version": 1, "pattern": pattern,
            "subscription": subscription, "path": f"/consumers/{group}/ids/{consumer_id}"}


def owner(group: str, name: str, p: int, thread: str, node: str | None = None) -> dict[str, Any]:
    consumer_id, _, index = thread.rpartition("-")
    return {"group_id": group, "topic": name, "partition": p, "node_form": "broker_partition" if node else "partition",
            "owner": thread, "owner_consumer_id": consumer_id, "owner_thread_index": int(index),
            "path": f"/consumers/{group}/owners/{name}/{node or p}"}


def offset(group: str, name: str, p: int, value: int | None, raw: str | None = None) -> dict[str, Any]:
    return {"group_id": group, "topic": name, "partition": p, "offset": value,
            "raw": raw if raw is not None else str(value), "path": f"/consumers/{group}/offsets/{name}/{p}"}


def merge(*parts: dict[str, list]) -> dict[str, list]:
    out: dict[str, list] = {}
    for part in parts:
        for table, rows in part.items():
            out.setdefault(table, []).extend(rows)
    return out


def collect_by_label(frames: dict[str, DataFrame]) -> dict[str, list[tuple]]:
    """Collect several CHECK_OUTPUT frames in ONE Spark action, as sorted tuples per label:
    (check_id, topic, partition, group_id, broker_id, path, detail), plus "explained" for an explained row."""
    union = None
    for label, frame in frames.items():
        if "explained" not in frame.columns:  # frames shaped like check rows, e.g. the range assignment
            frame = frame.withColumn("explained", F.lit(False))
        labelled = frame.select(F.lit(label).alias("label"), *CHECK_OUTPUT.names)
        union = labelled if union is None else union.unionByName(labelled)
    assert union is not None
    out: dict[str, list[tuple]] = {label: [] for label in frames}
    for row in union.collect():
        out[row["label"]].append(tuple(row)[1:8] + (("explained",) if row["explained"] else ()))
    return {label: sorted(rows, key=repr) for label, rows in out.items()}


# ---------------------------------------------------------------------------------------------------
# The healthy cluster


def healthy_rows() -> dict[str, list]:
    return merge(
        {
            "brokers": [broker(1, 0x101, "kafka1:9092"), broker(2, 0x102, "kafka2:9092"),
                        broker(3, 0x103, "kafka3:9092", "kafka3:9093")],
            "controller": [{"broker_id": 1, "version": 2, "kraft_controller_epoch": -1, "session": 0x101,
                            "is_ephemeral": True, "path": "/controller"}],
            "controller_epoch": [{"epoch": 5, "data_version": 4, "path": "/controller_epoch"}],
            "configs": [topic_config("orders"), topic_config("report-log")],
            # Young markers: within their SLAs.
            "admin_markers": [
                {"kind": "delete_topic", "topic": "orders", "path": "/admin/delete_topics/orders",
                 "ctime": NOW - HOUR},
                {"kind": "reassignment", "topic": "orders", "partition": 0, "replicas": [1, 2, 3],
                 "path": "/admin/reassign_partitions", "ctime": NOW - HOUR},
                {"kind": "preferred_election", "topic": "report-log", "partition": 1,
                 "path": "/admin/preferred_replica_election", "ctime": NOW - 10 * MINUTE},
            ],
            # The last config changes, two days ago, stay until a newer change makes the brokers purge them.
            "notifications": [
                {"kind": "config_change", "parent": "/config/changes", "name": f"config_change_000000000{i}",
                 "seq": i, "path": f"/config/changes/config_change_000000000{i}",
                 "ctime": NOW - 2 * DAY + i * 5 * MINUTE}
                for i in range(2)
            ] + [{"kind": "isr_change", "parent": "/isr_change_notification", "name": "isr_change_0000000007",
                  "seq": 7, "path": "/isr_change_notification/isr_change_0000000007", "ctime": NOW - MINUTE}],
            # Range assignment of report-log (4 partitions) over threads g1_c1-0, g1_c2-0.
            "consumer_registrations": [consumer("g1", "g1_c1", {"report-log": 1}),
                                       consumer("g1", "g1_c2", {"report-log": 1})],
            "consumer_owners": [owner("g1", "report-log", 0, "g1_c1-0"), owner("g1", "report-log", 1, "g1_c1-0"),
                                owner("g1", "report-log", 2, "g1_c2-0"), owner("g1", "report-log", 3, "g1_c2-0")],
            "consumer_offsets": [offset("g1", "report-log", p, 100 + p) for p in range(4)],
        },
        # orders is queued for deletion: its leaders do not count for the preferred replica imbalance.
        topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, czxid=0x100, p1={"leader": 3}),
        # Two reassignments in progress (topic znode v2): p0 from [1, 2] to [1, 2, 3], broker 3 still
        # catching up; p1 from [2, 3] to [1, 2], its preferred replica 1 not yet in the isr.
        topic("report-log", {0: [1, 2, 3], 1: [1, 2, 3], 2: [3, 1], 3: [1, 2]}, czxid=0x200,
              reassigning={0: ([3], []), 1: ([1], [3])},
              p0={"isr": [1, 2]}, p1={"leader": 2, "isr": [2, 3]}),
    )


# ---------------------------------------------------------------------------------------------------
# The broken cluster: every check has at least one planted problem


def broken_rows() -> dict[str, list]:
    alpha = topic(
        "alpha",
        {0: [1, 2], 1: [1, 2], 2: [1, 7], 3: [1, 2], 4: [2, 2], 5: [1, 2], 7: [1, 2], 8: [2, 1]},
        czxid=0x10,
        p0={"isr": [2]},                       # leader 1 not in isr; under-replicated
        p1={"isr": [1, 2, 3]},                 # 3 is not a replica
        p2={"leader": 7, "isr": [7, 1]},       # dead leader, not preferred, replica on unknown broker 7
        p3={"leader": -1, "isr": [1]},         # offline; under-replicated
        p4={"isr": [2]},                       # duplicate replica; under-replicated
        p5=None,                               # no state znode
        p7={"controller_epoch": 9},            # ahead of /controller_epoch 5
        p8={"leader_epoch": 2},                # was 6 in the previous snapshot
    )
    alpha["partition_states"].append(state("alpha", 6, leader=1, isr=[1]))  # state without assignment
    return merge(
        alpha,
        topic("beta", {0: [1, 2, 3], 1: [1, 2]}, czxid=0x11),      # RF 3 and RF 2
        topic("gamma", {0: [1, 3]}, czxid=0x12),                    # no config; stuck deletion
        topic("delta", {0: [1, 2]}, czxid=0x30, p0={"leader_epoch": 1}),  # recreated (czxid was 0x20)
        {
            "brokers": [broker(1, 0x101, "kafka1:9092"),
                        broker(2, 0, "kafka2:9092", ephemeral=False),
                        broker(3, 0x103, "kafka3:9092", "kafka1:9092")],
            "controller": [{"broker_id": 1, "version": 2, "kraft_controller_epoch": -1, "session": 0x999,
                            "is_ephemeral": True, "path": "/controller"}],
            "controller_epoch": [{"epoch": 5, "data_version": 4, "path": "/controller_epoch"}],
            "configs": [topic_config("alpha"), topic_config("beta"), topic_config("delta"), topic_config("ghost")],
            "partition_states": [state("ghost", 0, leader=1, isr=[1])],
            "admin_markers": [
                {"kind": "delete_topic", "topic": "gamma", "path": "/admin/delete_topics/gamma",
                 "ctime": NOW - 2 * DAY},
                {"kind": "delete_topic", "topic": "zombie", "path": "/admin/delete_topics/zombie",
                 "ctime": NOW - MINUTE},
                {"kind": "reassignment", "topic": "beta", "partition": 0, "replicas": [1, 2, 3],
                 "path": "/admin/reassign_partitions", "ctime": NOW - 3 * DAY},
                {"kind": "reassignment", "topic": "alpha", "partition": 42, "replicas": [1, 8],
                 "path": "/admin/reassign_partitions", "ctime": NOW - 3 * DAY},
                {"kind": "preferred_election", "topic": "gamma", "partition": 0,
                 "path": "/admin/preferred_replica_election", "ctime": NOW - 2 * HOUR},
            ],
            "notifications": [
                {"kind": "isr_change", "parent": "/isr_change_notification", "name": "isr_change_0000000001",
                 "seq": 1, "path": "/isr_change_notification/isr_change_0000000001", "ctime": NOW - HOUR},
                {"kind": "log_dir_event", "parent": "/log_dir_event_notification",
                 "name": "log_dir_event_0000000001", "seq": 1,
                 "path": "/log_dir_event_notification/log_dir_event_0000000001", "ctime": NOW - MINUTE},
                # Not one of the audited queues: never a backlog here.
                {"kind": "acl_change", "parent": "/kafka-acl-changes", "name": "acl_changes_0000000001", "seq": 1,
                 "path": "/kafka-acl-changes/acl_changes_0000000001", "ctime": NOW - 9 * DAY},
            ] + [
                # More children than max_children is no backlog here: brokers purge only when a change comes.
                {"kind": "config_change", "parent": "/config/changes", "name": f"config_change_000000000{i}",
                 "seq": i, "path": f"/config/changes/config_change_000000000{i}", "ctime": NOW - MINUTE}
                for i in range(3, 6)
            ] + [
                # ...but a change 3 days older than one the brokers have processed was not purged.
                {"kind": "config_change", "parent": "/config/changes", "name": f"config_change_000000000{i}",
                 "seq": i, "path": f"/config/changes/config_change_000000000{i}", "ctime": NOW - age}
                for i, age in ((1, 3 * DAY + 2 * HOUR), (2, 2 * HOUR))
            ],
            # alpha's 8 assigned partitions over threads g1_c1-0 (p0, p1, p2, p3) and g1_c2-0 (p4, p5, p7, p8).
            "consumer_registrations": [consumer("g1", "g1_c1", {"alpha": 1}), consumer("g1", "g1_c2", {"alpha": 1})],
            "consumer_owners": [
                owner("g1", "alpha", 0, "g1_c1-0"),
                owner("g1", "alpha", 1, "g1_c2-0"),          # range gives g1_c1-0
                owner("g1", "alpha", 2, "g1_c9-0"),          # not registered (and range gives g1_c1-0)
                owner("g1", "alpha", 3, "g1_c1-0"),
                owner("g1", "alpha", 3, "g1_c1-0", node="1-3"),  # a second owner znode for partition 3
                owner("g1", "alpha", 5, "g1_c2-0"),          # partition 4 has no owner
                owner("g1", "alpha", 7, "g1_c2-0"),
                owner("g1", "alpha", 8, "g1_c2-0"),
            ],
            "consumer_offsets": [
                offset("g1", "alpha", 0, 50),                # was 80
                offset("g1", "alpha", 1, None, raw="abc"),
                offset("g1", "alpha", 2, -5),
                offset("g1", "alpha", 99, 10),               # alpha has no partition 99
                offset("g1", "delta", 0, 5),                 # was 900, before delta was recreated
                offset("g1", "ghost", 0, 7),                 # ghost was deleted
            ],
            "malformed_znodes": [{"kind": "broker", "reason": "invalid JSON", "path": "/brokers/ids/5"}],
            "unreadable_znodes": [{"kind": "config", "reason": "no_read_permission", "path": "/config/users/bob"}],
        },
    )


def broken_previous_rows() -> dict[str, list]:
    rows = copy.deepcopy(broken_rows())
    for s in rows["partition_states"]:
        if (s["topic"], s["partition"]) == ("alpha", 8):
            s["leader_epoch"] = 6
        if s["topic"] == "delta":
            s["leader_epoch"] = 9
    for t in rows["topics"]:
        if t["topic"] == "delta":
            t["czxid"] = 0x20
    rows["controller_epoch"][0]["epoch"] = 6
    for o in rows["consumer_offsets"]:
        o["offset"] = {("alpha", 0): 80, ("delta", 0): 900}.get((o["topic"], o["partition"]), o["offset"])
    return rows


def with_snapshot_id(tables: dict[str, DataFrame], snapshot_id: str) -> dict[str, DataFrame]:
    """Tables as the baseline of the snapshot they are keyed by: with the baseline's id (baseline_snapshot_id)."""
    return {name: frame.withColumn(BASELINE_ID, F.lit(snapshot_id)) for name, frame in tables.items()}


def baseline_of(tables: dict[str, DataFrame], snapshot_id: str) -> dict[str, DataFrame]:
    """Keyed tables of a snapshot as the baseline of ``snapshot_id``: keyed by it, their own id as
    baseline_snapshot_id."""
    return {name: frame.withColumn(BASELINE_ID, F.col(KEY)).withColumn(KEY, F.lit(snapshot_id))
            for name, frame in tables.items()}


def params_of(spark: SparkSession, config: Any, now_ms: int, snapshot_id: str = "") -> DataFrame:
    """The parameters of one test snapshot (SNAPSHOT_KEY unless named)."""
    return snapshot_params(spark, {snapshot_id or SNAPSHOT_KEY: (config, now_ms)})


BROKEN_CONFIG = {"notification_backlog": {"max_children": 2}}

EXPECTED_BROKEN = {
    # (check_id, topic, partition, group_id, broker_id, path)
    ("leader_not_in_isr", "alpha", 0, None, None, "/brokers/topics/alpha/partitions/0/state"),
    ("under_replicated", "alpha", 0, None, None, "/brokers/topics/alpha/partitions/0/state"),
    ("isr_not_subset_of_replicas", "alpha", 1, None, None, "/brokers/topics/alpha/partitions/1/state"),
    ("leader_not_alive", "alpha", 2, None, None, "/brokers/topics/alpha/partitions/2/state"),
    ("preferred_leader_not_leader", "alpha", 2, None, None, "/brokers/topics/alpha/partitions/2/state"),
    ("replica_on_unknown_broker", "alpha", 2, None, None, "/brokers/topics/alpha"),
    ("offline_partition", "alpha", 3, None, None, "/brokers/topics/alpha/partitions/3/state"),
    ("under_replicated", "alpha", 3, None, None, "/brokers/topics/alpha/partitions/3/state"),
    ("duplicate_replica", "alpha", 4, None, None, "/brokers/topics/alpha"),
    ("under_replicated", "alpha", 4, None, None, "/brokers/topics/alpha/partitions/4/state"),
    ("partition_state_missing", "alpha", 5, None, None, "/brokers/topics/alpha"),
    ("partition_state_orphaned", "alpha", 6, None, None, "/brokers/topics/alpha/partitions/6/state"),
    ("partition_state_orphaned", "ghost", 0, None, None, "/brokers/topics/ghost/partitions/0/state"),
    ("partition_epoch_ahead_of_controller", "alpha", 7, None, None, "/brokers/topics/alpha/partitions/7/state"),
    ("leader_epoch_regressed", "alpha", 8, None, None, "/brokers/topics/alpha/partitions/8/state"),
    ("replication_factor_inconsistent", "beta", None, None, None, "/brokers/topics/beta"),
    ("controller_session_mismatch", None, None, None, 1, "/controller"),
    ("controller_epoch_regressed", None, None, None, None, "/controller_epoch"),
    ("broker_registration_not_ephemeral", None, None, None, 2, "/brokers/ids/2"),
    ("broker_endpoint_conflict", None, None, None, 1, "/brokers/ids/1"),
    ("broker_endpoint_conflict", None, None, None, 3, "/brokers/ids/3"),
    ("topic_config_missing", "gamma", None, None, None, "/brokers/topics/gamma"),
    ("deleted_topic_remnants", "ghost", None, None, None, "/config/topics/ghost"),
    ("deleted_topic_remnants", "ghost", None, None, None, "/brokers/topics/ghost/partitions/0/state"),
    ("deleted_topic_remnants", "ghost", None, None, None, "/consumers/g1/offsets/ghost/0"),
    ("delete_topic_stuck", "gamma", None, None, None, "/admin/delete_topics/gamma"),
    ("delete_marker_orphaned", "zombie", None, None, None, "/admin/delete_topics/zombie"),
    ("reassignment_stuck", "beta", 0, None, None, "/admin/reassign_partitions"),
    ("reassignment_stuck", "alpha", 42, None, None, "/admin/reassign_partitions"),
    ("reassignment_invalid", "alpha", 42, None, None, "/admin/reassign_partitions"),
    ("preferred_election_stuck", "gamma", 0, None, None, "/admin/preferred_replica_election"),
    ("notification_backlog", None, None, None, None, "/isr_change_notification"),
    ("notification_backlog", None, None, None, None, "/config/changes"),
    ("owner_not_registered", "alpha", 2, "g1", None, "/consumers/g1/owners/alpha/2"),
    ("partition_multiply_owned", "alpha", 3, "g1", None, "/consumers/g1/owners/alpha/1-3"),
    ("partition_unowned", "alpha", 4, "g1", None, "/consumers/g1/owners/alpha/4"),
    ("owner_assignment_mismatch", "alpha", 1, "g1", None, "/consumers/g1/owners/alpha/1"),
    ("owner_assignment_mismatch", "alpha", 2, "g1", None, "/consumers/g1/owners/alpha/2"),
    ("offset_invalid", "alpha", 1, "g1", None, "/consumers/g1/offsets/alpha/1"),
    ("offset_invalid", "alpha", 2, "g1", None, "/consumers/g1/offsets/alpha/2"),
    ("offset_for_unknown_partition", "alpha", 99, "g1", None, "/consumers/g1/offsets/alpha/99"),
    ("offset_for_unknown_partition", "ghost", 0, "g1", None, "/consumers/g1/offsets/ghost/0"),
    ("offset_regressed", "alpha", 0, "g1", None, "/consumers/g1/offsets/alpha/0"),
    ("offset_regressed", "delta", 0, "g1", None, "/consumers/g1/offsets/delta/0"),
    ("malformed_znode", None, None, None, None, "/brokers/ids/5"),
    ("unreadable_znode", None, None, None, None, "/config/users/bob"),
}


SMALL_DATA_SETTINGS = {
    # The shared session already has the audit's small-batch settings (audit.session.size_spark_to: no code
    # generation, no adaptive re-planning); on a few rows one shuffle partition is cheaper still.
    "spark.sql.shuffle.partitions": "1",
}


@contextmanager
def small_data_settings(spark: SparkSession) -> Iterator[SparkSession]:
    """The shared session tuned for tiny tables while a module runs, then restored."""
    previous = {key: spark.conf.get(key) for key in SMALL_DATA_SETTINGS}
    for key, value in SMALL_DATA_SETTINGS.items():
        spark.conf.set(key, value)
    try:
        yield spark
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)


@pytest.fixture(scope="module")
def small_data_spark(spark: SparkSession) -> Iterator[SparkSession]:
    with small_data_settings(spark):
        yield spark


@pytest.fixture(scope="module")
def results(catalogue_run: dict[str, Any]) -> dict[str, list[tuple]]:
    """What was found on the healthy cluster, on the broken one (each with its baseline) and by the broken one's
    history checks without a baseline, as ``collect_by_label`` gives them."""
    return catalogue_run["clusters"]


def test_registry_covers_the_catalogue() -> None:
    # every check but the paired ones (the migration diff's: merged from the diff, audit.paired) has its function
    assert set(CHECK_FUNCTIONS) == set(CHECK_IDS) - set(PAIRED_CHECK_IDS)
    for check_id, function in CHECK_FUNCTIONS.items():
        assert function.__doc__ and function.__doc__.strip(), f"{check_id} needs a docstring"


def test_each_check_function_takes_what_its_spec_names() -> None:
    """The catalogue's spec of a check is its function's signature: its tables, previous_<table> of each baseline
    table, then params (run_check passes them by name, in no other way)."""
    for check in (check for check in CHECKS if not check.paired):
        function = CHECK_FUNCTIONS[check.check_id]
        assert function.__name__ == check.check_id and function.__module__.rsplit(".", 1)[-1] in FAMILY_NAMES
        assert tuple(inspect.signature(function).parameters) == check.arguments, check.check_id


def test_a_check_is_found_in_exactly_one_family() -> None:
    """A check's function is the one a family module defines under its id (a module that imports it does not
    count); none, or two, is an error."""
    def found() -> None: ...

    one, other = types.ModuleType("one"), types.ModuleType("other")
    found.__module__ = "one"
    one.found = other.found = found  # type: ignore[attr-defined]
    assert family_functions(["found"], (one, other)) == {"found": found}
    with pytest.raises(LookupError, match="no_such_check must be defined in exactly one of one, other; found 0"):
        family_functions(["no_such_check"], (one, other))
    twin = types.ModuleType("twin")
    twin.found = types.FunctionType(found.__code__, {}, "found")  # type: ignore[attr-defined]
    twin.found.__module__ = "twin"
    with pytest.raises(LookupError, match="found 2"):
        family_functions(["found"], (one, twin))


def test_healthy_cluster_has_no_findings(results: dict[str, list[tuple]]) -> None:
    assert results["healthy"] == []


def test_broken_cluster_has_exactly_the_planted_findings(results: dict[str, list[tuple]]) -> None:
    found = [row[:6] for row in results["broken"]]
    assert len(found) == len(set(found)), "one row per finding identity"
    assert set(found) == EXPECTED_BROKEN
    # One /controller znode cannot be missing, dead and mismatched at once: test_checks_scenarios.py
    # covers controller_missing and controller_not_alive.
    # The migration health checks need a migration in flight: test_migration.py covers them. The KRaft checks
    # need a KRaft metadata log: the fleet's KRaft clusters cover them (tests/system/test_kraft_fleet.py).
    assert {row[0] for row in found} == set(CHECK_IDS) - {"controller_missing", "controller_not_alive"} - {
        c for c in CHECK_IDS if c.startswith("migration_")} - set(KRAFT_CHECK_IDS)


def test_broken_cluster_details(results: dict[str, list[tuple]]) -> None:
    detail = {row[:6]: row[6] for row in results["broken"]}

    def of(check_id: str, **subject: Any) -> str:
        matches = [d for key, d in detail.items() if key[0] == check_id and all(
            key[("topic", "partition", "group_id", "broker_id", "path").index(k) + 1] == v
            for k, v in subject.items())]
        assert len(matches) == 1, (check_id, subject, matches)
        return matches[0]

    assert of("leader_not_in_isr") == "leader 1 not in isr [2]"
    assert of("isr_not_subset_of_replicas") == "isr members [3] of isr [1, 2, 3] are not in replicas [1, 2]"
    assert of("leader_not_alive") == "leader 7 is not registered under /brokers/ids"
    assert of("offline_partition") == "leader is -1 (no leader), isr [1]"
    assert of("under_replicated", partition=0) == "isr [2] has 1 of 2 replicas [1, 2]"
    assert of("preferred_leader_not_leader") == "leader 7 is not the preferred replica 1 of replicas [1, 7]"
    assert of("replica_on_unknown_broker") == "replicas [7] of [1, 7] are not registered under /brokers/ids"
    assert of("duplicate_replica") == "brokers [2] appear more than once in replicas [2, 2]"
    assert of("replication_factor_inconsistent") == (
        "partitions have different replication factors: RF 2 on 1 partition(s), RF 3 on 1 partition(s)"
    )
    assert of("partition_epoch_ahead_of_controller") == "controller_epoch 9 in state > /controller_epoch 5"
    assert of("leader_epoch_regressed") == f"leader_epoch 2 < 6 in previous snapshot {PREVIOUS_SNAPSHOT}"
    assert of("controller_epoch_regressed") == f"/controller_epoch 5 < 6 in previous snapshot {PREVIOUS_SNAPSHOT}"
    assert of("controller_session_mismatch") == (
        "/controller ephemeralOwner 0x999 differs from broker 1's registration session 0x101"
    )
    assert of("broker_endpoint_conflict", broker_id=1) == "endpoint kafka1:9092 is also advertised by broker 3"
    assert of("broker_endpoint_conflict", broker_id=3) == "endpoint kafka1:9092 is also advertised by broker 1"
    assert of("topic_config_missing") == "topic gamma has no /config/topics/gamma znode"
    assert of("deleted_topic_remnants", path="/consumers/g1/offsets/ghost/0") == (
        "1 consumer offset znode(s) left for topic ghost, which has no /brokers/topics/ghost "
        "(first: /consumers/g1/offsets/ghost/0)"
    )
    # Ages: the snapshot's start (NOW, the auditor's clock) minus the znode's ctime (ZooKeeper's).
    assert of("delete_topic_stuck") == (
        "topic gamma marked for deletion 2d ago (SLA 1d; age = snapshot start 2027-01-15T08:00:00Z - znode ctime "
        "2027-01-13T08:00:00Z) and /brokers/topics/gamma still exists"
    )
    assert of("reassignment_stuck", topic="alpha") == (
        "reassignment of alpha-42 to replicas [1, 8] pending for 3d (SLA 1d; age = snapshot start "
        "2027-01-15T08:00:00Z - znode ctime 2027-01-12T08:00:00Z)"
    )
    assert of("reassignment_invalid") == (
        "reassignment entry alpha-42 to [1, 8]: alpha-42 is not an assigned partition; "
        "target replicas [8] are not registered brokers"
    )
    assert of("preferred_election_stuck") == (
        "preferred replica election of gamma-0 pending for 2h (SLA 1h; age = snapshot start 2027-01-15T08:00:00Z"
        " - znode ctime 2027-01-15T06:00:00Z)"
    )
    assert of("notification_backlog", path="/isr_change_notification") == (
        "1 child znode(s), the oldest 1h old (limits: 2 children, 30m; age = snapshot start 2027-01-15T08:00:00Z"
        " - ctime 2027-01-15T07:00:00Z)"
    )
    assert of("notification_backlog", path="/config/changes") == (
        "1 child znode(s) not purged: the oldest (ctime 2027-01-12T06:00:00Z) is 3d older than the change of "
        "2027-01-15T06:00:00Z; brokers processing a change purge those more than 15m older (tolerance 30m)"
    )
    assert of("owner_not_registered") == (
        "owner g1_c9-0 names consumer g1_c9, which is not registered under /consumers/g1/ids"
    )
    assert of("partition_multiply_owned") == (
        "claimed by 2 owner znodes: g1_c1-0, g1_c1-0 "
        "(/consumers/g1/owners/alpha/1-3, /consumers/g1/owners/alpha/3)"
    )
    assert of("partition_unowned") == (
        "partition 4 of alpha has no owner although 2 live consumer(s) of the group subscribe to it"
    )
    assert of("owner_assignment_mismatch", partition=1) == "owned by g1_c2-0, range assignment gives g1_c1-0"
    assert of("offset_invalid", partition=1) == 'offset data "abc" is not a decimal long'
    assert of("offset_invalid", partition=2) == "offset -5 is negative"
    assert of("offset_for_unknown_partition", topic="alpha") == (
        "offset for partition 99 of alpha, which has no such partition (partition_count 8)"
    )
    assert of("offset_for_unknown_partition", topic="ghost") == (
        "offset for partition 0 of ghost, which does not exist (no /brokers/topics/ghost)"
    )
    assert of("offset_regressed", topic="alpha") == f"offset 50 < 80 in previous snapshot {PREVIOUS_SNAPSHOT}"
    assert of("offset_regressed", topic="delta") == (
        f"offset 5 < 900 in previous snapshot {PREVIOUS_SNAPSHOT}; "
        "explained: the topic was deleted and recreated (czxid 0x20 → 0x30)"
    )
    explained = {row[:6] for row in results["broken"] if row[7:] == ("explained",)}
    assert explained == {("offset_regressed", "delta", 0, "g1", None, "/consumers/g1/offsets/delta/0")}
    assert of("malformed_znode") == "malformed broker: invalid JSON"
    assert of("unreadable_znode") == (
        "no READ permission to read its data or list its children (config znode); checks that need it skip it"
    )


def test_history_checks_without_baseline_report_nothing(results: dict[str, list[tuple]]) -> None:
    assert results["broken_no_baseline"] == []


def test_recreated_topic_does_not_count_as_leader_epoch_regression(results: dict[str, list[tuple]]) -> None:
    regressed = {(row[1], row[2]) for row in results["broken"] if row[0] == "leader_epoch_regressed"}
    assert ("delta", 0) not in regressed
    assert ("alpha", 8) in regressed


# ---------------------------------------------------------------------------------------------------
# Clean simulated clusters of every era, through the real ZooKeeper, snapshot and normalizer


def take_snapshot(zk_hosts: str, chroot: str, warehouse: Warehouse, snapshot_id: str,
                  cluster: str | None = None) -> dict[str, Any]:
    """Walk ``chroot`` with the project's walker into ``warehouse`` (as the fleet's ``cluster``); the manifest."""
    settings = ZkSettings(hosts=zk_hosts, chroot=chroot)
    client = KazooClient(**settings.kazoo_kwargs())
    client.start(timeout=15)
    try:
        return write_snapshot(client, settings, warehouse, snapshot_id, cluster=cluster)
    finally:
        client.stop()
        client.close()


def baselines_of(tables: dict[str, DataFrame], rekey: dict[str, str]) -> dict[str, DataFrame]:
    """Keyed tables of several snapshots as the baselines of others (``rekey``: baseline id -> snapshot id)."""
    snapshot_of = F.create_map(*[F.lit(value) for pair in rekey.items() for value in pair])
    return {name: frame.withColumn(BASELINE_ID, F.col(KEY)).withColumn(KEY, snapshot_of[F.col(KEY)])
            for name, frame in tables.items()}


@dataclass
class EraSnapshots:
    """The clean cluster of every era, snapshotted twice: the ids of each era's snapshots, the second's start
    (epoch ms) and the readiness rows the era's clusters carry at 3.9."""

    first: dict[str, str]
    second: dict[str, str]
    started: dict[str, int]
    expected: dict[str, set]


def snapshot_every_era(zk_server: Any, warehouse: Warehouse) -> EraSnapshots:
    """A clean cluster of every era, each in a chroot of its own: the simulator writes it (with __consumer_offsets,
    topic config overrides, old consumer groups), it is snapshotted, time passes (a controller failover, leader
    elections, offsets committed) and it is snapshotted again."""
    from kafka_zk_audit_testing.simulator.readiness_plants import inherent_readiness
    from tests.audit.test_readiness import expected_rows

    chroots = {era: "/eras_" + era.replace(".", "_") for era in ERAS}
    first = {era: f"20260101T000000Z-{chroots[era][6:]}" for era in ERAS}
    second = {era: f"20260101T010000Z-{chroots[era][6:]}" for era in ERAS}
    sims: dict[str, Simulator] = {}
    started: dict[str, int] = {}
    try:
        for era, chroot in chroots.items():
            zk_server.ensure_chroot(chroot)
            sims[era] = Simulator(hosts=zk_server.hosts + chroot)
            sims[era].write(ClusterSpec(era=era, brokers=3, racks=2, topics=4, partitions=3, replication_factor=2,
                                        groups=2, consumers_per_group=2, threads_per_consumer=2, internal_topics=True,
                                        seed=11))
            take_snapshot(zk_server.hosts, chroot, warehouse, first[era])
        for era, sim in sims.items():
            sim.advance()
            manifest = take_snapshot(zk_server.hosts, chroots[era], warehouse, second[era])
            started[era] = int(datetime.fromisoformat(manifest["started_at"]).timestamp() * 1000)
        expected = {era: expected_rows(inherent_readiness(sim), "3.9") for era, sim in sims.items()}
    finally:
        for sim in sims.values():
            sim.close()
    return EraSnapshots(first, second, started, expected)


def as_finding_tuples(rows: list[Row]) -> list[tuple]:
    """CHECK_OUTPUT rows as ``collect_by_label`` gives them: sorted (check_id, topic, partition, group_id, broker_id,
    path, detail) tuples, plus "explained" for an explained row."""
    return sorted((tuple(row[name] for name in CHECK_OUTPUT.names[:7]) + (("explained",) if row["explained"] else ())
                   for row in rows), key=repr)


def rows_of(table: pa.Table, snapshot_ids: Iterable[str]) -> pa.Table:
    """The keyed Arrow rows of the given snapshots."""
    return table.filter(pc.is_in(table[KEY], value_set=pa.array(list(snapshot_ids), pa.string())))


@pytest.fixture(scope="module")
def catalogue_run(small_data_spark: SparkSession, zk_server, tmp_path_factory) -> dict[str, Any]:
    """Every check, once, over one keyed batch of eleven snapshots, each with its own baseline and parameters: the
    healthy and the broken cluster built from rows, and the clean cluster of every era (``snapshot_every_era``),
    normalized from its real snapshots. Then, apart, the broken cluster's history checks without any baseline, and
    readiness at 3.9 on the eras.

    Returns "clusters" (the ``results`` of the healthy and broken clusters) and "eras" (per era: what was found,
    the readiness rows, and the readiness rows the era's clusters carry, the oracle: the readiness note's levels).
    """
    from kafka_zk_audit.audit.checks.readiness import run_readiness
    from kafka_zk_audit.contract.warehouse import read_manifest

    spark, warehouse = small_data_spark, Warehouse(str(tmp_path_factory.mktemp("eras") / "wh"))
    eras = snapshot_every_era(zk_server, warehouse)
    # The eras' snapshots, both of each, normalized together and held as the audit holds a small batch's tables
    # (audit.job.audit_batch): collected in one job, then local relations, like the frames built from rows.
    normalized = normalize(read_snapshots(spark, warehouse, [*eras.first.values(), *eras.second.values()]))
    try:
        collected = collect_all_at_once(normalized)
    finally:
        normalized.release()
    era_tables = {name: local_keyed(spark, rows_of(collected[name], eras.second.values()), TABLES[name])
                  for name in TABLES}
    earlier = {name: local_keyed(spark, rows_of(collected[name], eras.first.values()), TABLES[name])
               for name in TABLES}
    era_baseline = baselines_of(earlier, {eras.first[era]: eras.second[era] for era in ERAS})
    healthy = make_tables(spark, healthy_rows(), HEALTHY_KEY)
    broken = make_tables(spark, broken_rows())
    healthy_before = with_snapshot_id(healthy, HEALTHY_KEY)  # the healthy cluster is its own baseline
    broken_before = with_snapshot_id(make_tables(spark, broken_previous_rows()), PREVIOUS_SNAPSHOT)
    tables = {name: healthy[name].unionByName(broken[name]).unionByName(era_tables[name]) for name in TABLES}
    previous = {name: healthy_before[name].unionByName(broken_before[name]).unionByName(era_baseline[name])
                for name in TABLES}
    params = snapshot_params(spark, {
        HEALTHY_KEY: (load_config(None), NOW), SNAPSHOT_KEY: (parse_config(BROKEN_CONFIG), NOW),
        **{eras.second[era]: (load_config(None), eras.started[era]) for era in ERAS},
    })
    found = run_checks(tables, previous, params).select(KEY, *CHECK_OUTPUT.names).collect()
    no_baseline = collect_by_label({
        "broken_no_baseline": run_checks(broken, None, params_of(spark, parse_config(BROKEN_CONFIG), NOW),
                                         check_ids=(
            "leader_epoch_regressed", "controller_epoch_regressed", "offset_regressed",
        )),
    })
    targets = {eras.second[era]: (read_manifest(warehouse, eras.second[era]), "3.9") for era in ERAS}
    readiness = run_readiness(era_tables, read_snapshots(spark, warehouse, list(eras.second.values())),
                              targets).collect()
    found_by_key: dict[str, list[Row]] = {sid: [] for sid in (HEALTHY_KEY, SNAPSHOT_KEY, *eras.second.values())}
    for row in found:
        found_by_key[row[KEY]].append(row)  # a row of no snapshot of the batch fails here
    era_of = {sid: era for era, sid in eras.second.items()}
    by_era: dict[str, dict[str, Any]] = {
        era: {"found": [row.asDict() for row in found_by_key[eras.second[era]]], "readiness": [],
              "expected": eras.expected[era]}
        for era in ERAS
    }
    for row in readiness:
        by_era[era_of[row[KEY]]]["readiness"].append(row.asDict())
    clusters = {"healthy": as_finding_tuples(found_by_key[HEALTHY_KEY]),
                "broken": as_finding_tuples(found_by_key[SNAPSHOT_KEY]), **no_baseline}
    return {"clusters": clusters, "eras": by_era}


@pytest.fixture(scope="module")
def every_era(catalogue_run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per era, the clean cluster's findings (its second snapshot, with its first as baseline, in the module's one
    batch), its readiness rows at 3.9 and the readiness rows its clusters carry."""
    return catalogue_run["eras"]


@pytest.mark.parametrize("era", list(ERAS))
def test_clean_cluster_of_every_era_has_no_finding_of_any_severity(era: str, every_era) -> None:
    """Every check on a clean cluster of the era, with its earlier snapshot as baseline: nothing at all (the nine
    eras are audited together, with the healthy and the broken cluster, as one keyed batch)."""
    from tests.audit.test_readiness import found_rows

    assert every_era[era]["found"] == []
    # Readiness is computed on every era without error: exactly what the era's clusters carry (an 0.8 cluster
    # cannot migrate before it is upgraded; a 3.x one only has information rows), never a finding.
    assert found_rows(every_era[era]["readiness"]) == every_era[era]["expected"]
