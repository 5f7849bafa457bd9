"""The shared system run: one fleet whose clusters each carry a scenario, audited by two whole-DAG runs.

Every whole-DAG behaviour the suite asserts is planted into a cluster of its own, in chroots of the session's real
ZooKeeper (plus one dead address and one cluster read from a stopped ZooKeeper's files), so one fleet run proves
them all and the keyed audit makes the extra clusters cheap:

========== ===================================================================================================
alpha      clean 3.x cluster, alert route of its own (``hook_alpha``): no finding, green
bravo      leader outside the ISR: red in its own cluster only (fleet attribution)
charlie    loses 4 of its 6 topics between the runs: the drift suite fires for it alone
delta      dead address: its snapshot task fails and alerts; reported as not audited
e2e        every non-history check planted at once; between the runs time passes, epochs and offsets go back, a
           topic is recreated and one problem is fixed; alerts by e-mail (real SMTP) and webhook with secrets, and
           its critical/error/warning findings to Slack, Opsgenie and PagerDuty (HTTPS) receivers: triggers in run 1,
           the fixed problem's resolve with the same dedup key in run 2
kraft35    readiness plants, planned for Kafka 3.5.0 with ``migration.gate``: blocked, red
kraft39    the same tree (same chroot) planned for 3.9: ready with warnings, green
clean39    clean 3.9 cluster: ready, no readiness row, no finding
dualwrite  a ZK -> KRaft migration whose dual writes stalled (``dual_write_stale_after: 0s``)
files      rebuilt from a stopped ZooKeeper's snapshot and logs (``files:`` setting), with the history of its logs
kr-clean   a KRaft cluster (``kraft:`` setting) from a generated metadata log of a healthy 3.9 cluster: no finding
kr-planted a generated 4.1 KRaft log with every KRaft plant (kafka_zk_audit_testing.kraft_logs) and a torn last batch:
           each planted problem found exactly once, nothing else
kr-corrupt a generated KRaft log with a corrupt batch: one log_corrupt finding naming the file and offset
kr-…      one real controller's metadata dir of each dataset of ../shared/real-data/kraft (Kafka 3.5–4.2, written by
           real clusters; REAL_KRAFT): each one's findings are what its records show (tests/system/test_kraft_fleet.py)
migrated   a 3.x cluster migrating to KRaft (``migration:`` setting, with its brokers' password.encoder.secret as a
           connection, and a broker password it encoded): /migration as dual writes leave it and the KRaft
           log written from its tree (kafka_zk_audit_testing.migration_log) with two planted divergences, each found
           once with both sides' evidence, alerted through the fleet's route; the readiness page's verdict: diverged
migclean   the same without a plant: migration verified, no finding, green
secured    digest-auth ACLs, read with the connection's login; its controller is missing, with ``for: 1s`` on that
           check: pending in run 1 (no alert), firing in run 2 (one trigger)
========== ===================================================================================================

Run 1 is ``airflow dags test`` whose Spark connection names a standalone master with two one-core workers on loopback
(a cluster master is a connection change): its audit and history apps run on the executors, and every test of run 1
checks what they wrote (tests/airflow/test_standalone_master.py: that they ran there). The warehouse is copied right
after it. Run 2 is an operator's ``kafka-zk-audit run -v --config`` on ``local[*]`` (the packaged default) into the
same Airflow home and warehouse: it has run 1 as baseline, exits 3 for the dead cluster and prints every summary;
retention then prunes run 1's raw snapshots.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from kazoo.client import KazooClient

from kafka_zk_audit.audit.session import C1_ONLY_JAVA_OPTION
from kafka_zk_audit.cli.runner import airflow_env, ensure_metadata_db, run_dag_once
from kafka_zk_audit.contract.catalogue import BY_ID, CHECK_IDS
from kafka_zk_audit_testing.kraft_logs import KraftCluster, KraftClusterSpec, corrupt, planted_cluster
from kafka_zk_audit_testing.receivers import CollectingHandler, WebhookReceiver, smtp_receiver, webhook_receiver
from kafka_zk_audit_testing.simulator import ClusterSpec, Planted, Simulator
from kafka_zk_audit_testing.simulator.plants import KRAFT_CHECKS, MIGRATION_HEALTH_CHECKS
from kafka_zk_audit_testing.simulator.readiness_plants import inherent_readiness, plant_readiness
from kafka_zk_audit_testing.spark_cluster import standalone_cluster
from kafka_zk_audit_testing.zk_server import free_port

FLEET_SPEC = ClusterSpec(era="3.x", brokers=3, racks=1, topics=6, partitions=2, replication_factor=3, groups=1,
                         consumers_per_group=1, threads_per_consumer=1, topics_per_group=1)
E2E_SPEC = ClusterSpec(era="3.x", brokers=4, racks=2, topics=4, partitions=4, replication_factor=3,
                       groups=2, consumers_per_group=2, threads_per_consumer=2, seed=11)
READINESS_SMALL = dict(brokers=3, racks=1, topics=3, partitions=2, replication_factor=2, groups=1,
                       consumers_per_group=1, threads_per_consumer=1, seed=31)
SECURED_SPEC = ClusterSpec(era="2.x", brokers=3, racks=1, topics=3, partitions=2, replication_factor=2, groups=1,
                           consumers_per_group=1, threads_per_consumer=1, seed=7)

# Planted together into e2e (distinct subjects). The /controller plants exclude each other in one tree:
# controller_session_mismatch is planted here, controller_not_alive into e2e before run 2, controller_missing into
# secured.
PLANTED_TOGETHER = tuple(
    c for c in CHECK_IDS
    if not BY_ID[c].history and c not in {"controller_missing", "controller_not_alive"}
    and c not in MIGRATION_HEALTH_CHECKS  # they need a migration in flight: tests/audit/checks/test_migration.py
    and c not in KRAFT_CHECKS  # they need a KRaft metadata log: the fleet's KRaft clusters
)
HISTORY_PLANTS = ("leader_epoch_regressed", "controller_epoch_regressed", "offset_regressed", "controller_not_alive")
READINESS_PLANTS = ("kraft_pending_topic_deletion", "kraft_acls_present", "kraft_delegation_tokens",
                    "kraft_no_common_listener")

LIVE_FLEET = ("alpha", "bravo", "charlie")
DEAD = "delta"
CHROOTS = {
    "alpha": "/fleet_alpha", "bravo": "/fleet_bravo", "charlie": "/fleet_charlie", "e2e": "/e2e_history",
    "kraft35": "/rd_planted", "kraft39": "/rd_planted", "clean39": "/rd_clean", "dualwrite": "/rd_dual",
    "secured": "/secured", "migrated": "/mig_planted", "migclean": "/mig_clean",
}
# the paired clusters (ZooKeeper and the KRaft log of their migration): cluster -> the divergences planted in the log
MIGRATED = {"migrated": ("partition_replicas", "config_missing"), "migclean": ()}
# the brokers' password.encoder.secret of the paired clusters (an Airflow connection's password) and the broker
# password it encodes in their ZooKeeper; KRaft holds it decoded
MIGRATION_SECRET = "encoder-5ecret-of-the-brokers"
MIGRATION_PASSWORD = "keystore-pw-migrated-7"
FILES_CHROOT = "/kafka"  # where tests/conftest.py's history_files wrote its scenario
REAL_DATA = Path(__file__).resolve().parents[3] / "shared" / "real-data" / "kraft"
# cluster -> one controller's metadata.log.dir of each real dataset (its SOURCE.md tells what the files show); none
# when the shared real data is not beside the repository
REAL_KRAFT = {} if not REAL_DATA.is_dir() else {
    "kr-kirana": "Balaji-MohanAG__Kirana-store/kafka/data",
    "kr-hastar": "HastarTara__NE_streaming_project/data",
    "kr-indus": "IndusWargods__local-test-rig/kafka-data",
    "kr-apache": "apache__kafka/core/data/kafka-1168504093769635972",
    "kr-dkoh": "dkoh12__Systems/kafka/data",
    "kr-galgrayzer": "galgrayzer__kafka-docker-compose/kafka_data/data",
    "kr-greenlemon": "greenlemonT__kafka-temp/data/kafka1",
}
KRAFT_CLUSTERS = ("kr-clean", "kr-planted", "kr-corrupt", *REAL_KRAFT)
CLUSTERS = (*CHROOTS, DEAD, "files", *KRAFT_CLUSTERS)
AUDITED = tuple(c for c in CLUSTERS if c != DEAD)

SMTP_PASSWORD = "pw-Smtp-e2e-5ecret-314"
WEBHOOK_TOKEN = "T0E2E/B0E2E/e2e-hook-5ecret"
SLACK_TOKEN = "T0E2E/B0SLACK/e2e-slack-5ecret"
PAGERDUTY_KEY = "e2e-Routing-Key-5ecret-PD"
OPSGENIE_KEY = "e2e-0psgenie-Key-5ecret"
SECURED_AUTH = ("kafka", "cli-secret-5ecured")
RECIPIENT = "kafka-oncall@example.com"
ROUTES = {"alpha": "/hook/alpha", "e2e": f"/hook/{WEBHOOK_TOKEN}"}  # every other cluster: the fleet's route
FLEET_ROUTE = "/hook/fleet"
SLACK_ROUTE = f"/slack/{SLACK_TOKEN}"  # e2e's Slack posts (the connection's endpoint and token)
# the standalone cluster's daemons, and the executors they launch: this venv's Python for the Python workers, and C1
# only, as the driver compiles (audit.session.DRIVER_JAVA_OPTIONS): a tuning of this small loopback cluster
CLUSTER_ENV = {"PYSPARK_PYTHON": sys.executable, "JAVA_TOOL_OPTIONS": C1_ONLY_JAVA_OPTION}
SECRETS = (SMTP_PASSWORD, WEBHOOK_TOKEN, SECURED_AUTH[1], SLACK_TOKEN, PAGERDUTY_KEY, OPSGENIE_KEY)


@dataclass
class Run:
    """One whole-DAG run of the fleet: its exit code, fleet.json, the Airflow log and what the receivers got."""

    warehouse: Path
    returncode: int
    fleet: dict[str, Any]
    log: str
    posts: list[dict[str, Any]]
    emails: list[Any]
    stdout: str = ""
    stderr: str = ""
    pagerduty: list[dict[str, Any]] = field(default_factory=list)  # what the HTTPS receiver got (PagerDuty events)

    def snapshot_id(self, cluster: str) -> str:
        return self.fleet["clusters"][cluster]["snapshot_id"]

    def summary(self, cluster: str) -> dict[str, Any]:
        return json.loads(Path(self.fleet["clusters"][cluster]["summary"]).read_text())

    def findings(self, cluster: str) -> list[dict[str, Any]]:
        return pq.read_table(self.warehouse / "findings" / f"snapshot_id={self.snapshot_id(cluster)}",
                             partitioning=None).to_pylist()

    def readiness(self, cluster: str) -> dict[str, Any]:
        return json.loads((self.warehouse / "runs" / self.snapshot_id(cluster) / "readiness.json").read_text())

    def posts_to(self, path: str) -> list[dict[str, Any]]:
        return [p for p in self.posts if p["path"] == path]


@dataclass
class SystemRun:
    warehouse: Path
    airflow_home: Path
    settings: Path
    after_first: Path  # a copy of the warehouse right after run 1
    runs: list[Run]
    planted: list[Planted]  # e2e, before run 1
    history: list[Planted]  # e2e, before run 2
    recreated_topic: str
    fixed: Planted
    dropped_topics: list[str]
    readiness_planted: list[Planted]
    readiness_inherent: list[Planted]
    secured_plant: Planted
    files_scenario: Any
    files_dir: Path
    kraft_planted: list[Planted]  # kr-planted's problems (and kr-corrupt's, last)
    spark_master: str  # run 1's standalone master
    spark_dir: Path  # its master's and workers' logs and work dirs
    extra: dict[str, Any] = field(default_factory=dict)


def settings_yaml(files_dir: Path, kraft_dirs: dict[str, Path], migration_dirs: dict[str, Path]) -> dict[str, Any]:
    clusters: list[dict[str, Any]] = [
        {"name": name, "kraft": {"metadata_dir": str(kraft_dirs[name])}} if name in kraft_dirs
        else {"name": name, "zk_conn_id": f"zk_{name}"} for name in CLUSTERS]
    by_name = {c["name"]: c for c in clusters}
    by_name["alpha"]["overrides"] = {"alerts": {"webhook_conn_id": "hook_alpha"}}
    by_name["e2e"]["overrides"] = {
        "sla": {"delete_topic": "0s", "reassignment": "0s", "preferred_election": "0s"},
        "alerts": {"email_to": [RECIPIENT], "smtp_conn_id": "smtp_e2e", "webhook_conn_id": "webhook_e2e",
                   "top_offenders": 100,
                   "routes": [{"severities": ["critical", "error", "warning"], "slack_conn_id": "slack_e2e",
                               "pagerduty_conn_id": "pagerduty_e2e", "opsgenie_conn_id": "opsgenie_e2e"}]},
    }
    by_name["secured"]["overrides"] = {"alerts": {"for": {"controller_missing": "1s"}}}
    by_name["kraft35"]["overrides"] = {"migration": {"target_version": "3.5.0", "gate": True}}
    by_name["dualwrite"]["overrides"] = {"migration": {"dual_write_stale_after": "0s"}}
    by_name["files"]["files"] = {"data_dir": str(files_dir)}
    for name, folder in migration_dirs.items():
        by_name[name]["migration"] = {"kraft": {"metadata_dir": str(folder)}, "release": "3.9",
                                      "password_encoder_secret_conn_id": "encoder_mig"}
    return {
        "schedule": None,
        "clusters": clusters,
        "fleet": {"max_parallel_snapshots": 2, "task_retries": 0},
        "alerts": {"webhook_conn_id": "hook_fleet"},
        "retention": {"keep_snapshots": 1, "keep_snapshots_for": "0s", "keep_findings_for": "90d"},
    }


def connections(zk_hosts: str, webhook: WebhookReceiver, smtp_port: int,
                pagerduty: WebhookReceiver) -> dict[str, str]:
    env = {f"AIRFLOW_CONN_ZK_{name.upper()}": json.dumps(
        {"conn_type": "zookeeper", "host": zk_hosts, "extra": {"chroot": chroot}})
        for name, chroot in CHROOTS.items() if name != "secured"}
    env["AIRFLOW_CONN_ZK_SECURED"] = json.dumps(
        {"conn_type": "zookeeper", "host": zk_hosts, "login": SECURED_AUTH[0], "password": SECURED_AUTH[1],
         "extra": {"chroot": CHROOTS["secured"]}})
    env[f"AIRFLOW_CONN_ZK_{DEAD.upper()}"] = json.dumps(
        {"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}", "extra": {"timeout": 3}})
    # the files cluster's connection only names the ensemble and gives the chroot: nothing listens there
    env["AIRFLOW_CONN_ZK_FILES"] = json.dumps(
        {"conn_type": "zookeeper", "host": f"127.0.0.1:{free_port()}", "extra": {"chroot": FILES_CHROOT}})
    env["AIRFLOW_CONN_ENCODER_MIG"] = json.dumps({"conn_type": "generic", "password": MIGRATION_SECRET})
    env["AIRFLOW_CONN_HOOK_FLEET"] = json.dumps({"conn_type": "http", "host": webhook.url(FLEET_ROUTE)})
    env["AIRFLOW_CONN_HOOK_ALPHA"] = json.dumps({"conn_type": "http", "host": webhook.url(ROUTES["alpha"])})
    env["AIRFLOW_CONN_WEBHOOK_E2E"] = json.dumps({"conn_type": "http", "host": webhook.url(ROUTES["e2e"])})
    env["AIRFLOW_CONN_SLACK_E2E"] = json.dumps(
        {"conn_type": "slackwebhook", "host": webhook.url("/slack"), "password": SLACK_TOKEN})
    env["AIRFLOW_CONN_OPSGENIE_E2E"] = json.dumps(
        {"conn_type": "opsgenie", "host": webhook.url("/opsgenie"), "password": OPSGENIE_KEY})
    env["AIRFLOW_CONN_PAGERDUTY_E2E"] = json.dumps(
        {"conn_type": "pagerduty_events", "host": pagerduty.url("/pagerduty"), "password": PAGERDUTY_KEY,
         "extra": {"ca_bundle": pagerduty.ca_file}})
    env["AIRFLOW_CONN_SMTP_E2E"] = json.dumps({
        "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port, "login": "audit-sender",
        "password": SMTP_PASSWORD,
        "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "kafka-zk-audit@example.com",
                  "retry_limit": 0, "timeout": 10},
    })
    return env


def topic_to_recreate(sim: Simulator, touched: set[str]) -> str:
    """A topic of the simulated cluster that some group consumes and no plant touched."""
    for group in reversed(sim.model.groups):
        for topic in reversed(group.topics):
            if topic not in touched and group.group_id not in touched:
                return topic
    raise AssertionError("no untouched consumed topic to recreate")


def _fleet_json(warehouse: Path, label: str | None, log: str) -> dict[str, Any]:
    pattern = f"runs/fleet-*-{label}/fleet.json" if label else "runs/fleet-*/fleet.json"
    found = sorted(warehouse.glob(pattern), key=lambda p: p.stat().st_mtime)
    assert found, f"no fleet summary; log tail:\n{log[-5000:]}"
    fleet = json.loads(found[-1].read_text())
    for name in AUDITED:
        summary = json.loads(Path(fleet["clusters"][name]["summary"]).read_text())
        # the gate validated (a crash in the gate must not pass for a failed validation)
        assert "error" not in summary["gate"], f"{name}: {summary['gate']}; log tail:\n{log[-5000:]}"
        assert isinstance(summary["gate"]["failed_expectations"], int), name
    return fleet


@pytest.fixture(scope="session")
def system(zk_server, history_files, tmp_path_factory) -> Iterator[SystemRun]:
    """The fleet's two DAG runs, shared by every test of tests/system that asserts on a whole run."""
    files_dir, files_scenario = history_files
    tmp = tmp_path_factory.mktemp("system")
    warehouse, home = tmp / "wh", tmp / "airflow"
    kraft_dirs = {"kr-clean": KraftCluster().write(tmp / "kr-clean"),
                  **{name: REAL_DATA / folder for name, folder in REAL_KRAFT.items()}}
    kraft_planted = planted_cluster(tmp / "kr-planted")
    KraftCluster(KraftClusterSpec(metadata_version=25, topics=4)).write(tmp / "kr-corrupt")
    kraft_planted.append(corrupt(tmp / "kr-corrupt"))
    kraft_dirs.update({"kr-planted": tmp / "kr-planted", "kr-corrupt": tmp / "kr-corrupt"})
    settings = tmp / "fleet.yaml"
    migration_dirs = {name: tmp / f"kraft-{name}" for name in MIGRATED}
    settings.write_text(yaml.safe_dump(settings_yaml(files_dir, kraft_dirs, migration_dirs), sort_keys=False))
    base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW") and k != "KAFKA_ZK_AUDIT_CONFIG"}
    env = airflow_env(airflow_home=home, base=base)
    env["KAFKA_ZK_AUDIT_CONFIG"] = str(settings)
    admin = KazooClient(hosts=zk_server.hosts)
    admin.start(timeout=15)
    for chroot in set(CHROOTS.values()):
        admin.ensure_path(chroot)
    sims = {name: Simulator(hosts=zk_server.hosts + CHROOTS[name])
            for name in ("alpha", "bravo", "charlie", "e2e", "kraft39", "clean39", "dualwrite", *MIGRATED)}
    migrations: dict[str, Any] = {}
    sims["secured"] = Simulator(hosts=zk_server.hosts + CHROOTS["secured"], auth=("digest", ":".join(SECURED_AUTH)))
    runs: list[Run] = []
    # run 1's standalone master and workers start, and the metadata DB is migrated, while the clusters are written
    spark_dir = tmp / "spark"
    cluster = ExitStack()
    background = ThreadPoolExecutor(2, thread_name_prefix="fleet-setup")
    master_started = background.submit(cluster.enter_context, standalone_cluster(
        spark_dir, cores=1, memory="1g", workers=2, env=CLUSTER_ENV))
    db_migrated = background.submit(ensure_metadata_db, dict(env))
    background.shutdown(wait=False)
    try:
        with smtp_receiver(SMTP_PASSWORD) as (smtp_port, inbox), webhook_receiver() as webhook, \
                webhook_receiver(tls_dir=tmp / "tls") as pagerduty:
            env.update(connections(zk_server.hosts, webhook, smtp_port, pagerduty))
            for name in LIVE_FLEET:
                sims[name].write(FLEET_SPEC)
            sims["bravo"].plant("leader_not_in_isr")
            e2e = sims["e2e"]
            e2e.write(E2E_SPEC)
            planted = [e2e.plant(check_id) for check_id in PLANTED_TOGETHER]
            sims["kraft39"].write(ClusterSpec(era="3.9", **READINESS_SMALL))
            readiness_planted = [plant_readiness(sims["kraft39"], name) for name in READINESS_PLANTS]
            readiness_inherent = inherent_readiness(sims["kraft39"])
            sims["clean39"].write(ClusterSpec(era="3.9", **READINESS_SMALL))
            sims["dualwrite"].write(ClusterSpec(era="3.x-migration", **READINESS_SMALL))
            sims["secured"].write(SECURED_SPEC)
            secured_plant = sims["secured"].plant("controller_missing")
            for name, plants in MIGRATED.items():
                sims[name].write(FLEET_SPEC)
                migrations[name] = migrate(zk_server.hosts + CHROOTS[name], migration_dirs[name], plants)

            # run 1: airflow dags test, its Spark apps on a standalone master
            label = "first"
            db_migrated.result()
            with cluster:
                spark_master = master_started.result()
                host, port = spark_master.rsplit(":", 1)
                on_cluster = {**env, "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
                    {"conn_type": "spark", "host": host, "port": int(port)})}
                result = run_dag_once(on_cluster, {"warehouse": str(warehouse), "run_label": label},
                                      tmp / f"{label}.log")
            log = result.log_path.read_text()
            runs.append(Run(warehouse, result.returncode, _fleet_json(warehouse, label, log), log,
                            list(webhook.posts), CollectingHandler.messages_of(inbox.envelopes),
                            pagerduty=list(pagerduty.posts)))
            after_first = tmp / "after_first"
            shutil.copytree(warehouse, after_first)

            # between the runs: charlie loses 4 of its 6 topics; e2e moves on and regresses
            topics = sorted(admin.get_children(f"{CHROOTS['charlie']}/brokers/topics"))
            dropped = [t for t in topics if not t.startswith("__")][:4]
            for topic in dropped:
                admin.delete(f"{CHROOTS['charlie']}/brokers/topics/{topic}", recursive=True)
            e2e.advance(steps=1)
            history_plants = [e2e.plant(c) for c in HISTORY_PLANTS]
            touched = {s for p in (*planted, *history_plants) for s in (p.topic, p.group_id) if s}
            recreated = topic_to_recreate(e2e, touched)
            e2e.recreate_topic(recreated)
            fixed = next(p for p in planted if p.check_id == "delete_marker_orphaned")
            admin.delete(CHROOTS["e2e"] + fixed.path)

            # run 2: an operator's `kafka-zk-audit run --config` into the same Airflow home and warehouse
            posted, sent, paged = len(webhook.posts), len(inbox.envelopes), len(pagerduty.posts)
            before = {p.name for p in warehouse.glob("runs/fleet-*")}
            cli = str(Path(sys.executable).parent / "kafka-zk-audit")
            done = subprocess.run([cli, "run", "-v", "--config", str(settings), "--warehouse", str(warehouse)],
                                  env=env, capture_output=True, text=True, timeout=1800)
            log_line = next((line for line in done.stderr.splitlines() if line.startswith("Airflow log:")), None)
            assert log_line, done.stdout + done.stderr
            log = Path(log_line.split(":", 1)[1].strip()).read_text()
            new = [p for p in warehouse.glob("runs/fleet-*") if p.name not in before]
            assert len(new) == 1, f"{new}; stderr:\n{done.stderr[-5000:]}"
            runs.append(Run(warehouse, done.returncode, _fleet_json(warehouse, new[0].name.rsplit("-", 1)[-1], log),
                            log, webhook.posts[posted:], CollectingHandler.messages_of(inbox.envelopes[sent:]),
                            done.stdout, done.stderr, pagerduty.posts[paged:]))
    finally:
        for started in (master_started, db_migrated):  # a failure before run 1: its cluster still stops
            with suppress(Exception):
                started.result()
        cluster.close()
        for sim in sims.values():
            sim.close()
        admin.stop()
        admin.close()
    yield SystemRun(warehouse, home, settings, after_first, runs, planted, history_plants,
                    recreated, fixed, dropped, readiness_planted, readiness_inherent, secured_plant, files_scenario,
                    files_dir, kraft_planted, spark_master, spark_dir, extra={"migrations": migrations})


