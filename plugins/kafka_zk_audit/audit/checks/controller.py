"""Controller checks: /controller and /controller_epoch against the broker registrations.

Each check is a declaration (``engine.check``): the checks of one frame are evaluated together in one select, with
the facts they name joined once.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import (
    REGISTERED_BROKERS,
    check,
    kraft_controller,
    previous_snapshot,
    say,
    zk_id,
)
from kafka_zk_audit.audit.checks.engine import Finds, fact, view
from kafka_zk_audit.audit.params import Params
from kafka_zk_audit.contract.schemas import KEY

CONTROLLER_PATH = "/controller"


@view
def controller_audited_snapshots(params: Params) -> DataFrame:
    """(snapshot_id): the audited snapshots (those of ``params``), one row each."""
    return params.keys()


@fact(defaults={"has_controller_znode": "false"})
def has_controller_znode(controller: DataFrame) -> DataFrame:
    """(snapshot_id, has_controller_znode): the snapshots with a /controller znode (False for others)."""
    return controller.select(KEY).distinct().withColumn("has_controller_znode", F.lit(True))


@fact(defaults={"has_kraft_log": "false"})
def has_kraft_log(kraft_log: DataFrame) -> DataFrame:
    """(snapshot_id, has_kraft_log): the snapshots of a KRaft cluster, with a metadata log (False for others)."""
    return kraft_log.select(KEY).distinct().withColumn("has_kraft_log", F.lit(True))


@check(controller_audited_snapshots, facts=(has_controller_znode, has_kraft_log))
def controller_missing() -> Finds:
    """A /controller znode exists (in every snapshot of ``params``, the audited snapshots: one row each) of a
    ZooKeeper cluster; a KRaft cluster's quorum leader is quorum_leader_missing's."""
    return Finds(where=~F.col("has_controller_znode") & ~F.col("has_kraft_log"), path=F.lit(CONTROLLER_PATH),
                 detail=F.lit("no /controller znode: no broker is acting as controller"))


@check("controller", facts=(REGISTERED_BROKERS,))
def controller_not_alive() -> Finds:
    """/controller's brokerid is registered under /brokers/ids (except a KRaft controller during migration)."""
    return Finds(
        where=(F.col("broker_id").isNotNull() & ~kraft_controller()
               & ~F.array_contains("registered_brokers", F.col("broker_id"))),
        broker_id="broker_id", path="path",
        detail=say("controller broker %s is not registered under /brokers/ids", "broker_id"),
    )


@view
def controller_registrations(controller: DataFrame, brokers: DataFrame) -> DataFrame:
    """(snapshot_id, broker_id, session, path, broker_session): a ZooKeeper-mode /controller beside the
    registration of its broker (one row per registration with that broker id)."""
    registrations = brokers.select(KEY, "broker_id", F.col("session").alias("broker_session"))
    return (
        controller.where(~kraft_controller())
        .select(KEY, "broker_id", "session", "path")
        .join(registrations, [KEY, "broker_id"])
    )


@check(controller_registrations)
def controller_session_mismatch() -> Finds:
    """/controller's ephemeralOwner is the session of that broker's registration (when both are known)."""
    return Finds(
        where=(F.col("session").isNotNull() & F.col("broker_session").isNotNull()
               & (F.col("session") != F.col("broker_session"))),
        broker_id="broker_id", path="path",
        detail=say("/controller ephemeralOwner %s differs from broker %s's registration session %s",
                   zk_id("session"), "broker_id", zk_id("broker_session")),
    )


@view
def controller_epoch_history(controller_epoch: DataFrame,
                             previous_controller_epoch: DataFrame | None) -> DataFrame | None:
    """/controller_epoch beside its baseline's (previous_epoch, previous_ctime, previous_snapshot); None without a
    baseline. The previous table is keyed by the snapshot it is the baseline of: a snapshot without previous rows
    has no baseline."""
    if previous_controller_epoch is None:
        return None
    before = previous_controller_epoch.select(
        KEY, F.col("epoch").alias("previous_epoch"), F.col("ctime").alias("previous_ctime"),
        previous_snapshot(previous_controller_epoch).alias("previous_snapshot"),
    )
    return controller_epoch.select(KEY, "epoch", "path", "ctime").join(before, KEY)


@check(controller_epoch_history)
def controller_epoch_regressed() -> Finds:
    """/controller_epoch never decreases between snapshots (unless the znode was created anew).

    Kafka never deletes /controller_epoch: a znode with another ctime than before belongs to a new
    cluster written into the same chroot, whose epochs start over. A ZooKeeper restored from a backup
    keeps the ctime, and its lower epoch is reported. The previous table is keyed by the snapshot it is the
    baseline of: a snapshot without previous rows has no baseline.
    """
    recreated = F.coalesce(F.col("ctime") != F.col("previous_ctime"), F.lit(False))
    return Finds(where=(F.col("epoch") < F.col("previous_epoch")) & ~recreated, path="path",
                 detail=say("/controller_epoch %s < %s in previous snapshot%s", "epoch", "previous_epoch",
                            "previous_snapshot"))
