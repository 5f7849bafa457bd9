"""Controller checks: /controller and /controller_epoch against the broker registrations."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    empty_output,
    kraft_controller,
    previous_snapshot,
    say,
    to_output,
    zk_id,
)
from kafka_zk_audit.audit.params import Params
from kafka_zk_audit.contract.schemas import KEY

CONTROLLER_PATH = "/controller"


def controller_missing(controller: DataFrame, kraft_log: DataFrame, params: Params) -> DataFrame:
    """A /controller znode exists (in every snapshot of ``params``, the audited snapshots: one row each) of a
    ZooKeeper cluster; a KRaft cluster's quorum leader is quorum_leader_missing's."""
    rows = params.keys().join(controller.select(KEY), KEY, "left_anti").join(kraft_log.select(KEY), KEY, "left_anti")
    return to_output(
        rows, "controller_missing", path=F.lit(CONTROLLER_PATH),
        detail=F.lit("no /controller znode: no broker is acting as controller"),
    )


def controller_not_alive(controller: DataFrame, brokers: DataFrame) -> DataFrame:
    """/controller's brokerid is registered under /brokers/ids (except a KRaft controller during migration)."""
    registered = brokers.select(KEY, "broker_id").where(F.col("broker_id").isNotNull())
    rows = (
        controller.where(F.col("broker_id").isNotNull() & ~kraft_controller())
        .join(registered, [KEY, "broker_id"], "left_anti")
    )
    return to_output(
        rows, "controller_not_alive", broker_id="broker_id", path="path",
        detail=say("controller broker %s is not registered under /brokers/ids", "broker_id"),
    )


def controller_session_mismatch(controller: DataFrame, brokers: DataFrame) -> DataFrame:
    """/controller's ephemeralOwner is the session of that broker's registration (when both are known)."""
    registrations = brokers.select(KEY, "broker_id", F.col("session").alias("broker_session"))
    rows = (
        controller.where(~kraft_controller())
        .select(KEY, "broker_id", "session", "path")
        .join(registrations, [KEY, "broker_id"])
        .where(F.col("session").isNotNull() & F.col("broker_session").isNotNull())
        .where(F.col("session") != F.col("broker_session"))
    )
    return to_output(
        rows, "controller_session_mismatch", broker_id="broker_id", path="path",
        detail=say("/controller ephemeralOwner %s differs from broker %s's registration session %s",
                   zk_id("session"), "broker_id", zk_id("broker_session")),
    )


def controller_epoch_regressed(controller_epoch: DataFrame, previous_controller_epoch: DataFrame | None) -> DataFrame:
    """/controller_epoch never decreases between snapshots (unless the znode was created anew).

    Kafka never deletes /controller_epoch: a znode with another ctime than before belongs to a new
    cluster written into the same chroot, whose epochs start over. A ZooKeeper restored from a backup
    keeps the ctime, and its lower epoch is reported. The previous table is keyed by the snapshot it is the
    baseline of: a snapshot without previous rows has no baseline.
    """
    if previous_controller_epoch is None:
        return empty_output(controller_epoch, "controller_epoch_regressed")
    before = previous_controller_epoch.select(
        KEY, F.col("epoch").alias("previous_epoch"), F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_controller_epoch).alias("previous_snapshot"),
    )
    recreated = F.coalesce(F.col("ctime") != F.col("previous_ctime"), F.lit(False))
    rows = (
        controller_epoch.select(KEY, "epoch", "path", "ctime")
        .join(before, KEY)
        .where((F.col("epoch") < F.col("previous_epoch")) & ~recreated)
    )
    return to_output(
        rows, "controller_epoch_regressed", path="path",
        detail=say("/controller_epoch %s < %s in previous snapshot%s", "epoch", "previous_epoch", "previous_snapshot"),
    )
