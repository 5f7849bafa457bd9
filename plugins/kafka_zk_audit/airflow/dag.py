"""The DAG ``kafka_zk_audit``: every cluster of the fleet, snapshot → one Spark audit → one GX gate → summaries.

    clusters ──▶ snapshot ×N (kazoo, mapped, bounded) ──▶ audit (one spark-submit for every snapshot)
             ──▶ gate (Great Expectations, per cluster)
             ──▶ history ×N (mapped: what happened since the last run, from each cluster's ZooKeeper files)
             ──▶ summary (per cluster + fleet, Asset events)
             ──▶ retention ──▶ verdict (fails the run when a cluster is red or could not be audited)

``dags/kafka_zk_audit.py`` builds it with :func:`build_dag`. The schedule, the clusters and the bounds come
from the audit settings file named by ``$KAFKA_ZK_AUDIT_CONFIG`` (read when Airflow parses the DAG; the
packaged defaults when unset: hourly, one cluster ``default`` on the connection of the ``zk_conn_id`` param).
Any task that fails for good alerts (which cluster, which task, why, where the log is); a failed gate sends
the findings alert. Each audited cluster publishes an Asset event ``kafka-zk-audit://<cluster>`` whose extra
carries its summary's counts. A history that fails alerts too, but never makes the run red by itself.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

from airflow.sdk import DAG, Asset, AssetAlias, Param, task
from airflow.sdk.exceptions import AirflowFailException

from kafka_zk_audit.airflow.notifications.audit_alert import AuditAlertNotifier
from kafka_zk_audit.airflow.notifications.task_failure import GateVerdictFailure, TaskFailureNotifier
from kafka_zk_audit.airflow.operators.audit_gate import AuditGateOperator
from kafka_zk_audit.airflow.operators.audit_spark_submit import AuditSparkSubmitOperator
from kafka_zk_audit.airflow.operators.zookeeper_history import ZooKeeperHistoryOperator
from kafka_zk_audit.airflow.operators.zookeeper_snapshot import ZooKeeperSnapshotOperator
from kafka_zk_audit.audit.session import submit_conf
from kafka_zk_audit.contract.settings import AuditConfig, load_config
from kafka_zk_audit.contract.warehouse import default_warehouse

DAG_ID = "kafka_zk_audit"
CONFIG_ENV = "KAFKA_ZK_AUDIT_CONFIG"
DEFAULT_CLUSTER = "default"
ASSET_ALIAS = "kafka_zk_audit_clusters"
SNAPSHOT_IDS = "{{ snapshot_ids(ti) }}"
WAREHOUSE = "{{ resolve_warehouse(params.warehouse) }}"
AUDIT_CONFIG = "{{ params.audit_config or '' }}"
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


def snapshot_ids(ti: Any) -> str:
    """The snapshot ids the mapped snapshot tasks of this run pushed (clusters that failed push none)."""
    pulled = ti.xcom_pull(task_ids="snapshot")
    values = [pulled] if isinstance(pulled, str) else list(pulled or [])
    return ",".join(v for v in values if isinstance(v, str) and v and v != "None")


def cluster_asset(name: str) -> Asset:
    """The Asset a cluster's audit updates; schedule other DAGs on it to react to new findings."""
    return Asset(name=f"kafka_zk_audit.{name}", uri=f"kafka-zk-audit://{name}", group="kafka_zk_audit")


def parse_time_settings(path: str | None = None) -> AuditConfig:
    """The settings the DAG's shape depends on (schedule, clusters), from ``path`` or ``$KAFKA_ZK_AUDIT_CONFIG``."""
    return load_config(path or os.environ.get(CONFIG_ENV) or None)


def publish_readiness(warehouse: Any, snapshot_ids: list[str]) -> dict[str, Any]:
    """The ZK -> KRaft readiness pages of this run's clusters (warehouse and Data Docs); verdict per cluster."""
    from kafka_zk_audit.report import readiness

    reports = readiness.load_reports(warehouse, snapshot_ids)
    if not reports:
        return {}
    pages = readiness.write_pages(warehouse, reports)
    readiness.publish_in_data_docs(warehouse, reports)
    verdicts = {readiness.cluster_name(report): readiness.verdict_of(report) for report in reports}
    print(f"migration readiness: {', '.join(f'{name} {v}' for name, v in verdicts.items())}; report: {pages[0]}")
    return {"page": pages[0], "verdicts": verdicts}


