"""The DAG ``kafka_zk_audit``: every cluster of the fleet, snapshot → one Spark audit → one GX gate → summaries.

    clusters ──▶ snapshot ×N (kazoo, mapped, bounded) ──▶ audit (one spark-submit for every snapshot)
             ──▶ gate (Great Expectations, per cluster)
             ──▶ history ×N (mapped: what happened since the last run, from each cluster's ZooKeeper files)
             ──▶ summary (alerts: triggers and resolves; per cluster + fleet summaries, Asset events)
             ──▶ retention ──▶ verdict (fails the run when a cluster is red or could not be audited)

``dags/kafka_zk_audit.py`` builds it with :func:`build_dag`. The schedule, the clusters and the bounds come
from the audit settings file named by ``$KAFKA_ZK_AUDIT_CONFIG`` (read when Airflow parses the DAG; the
packaged defaults when unset: hourly, one cluster ``default`` on the connection of the ``zk_conn_id`` param).
Any task that fails for good alerts (which cluster, which task, why, where the log is); the summary task sends the
findings' alerts at every run: a trigger when a finding starts firing (it persisted past its check's ``for``), a
resolve when a firing one is gone. Each audited cluster publishes an Asset event ``kafka-zk-audit://<cluster>``
whose extra carries its summary's counts. A history that fails alerts too, but never makes the run red by itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

from airflow.sdk import DAG, Asset, AssetAlias, AssetAny, AssetWatcher, Param, task
from airflow.sdk.exceptions import AirflowFailException

from kafka_zk_audit.airflow.notifications.task_failure import GateVerdictFailure, TaskFailureNotifier
from kafka_zk_audit.airflow.operators.audit_gate import AuditGateOperator
from kafka_zk_audit.airflow.operators.audit_spark_connect import AuditSparkConnectOperator
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.airflow.operators.zookeeper_history import ZooKeeperHistoryOperator
from kafka_zk_audit.airflow.operators.zookeeper_snapshot import ZooKeeperSnapshotOperator
from kafka_zk_audit.airflow.xcoms import snapshot_id_list
from kafka_zk_audit.audit.session import submit_conf
from kafka_zk_audit.contract.settings import AuditConfig, load_config
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse

DAG_ID = "kafka_zk_audit"
EVENTS_DAG_ID = "kafka_zk_audit_events"
WATCH_SCHEME = "kafka-zk-audit-watch://"
EVENTS_DOC = """The DAG ``kafka_zk_audit_events``: the stages of ``kafka_zk_audit`` for just the clusters whose
Kafka metadata changed. The triggerer watches every cluster (the settings' ``events``); a burst of changes,
debounced, updates the cluster's Asset ``kafka-zk-audit-watch://<cluster>``, which starts this DAG; so does the end
of a pending finding's ``for``. Same warehouse, history and alert state as the scheduled DAG (the safety net). It
watches only clusters read from their ensemble, which have no ZooKeeper files to read a history from: it has no
history task (one task less between the change and its alert). With the settings' ``events.spark_connect_conn_id``,
its audit runs through that long-lived Spark Connect server (spark-submit when the server does not answer)."""
CONFIG_ENV = "KAFKA_ZK_AUDIT_CONFIG"
ASSET_ALIAS = "kafka_zk_audit_clusters"
# spark-submit's --snapshot-ids: the one place the run's list of snapshot ids becomes text
SNAPSHOT_IDS_ARG = "{{ snapshot_ids_arg(ti) }}"
WAREHOUSE = "{{ resolve_warehouse(params.warehouse) }}"
AUDIT_CONFIG = "{{ params.audit_config or '' }}"
TARGET_VERSION = "{{ params.target_version or '' }}"
START_DATE = datetime(2026, 1, 1, tzinfo=UTC)


class RunVerdictFailed(AirflowFailException, GateVerdictFailure):
    """The run is red: a gate failed or a cluster could not be audited (both alerted already)."""


def spark_app_path() -> str:
    """The spark-submit entry shipped in the package (``spark_apps/audit_snapshot.py`` in the repo)."""
    return str(resources.files("kafka_zk_audit.spark_apps").joinpath("audit_snapshot.py"))


def resolve_warehouse(value: str | None) -> str:
    """The ``warehouse`` param, else ``$KAFKA_ZK_AUDIT_WAREHOUSE``, else ``./warehouse``; local paths absolute."""
    value = value or default_warehouse()
    return value if "://" in value else os.path.abspath(value)


def snapshot_ids_arg(ti: Any) -> str:
    """The snapshot ids the mapped snapshot tasks of this run pushed, comma-separated as spark-submit's
    ``--snapshot-ids`` takes them (clusters that failed push none)."""
    return ",".join(snapshot_id_list(ti.xcom_pull(task_ids="snapshot")))


def cluster_asset(name: str) -> Asset:
    """The Asset a cluster's audit updates; schedule other DAGs on it to react to new findings."""
    return Asset(name=f"kafka_zk_audit.{name}", uri=f"kafka-zk-audit://{name}", group="kafka_zk_audit")


def parse_time_settings(path: str | None = None) -> AuditConfig:
    """The settings the DAG's shape depends on (schedule, clusters), from ``path`` or ``$KAFKA_ZK_AUDIT_CONFIG``."""
    return load_config(path or os.environ.get(CONFIG_ENV) or None)


def _params(settings_path: str | None) -> dict[str, Param]:
    """The params of both audit DAGs."""
    return {
        "zk_conn_id": Param("zookeeper_default", type="string",
                            description="ZooKeeper connection when the settings list no clusters"),
        "spark_conn_id": Param("spark_default", type="string", description="Spark connection"),
        "warehouse": Param(None, type=["null", "string"], description="warehouse path or URL"),
        "audit_config": Param(settings_path, type=["null", "string"], description="audit settings file"),
        "suites_dir": Param(None, type=["null", "string"],
                            description="folder of GX suites to validate (default: the packaged expectations/)"),
        "target_version": Param(None, type=["null", "string"], pattern="^(3\\.[4-9](\\.[0-9]{1,3})?)?$",
                                description="Kafka version to plan the ZK -> KRaft migration with, e.g. 3.9 "
                                            "(default: the settings' migration.target_version)"),
        "run_label": Param(None, type=["null", "string"], pattern="^[A-Za-z0-9_.-]*$",
                           description="suffix of the snapshot ids"),
        "from_files": Param("", type=["null", "string"],
                            description="audit from ZooKeeper's files instead of the live ensemble: its dataDir, "
                                        "a path or fsspec URL (one cluster only); empty: the settings decide"),
        "at_zxid": Param(None, type=["null", "integer", "string"], pattern="^((0[xX])?[0-9a-fA-F]+)?$",
                         description="rebuild the files' tree at this zxid (decimal or 0x hex); empty: newest"),
        "at_time": Param(None, type=["null", "string"],
                         description="rebuild the files' tree (or the KRaft image) as it was at this ISO 8601 "
                                     "time; empty: newest"),
        "from_kraft": Param("", type=["null", "string"],
                            description="audit a KRaft cluster from a controller's metadata.log.dir, a path or "
                                        "fsspec URL (one cluster only); empty: the settings decide"),
        "at_offset": Param(None, type=["null", "integer", "string"], pattern="^[0-9]*$",
                           description="replay the KRaft metadata log up to this offset; empty: newest"),
    }


def build_dag(settings_path: str | None = None) -> DAG:
    """The audit DAG for the settings at ``settings_path`` (default ``$KAFKA_ZK_AUDIT_CONFIG``)."""
    settings_path = settings_path or os.environ.get(CONFIG_ENV) or None
    cfg = parse_time_settings(settings_path)

    def plan(zk_conn_id: str, audit_config: str | None, **context: Any) -> list[dict[str, Any]]:
        from kafka_zk_audit.snapshot.targets import plan_targets

        return plan_targets(load_config(audit_config or None), zk_conn_id, context["params"])

    return _audit_dag(DAG_ID, "Audit the metadata Kafka keeps in ZooKeeper, for every cluster of the fleet",
                      cfg.schedule, settings_path, cfg, plan, __doc__)


def _audit_dag(dag_id: str, description: str, schedule: Any, settings_path: str | None, cfg: AuditConfig,
               plan: Callable[..., list[dict[str, Any]]], doc_md: str | None, *, with_history: bool = True,
               connect_conn_id: str | None = None) -> DAG:
    """A DAG of the audit's stages (snapshot, audit, gate, history, summary, retention, verdict) over the clusters
    its ``clusters`` task (``plan``) returns: the scheduled DAG and the event-driven one share them (the event-driven
    one without ``history``: ``with_history=False``; its audit through the Spark Connect server of
    ``connect_conn_id`` when the settings name one)."""
    failure_alert = TaskFailureNotifier(audit_config=AUDIT_CONFIG)
    with DAG(
        dag_id=dag_id,
        description=description,
        doc_md=doc_md,
        schedule=schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["kafka", "zookeeper", "audit"],
        user_defined_macros={"resolve_warehouse": resolve_warehouse, "snapshot_ids_arg": snapshot_ids_arg},
        params=_params(settings_path),
        default_args={
            "retries": cfg.fleet.task_retries,
            "retry_delay": cfg.fleet.retry_delay,
            "retry_exponential_backoff": True,
            "max_retry_delay": timedelta(minutes=10),
            "execution_timeout": cfg.fleet.task_timeout,
            "on_failure_callback": failure_alert,
        },
    ) as dag:

        @task(task_id="clusters", retries=0)
        def plan_clusters(zk_conn_id: str, audit_config: str | None, **context: Any) -> list[dict[str, Any]]:
            """One entry per cluster to audit, with the run's from_files, at_zxid and at_time applied."""
            from kafka_zk_audit.snapshot.files.sources import FilesSourceError

            try:
                return plan(zk_conn_id, audit_config, **context)
            except FilesSourceError as exc:
                raise AirflowFailException(str(exc)) from None

        targets = plan_clusters("{{ params.zk_conn_id }}", AUDIT_CONFIG)
        snapshot = ZooKeeperSnapshotOperator.partial(
            task_id="snapshot",
            warehouse=WAREHOUSE,
            snapshot_suffix="{{ params.run_label or '' }}",
            max_active_tis_per_dagrun=cfg.fleet.max_parallel_snapshots,
            map_index_template="{{ task.cluster }}",  # the UI and the task's log name the cluster
            **cfg.snapshot.model_dump(),
        ).expand_kwargs(targets)
        submit = dict(
            task_id="audit",
            trigger_rule="all_done",
            spark_conn_id="{{ params.spark_conn_id }}",
            application=spark_app_path(),
            name="kafka-zk-audit",
            application_args=["--warehouse", WAREHOUSE, "--snapshot-ids", SNAPSHOT_IDS_ARG, "--config", AUDIT_CONFIG,
                              "--target-version", TARGET_VERSION],
            # Spark settings come from the Spark connection (master, deploy mode, queue) and the
            # app itself (kafka_zk_audit.audit.session: loopback driver for local masters only, the driver JVM's
            # options).
            conf=submit_conf(),
        )
        if connect_conn_id:  # through a warm Spark Connect server; spark-submit when it does not answer
            audit = AuditSparkConnectOperator(
                connect_conn_id=connect_conn_id, warehouse=WAREHOUSE, snapshot_ids=SNAPSHOT_IDS_ARG,
                audit_config=AUDIT_CONFIG, target_version=TARGET_VERSION, **submit)
        else:
            audit = AuditSparkSubmitOperator(**submit)
        gate = AuditGateOperator(
            task_id="gate",
            trigger_rule="all_done",  # validate the clusters whose audit completed, even if another's failed
            warehouse=WAREHOUSE,
            snapshot_ids=snapshot.output,
            audit_config=AUDIT_CONFIG,
            suites_dir="{{ params.suites_dir or '' }}",
            on_failure_callback=failure_alert,  # the findings' alerts are the summary task's, at every run
        )

        history = None
        if with_history:
            history = ZooKeeperHistoryOperator.partial(
                task_id="history",
                trigger_rule="all_done",  # whatever the gate's verdict; the summary runs whatever happens here
                spark_conn_id="{{ params.spark_conn_id }}",
                warehouse=WAREHOUSE,
                audit_config=AUDIT_CONFIG,
                conf=submit_conf(),
                max_active_tis_per_dagrun=1,  # one Spark app at a time on the worker, like the audit's single app
                map_index_template="{{ task.cluster }}",
            ).expand_kwargs(targets)

        @task(task_id="summary", trigger_rule="all_done", outlets=[AssetAlias(ASSET_ALIAS)])
        def publish_summaries(warehouse: str, snapshot_ids: Any, audit_config: str | None,
                              targets: list[dict[str, str]], **context: Any) -> dict:
            """The alerts (triggers and resolves), summary.json per cluster and the fleet's; an Asset event per
            audited cluster."""
            from kafka_zk_audit.airflow.notifications.audit_alert import send_run_alerts
            from kafka_zk_audit.report.publish import publish_run

            ti = context["ti"]
            verdict = ti.xcom_pull(task_ids="gate", key="verdict")
            try:
                run_url = ti.log_url
            except Exception:  # a link is optional
                run_url = None
            send_run_alerts(warehouse, snapshot_ids, audit_config, verdict,
                            run_url=run_url if isinstance(run_url, str) else None)
            published = publish_run(Warehouse(warehouse), [t["cluster"] for t in targets],
                                    snapshot_id_list(snapshot_ids), verdict,
                                    ti.xcom_pull(task_ids="history") if with_history else None,
                                    run_id=context["run_id"])
            for name, extra in published.asset_extras.items():
                context["outlet_events"][AssetAlias(ASSET_ALIAS)].add(cluster_asset(name), extra=extra)
            return published.result

        summaries = publish_summaries(WAREHOUSE, snapshot.output, AUDIT_CONFIG, targets)

        @task(task_id="retention", trigger_rule="all_done", retries=0)
        def prune(warehouse: str, snapshot_ids: Any, audit_config: str | None) -> dict:
            """Prune the warehouse by the retention settings; never a baseline or this run's snapshots."""
            from kafka_zk_audit.report.publish import prune_run

            return prune_run(Warehouse(warehouse), load_config(audit_config or None).retention,
                             protect=snapshot_id_list(snapshot_ids))

        @task(task_id="verdict", trigger_rule="all_done", retries=0)
        def fail_when_red(**context: Any) -> None:
            """Fail the run when any cluster is red or could not be audited (each was alerted already)."""
            from kafka_zk_audit.report.publish import run_failure

            problem = run_failure(context["ti"].xcom_pull(task_ids="summary"))
            if problem:
                raise RunVerdictFailed(problem)

        snapshot >> audit >> gate
        if history is None:
            gate >> summaries
        else:
            gate >> history >> summaries
        summaries >> prune(WAREHOUSE, snapshot.output, AUDIT_CONFIG) >> fail_when_red()
    return dag


def watched_clusters(cfg: AuditConfig) -> list[dict[str, Any]]:
    """The clusters the event-driven DAG watches: every one read from its ensemble (a ``zk_conn_id``, no files)."""
    from kafka_zk_audit.snapshot.targets import cluster_targets

    return [t for t in cluster_targets(cfg, "zookeeper_default")
            if t["zk_conn_id"] and not t["files"] and not t["kraft"]]


def watched_asset(cluster: str, zk_conn_id: str, cfg: AuditConfig) -> Asset:
    """The Asset a cluster's metadata watch (a trigger in the triggerer) updates when the cluster changes."""
    from kafka_zk_audit.airflow.triggers.metadata_changes import KafkaMetadataChangeTrigger

    events = cfg.events
    trigger = KafkaMetadataChangeTrigger(
        cluster=cluster, zk_conn_id=zk_conn_id, paths=events.paths, ignore=events.ignore,
        quiet_period_s=events.quiet_period.total_seconds(), max_delay_s=events.max_delay.total_seconds(),
        warehouse=resolve_warehouse(None), recheck_poll_s=events.recheck_poll.total_seconds())
    watcher = AssetWatcher(name=f"kafka_zk_audit_watch_{cluster}", trigger=trigger)
    return Asset(name=f"kafka_zk_audit.watch.{cluster}", uri=f"{WATCH_SCHEME}{cluster}", group="kafka_zk_audit",
                 watchers=[watcher])


def changed_clusters(triggering_asset_events: Any) -> set[str]:
    """The clusters whose watch events started this run (from the events' assets' URIs)."""
    return {uri.rstrip("/").removeprefix(WATCH_SCHEME)
            for events in (triggering_asset_events or {}).values() for event in events
            if (uri := str(event.asset.uri)).startswith(WATCH_SCHEME)}


def build_event_dag(settings_path: str | None = None) -> DAG | None:
    """The event-driven audit DAG ``kafka_zk_audit_events`` (None when the settings' ``events`` are off): scheduled
    on the watched clusters' Assets, it audits the clusters that changed through the stages of :func:`build_dag`."""
    settings_path = settings_path or os.environ.get(CONFIG_ENV) or None
    cfg = parse_time_settings(settings_path)
    watched = watched_clusters(cfg)
    if not cfg.events.enabled or not watched:
        return None
    assets = [watched_asset(t["cluster"], t["zk_conn_id"], cfg) for t in watched]

    def plan(zk_conn_id: str, audit_config: str | None, **context: Any) -> list[dict[str, Any]]:
        from kafka_zk_audit.snapshot.targets import plan_targets

        changed = changed_clusters(context.get("triggering_asset_events"))
        targets = plan_targets(load_config(audit_config or None), zk_conn_id, context["params"])
        names = {t["cluster"] for t in watched}
        return [t for t in targets if t["cluster"] in (changed or names)]  # a manual run: every watched cluster

    return _audit_dag(EVENTS_DAG_ID, "Audit the clusters whose Kafka metadata changed, when it changes",
                      AssetAny(*assets), settings_path, cfg, plan, EVENTS_DOC, with_history=False,
                      connect_conn_id=cfg.events.spark_connect_conn_id)
