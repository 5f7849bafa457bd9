"""``kafka-zk-audit``: run the audit DAG once against any ensemble, without a scheduler.

    kafka-zk-audit run --zk HOST:PORT[,HOST:PORT…][/chroot] [--warehouse DIR] [--config FILE]
    kafka-zk-audit run --conn-id ID [--warehouse DIR] [--config FILE]

Credentials come only from the Airflow connection or ``KAFKA_ZK_AUDIT_ZK_AUTH=digest:USER:PASSWORD``,
never from argv. Exit codes: 0 gate passed, 1 gate failed (or the run failed), 2 usage or
connection error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
CLI_CONN_ID = "kafka_zk_audit_cli"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-zk-audit", description="Audit the metadata Kafka keeps in ZooKeeper.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the kafka_zk_audit DAG once, end to end, and print the summary")
    target = run.add_mutually_exclusive_group(required=True)
    target.add_argument("--zk", help="HOST:PORT[,HOST:PORT...][/chroot] of the ensemble")
    target.add_argument("--conn-id", help="an Airflow connection (conn_type zookeeper) instead of --zk")
    run.add_argument(
        "--warehouse", default=None, help="warehouse path or URL (default $KAFKA_ZK_AUDIT_WAREHOUSE or ./warehouse)"
    )
    run.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    run.add_argument(
        "--spark-conn-id", default="spark_default", help="Spark connection (default spark_default, local[*])"
    )
    run.add_argument("-v", "--verbose", action="store_true", help="stream the Airflow run's log to stderr")
    return parser


def _check_reachable(settings) -> str | None:
    from kazoo.client import KazooClient

    client = KazooClient(**{**settings.kazoo_kwargs(), "timeout": 10.0})
    try:
        client.start(timeout=10)
        if settings.chroot and not client.exists("/"):
            return f"chroot {settings.chroot} does not exist on {settings.hosts}"
        return None
    except Exception as exc:
        return f"cannot reach ZooKeeper at {settings.ensemble}: {exc or type(exc).__name__}"
    finally:
        client.stop()
        client.close()


def run(args: argparse.Namespace) -> int:
    from kafka_zk_audit.cli.runner import airflow_env, run_dag_once
    from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
    from kafka_zk_audit.report.summary import format_summary
    from kafka_zk_audit.snapshot.connection import ZkSettings, auth_from_env, split_hosts_and_chroot

    connections = {}
    conn_id = args.conn_id
    try:
        if args.zk:
            hosts, chroot = split_hosts_and_chroot(args.zk)
            if not hosts or any(":" not in h for h in hosts.split(",")):
                print(
                    f"kafka-zk-audit: --zk must be HOST:PORT[,HOST:PORT...][/chroot], not {args.zk!r}", file=sys.stderr
                )
                return EXIT_USAGE
            auth = auth_from_env()
            settings = ZkSettings(hosts=hosts, chroot=chroot, auth=auth)
            extra: dict = {"chroot": chroot} if chroot else {}
            if auth:
                extra["auth"] = f"{auth[0][0]}:{auth[0][1]}"
            connections[CLI_CONN_ID] = {"conn_type": "zookeeper", "host": hosts, "extra": extra}
            conn_id = CLI_CONN_ID
            problem = _check_reachable(settings)
            if problem:
                print(f"kafka-zk-audit: {problem}; check the address and that the ensemble is up", file=sys.stderr)
                return EXIT_USAGE
    except ValueError as exc:
        print(f"kafka-zk-audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.config and not Path(args.config).exists():
        print(f"kafka-zk-audit: config file {args.config} does not exist", file=sys.stderr)
        return EXIT_USAGE

    warehouse = Warehouse(args.warehouse or default_warehouse())
    label = "run" + uuid.uuid4().hex[:8]
    env = airflow_env(connections=connections)
    conf = {
        "zk_conn_id": conn_id,
        "spark_conn_id": args.spark_conn_id,
        "warehouse": warehouse.root,
        "audit_config": str(Path(args.config).resolve()) if args.config else None,
        "run_label": label,
    }
    log_path = Path(env["AIRFLOW_HOME"]) / "logs" / f"kafka-zk-audit-{label}.log"
    print(f"running DAG kafka_zk_audit against {args.zk or conn_id}; warehouse {warehouse.root}", file=sys.stderr)
    print(f"Airflow log: {log_path}", file=sys.stderr)
    result = run_dag_once(env, conf, log_path, echo=args.verbose)
    summaries = sorted(Path(warehouse.root).glob(f"runs/*-{label}/summary.json")) if "://" not in warehouse.root else []
    if not summaries:
        tail = log_path.read_text(errors="replace").splitlines()[-40:]
        print("\n".join(tail), file=sys.stderr)
        print(
            f"kafka-zk-audit: the run produced no summary (airflow exit {result.returncode}); see {log_path}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    summary = json.loads(summaries[-1].read_text())
    print(format_summary(summary))
    print(f"summary: {summaries[-1]}")
    if summary["gate"].get("error"):
        print(f"kafka-zk-audit: the gate did not finish validating; its error is in {log_path}", file=sys.stderr)
    return EXIT_PASSED if summary["gate"]["success"] else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    if args.command == "run":
        return run(args)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