def histories_of_run(ti: Any) -> dict[str, dict[str, Any]]:
    """What the mapped history tasks of this run returned, by cluster (skipped and failed ones return nothing)."""
    pulled = ti.xcom_pull(task_ids="history")
    values = [pulled] if isinstance(pulled, dict) else list(pulled or [])
    return {value["cluster"] or DEFAULT_CLUSTER: value for value in values if isinstance(value, dict)}


def plan_files(targets: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets with the run's ``from_files``, ``at_zxid`` and ``at_time`` params applied; a clear failure when
    they cannot apply (several clusters for one folder of files, a point in time without files)."""
    from kafka_zk_audit.offline.sources import FilesSourceError, parse_at_time, parse_at_zxid

    from_files = (params.get("from_files") or "").strip()
    at_zxid, at_time = params.get("at_zxid"), params.get("at_time")
    try:
        parse_at_zxid(at_zxid)
        parse_at_time(at_time)
    except FilesSourceError as exc:
        raise AirflowFailException(str(exc)) from None
    if from_files:
        if len(targets) > 1:
            raise AirflowFailException(
                f"from_files names one cluster's files, but the settings list {len(targets)} clusters; give each "
                "cluster its files: setting instead")
        targets = [{**targets[0], "files": {"data_dir": from_files, "log_dir": None, "sftp_conn_id": None}}]
    from_disk = [t for t in targets if t.get("files")]
    if (at_zxid not in (None, "") or at_time) and not from_disk:
        raise AirflowFailException("at_zxid and at_time rebuild ZooKeeper's files at a point in time: give "
                                   "from_files, or clusters with a files: setting")
    if at_zxid not in (None, "") and len(from_disk) > 1:
        raise AirflowFailException("at_zxid is a zxid of one ensemble, but several clusters read files; use at_time")
    return [{**t, "at_zxid": at_zxid if t.get("files") else None, "at_time": at_time if t.get("files") else None}
            for t in targets]


def build_dag(settings_path: str | None = None) -> DAG:
    """The audit DAG for the settings at ``settings_path`` (default ``$KAFKA_ZK_AUDIT_CONFIG``)."""
    settings_path = settings_path or os.environ.get(CONFIG_ENV) or None
    cfg = parse_time_settings(settings_path)
    failure_alert = TaskFailureNotifier(audit_config=AUDIT_CONFIG)
    with DAG(
        dag_id=DAG_ID,
        description="Audit the metadata Kafka keeps in ZooKeeper, for every cluster of the fleet",
        doc_md=__doc__,
        schedule=cfg.schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["kafka", "zookeeper", "audit"],
        user_defined_macros={"resolve_warehouse": resolve_warehouse, "snapshot_ids": snapshot_ids},
        params={
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
                             description="rebuild the files' tree as it was at this ISO 8601 time; empty: newest"),
        },
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
            """One entry per cluster to audit: the settings' clusters, else ``default`` on ``zk_conn_id``."""
            run_cfg = load_config(audit_config or None)
            if not run_cfg.clusters:
                targets = [{"cluster": DEFAULT_CLUSTER, "zk_conn_id": zk_conn_id or None, "files": None}]
            else:
                targets = [{"cluster": c.name, "zk_conn_id": c.zk_conn_id,
                            "files": c.files.model_dump() if c.files else None} for c in run_cfg.clusters]
            return plan_files(targets, context["params"])

        targets = plan_clusters("{{ params.zk_conn_id }}", AUDIT_CONFIG)
        snapshot = ZooKeeperSnapshotOperator.partial(
            task_id="snapshot",
            warehouse=WAREHOUSE,
            snapshot_suffix="{{ params.run_label or '' }}",
            max_active_tis_per_dagrun=cfg.fleet.max_parallel_snapshots,
            map_index_template="{{ task.cluster }}",  # the UI and the task's log name the cluster
            **cfg.snapshot.model_dump(),
        ).expand_kwargs(targets)
        audit = AuditSparkSubmitOperator(
            task_id="audit",
            trigger_rule="all_done",
            spark_conn_id="{{ params.spark_conn_id }}",
            application=spark_app_path(),
            name="kafka-zk-audit",
            application_args=["--warehouse", WAREHOUSE, "--snapshot-ids", SNAPSHOT_IDS, "--config", AUDIT_CONFIG,
                              "--target-version", "{{ params.target_version or '' }}"],
            # Spark settings come from the Spark connection (master, deploy mode, queue) and the
            # app itself (kafka_zk_audit.audit.session: loopback driver for local masters only, the driver JVM's
            # options).
            conf=submit_conf(),
        )
        gate = AuditGateOperator(
            task_id="gate",
            trigger_rule="all_done",  # validate the clusters whose audit completed, even if another's failed
            warehouse=WAREHOUSE,
            snapshot_ids=SNAPSHOT_IDS,
            audit_config=AUDIT_CONFIG,
            suites_dir="{{ params.suites_dir or '' }}",
            on_failure_callback=[
                AuditAlertNotifier(warehouse=WAREHOUSE, snapshot_id=SNAPSHOT_IDS, audit_config=AUDIT_CONFIG),
                failure_alert,
            ],
        )

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
        def publish_summaries(warehouse: str, snapshot_ids: str, audit_config: str | None,
                              targets: list[dict[str, str]], **context: Any) -> dict:
            """summary.json per cluster and the fleet's; an Asset event per audited cluster."""
            from kafka_zk_audit.contract.warehouse import Warehouse
            from kafka_zk_audit.report.fleet import summarize_fleet

            verdict = context["ti"].xcom_pull(task_ids="gate", key="verdict")
            fleet, path = summarize_fleet(Warehouse(warehouse), [t["cluster"] for t in targets],
                                          [s for s in snapshot_ids.split(",") if s], verdict,
                                          run_id=context["run_id"])
            for name, cluster in fleet["clusters"].items():
                if cluster.get("summary"):
                    context["outlet_events"][AssetAlias(ASSET_ALIAS)].add(cluster_asset(name),
                                                                          extra=cluster["asset_extra"])
            print(fleet["text"])
            print(f"fleet summary: {path}")
            readiness = publish_readiness(Warehouse(warehouse), [s for s in snapshot_ids.split(",") if s])
            from kafka_zk_audit.report.history_index import link_history_in_data_docs

            link_history_in_data_docs(Warehouse(warehouse))  # the gate rebuilt the Data Docs index
            histories = histories_of_run(context["ti"])
            for name, found in histories.items():
                print(f"history of {name}: {found['listed']} interval(s) listed, {found['short']} shorter than the "
                      f"floor, zxid {found['first_zxid']} to {found['last_zxid']}; page: {found['page']}")
            return {**{k: v for k, v in fleet.items() if k != "text"}, "readiness": readiness,
                    "histories": histories}

        summaries = publish_summaries(WAREHOUSE, SNAPSHOT_IDS, AUDIT_CONFIG, targets)

        @task(task_id="retention", trigger_rule="all_done", retries=0)
        def prune(warehouse: str, snapshot_ids: str, audit_config: str | None) -> dict:
            """Prune the warehouse by the retention settings; never a baseline or this run's snapshots."""
            from kafka_zk_audit.contract.retention import apply_retention
            from kafka_zk_audit.contract.warehouse import Warehouse

            run_cfg = load_config(audit_config or None)
            store = Warehouse(warehouse)
            plan = apply_retention(store, run_cfg.retention, datetime.now(UTC),
                                   protect=[s for s in snapshot_ids.split(",") if s])
            if plan.drop_histories:
                from kafka_zk_audit.report.history_index import refresh_history_index

                refresh_history_index(store)  # no link left to a pruned history's page
            return {"dropped_data": plan.drop_data, "dropped_findings": plan.drop_findings,
                    "baselines": plan.kept_baselines, "dropped_history_changes": plan.drop_history_changes,
                    "dropped_histories": plan.drop_histories}

        @task(task_id="verdict", trigger_rule="all_done", retries=0)
        def fail_when_red(**context: Any) -> None:
            """Fail the run when any cluster is red or could not be audited (each was alerted already)."""
            fleet = context["ti"].xcom_pull(task_ids="summary") or {}
            red = fleet.get("red") or []
            missing = fleet.get("not_audited") or []
            if not fleet:
                raise RunVerdictFailed("no summary was written; see the failed tasks' logs")
            problems = []
            if red:
                problems.append(f"the gate failed for {', '.join(red)}")
            if missing:
                problems.append(f"not audited: {', '.join(missing)}")
            if problems:
                raise RunVerdictFailed("; ".join(problems))

        snapshot >> audit >> gate >> history >> summaries
        summaries >> prune(WAREHOUSE, SNAPSHOT_IDS, AUDIT_CONFIG) >> fail_when_red()
    return dag