def migrate(hosts: str, kraft_dir: Path, plants: tuple[str, ...]) -> dict[str, Any]:
    """The KRaft log a migration of the cluster at ``hosts`` writes (from its raw tree, with ``plants``) and /migration
    as its dual writes leave it, after a dynamic broker password encoded with the brokers' secret; returns the log
    (``log``) and the raw tree's topics and partitions (``topics``, ``partitions``) and secret znodes' data and clear
    texts (``secrets``), read here, apart from the audit."""
    from kafka_zk_audit_testing.migration_log import tree_from_kazoo, write_migration_log
    from kafka_zk_audit_testing.password_encoder import encode_password

    client = KazooClient(hosts=hosts)
    client.start(timeout=15)
    try:
        path = "/config/brokers/1"
        config = json.loads(client.get(path)[0]) if client.exists(path) else {"version": 1, "config": {}}
        config["config"]["listener.name.internal.ssl.keystore.password"] = encode_password(MIGRATION_PASSWORD,
                                                                                          MIGRATION_SECRET)
        client.ensure_path(path)
        client.set(path, json.dumps(config).encode())
        tree = tree_from_kazoo(client)
        log = write_migration_log(tree, kraft_dir, "3.9", plants=plants, password_secret=MIGRATION_SECRET)
        client.create("/migration", log.migration_znode())
    finally:
        client.stop()
        client.close()
    topics = [p for p in tree if p.count("/") == 3 and p.startswith("/brokers/topics/")]
    partitions = [p for p in tree if p.startswith("/brokers/topics/") and p.endswith("/state")]
    secrets = [node.data for path, node in tree.items()
               if path.startswith(("/config/users/", "/config/brokers/", "/delegation_token/tokens/")) and node.data]
    secrets += [MIGRATION_SECRET.encode(), MIGRATION_PASSWORD.encode()]
    return {"log": log, "topics": len(topics), "partitions": len(partitions), "secrets": secrets}
