"""``kafka-zk-audit``: run the audit DAG once against any ensemble, without a scheduler, or one stage of it.

    kafka-zk-audit run --zk HOST:PORT[,HOST:PORT…][/chroot] [--warehouse DIR] [--config FILE]
    kafka-zk-audit run --conn-id ID [--warehouse DIR] [--config FILE]
    kafka-zk-audit run --zk eu=HOST:PORT/kafka --zk us=HOST:PORT/kafka --conn-id dr=zookeeper_dr   (a fleet)
    kafka-zk-audit run --config fleet.yaml                  (the clusters listed in the settings)
    kafka-zk-audit run --from-files DIR|URL [--cluster NAME] [--at-zxid N | --at-time T] [--zk …|--conn-id ID]
                                     (rebuilt from ZooKeeper's snapshot and logs; --zk/--conn-id only name it)
    kafka-zk-audit run --from-kraft DIR|URL [--cluster NAME] [--at-offset N | --at-time T]
                                     (a KRaft cluster, replayed from a controller's metadata log)

Cluster names: ``NAME=`` or ``--cluster NAME``; an unnamed ``--zk`` is named after its address (its chroot's last
segment, else ``HOST-PORT``), an unnamed ``--conn-id`` after the connection, each made unique with ``-2``, ``-3``, …;
a ``--from-files``/``--from-kraft`` run without ``--cluster`` (and without a ``--zk``) is ``default``.

One stage at a time, without Airflow (``stages``):

    kafka-zk-audit snapshot --zk [NAME=]HOST:PORT[/chroot] | --conn-id ID [--warehouse DIR] [--config FILE]
    kafka-zk-audit audit --snapshot-id ID[,ID…] [--warehouse DIR] [--config FILE] [--spark-master local[*]]
    kafka-zk-audit reaudit [--cluster NAME ...] [--since 2026-11-01|7d] [--until ...] [--warehouse DIR]
                           [--config FILE] [--spark-master local[*]] [--json]
    kafka-zk-audit readiness --zk [NAME=]HOST:PORT[/chroot] | --conn-id ID [--target 3.9] [--warehouse DIR]
                             [--config FILE] [--spark-master local[*]] [--json]
    kafka-zk-audit migration-diff --zk HOST:PORT[/chroot] | --from-files DIR [--chroot C] --from-kraft DIR
                                  [--release 3.9] [--json]      (0: the migration verified, 1: diverged)
    kafka-zk-audit connect-server start|stop|status [--port 15002] [--dir DIR]
                                  (the Spark Connect server the event-driven audit can run through)

Credentials come only from the Airflow connection or ``KAFKA_ZK_AUDIT_ZK_AUTH=digest:USER:PASSWORD``,
never from argv. Exit codes:

    0  the gate passed (for every cluster of the run); ``snapshot``, ``audit``, ``reaudit``: done;
       ``readiness``: ready or ready with warnings
    1  the gate failed (for at least one cluster; the summary says which checks found what);
       ``readiness``: the cluster is blocked for a KRaft migration (the report lists the blockers and remedies)
    2  usage, settings or connection error, found before any DAG run starts
    3  the audit could not complete (for at least one cluster): no summary, or a gate without a verdict
       (says which task failed, its error from the log, and where the log is)
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_zk_audit.cli.common import (
    EXIT_INCOMPLETE,
    EXIT_USAGE,
    check_reachable,
    cluster_name_problem,
    fail,
    name_from_address,
    named,
    say,
    unique_names,
)
from kafka_zk_audit.cli.connect_server import add_parser as add_connect_server_parser
from kafka_zk_audit.cli.migration_diff import add_parser as add_migration_diff_parser
from kafka_zk_audit.cli.stages import add_parsers as add_stage_parsers
from kafka_zk_audit.snapshot.kraft.kind import KRAFT, ZOOKEEPER, detect_kind, hint

if TYPE_CHECKING:
    from kafka_zk_audit.contract.warehouse import Warehouse

EXIT_PASSED, EXIT_FAILED = 0, 1  # and EXIT_USAGE, EXIT_INCOMPLETE (cli.common)
CLI_CONN_ID = "kafka_zk_audit_cli"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-zk-audit", description="Audit the metadata Kafka keeps in ZooKeeper.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the kafka_zk_audit DAG once, end to end, and print the summary")
    run.add_argument("--zk", action="append", default=[],
                     help="[NAME=]HOST:PORT[,HOST:PORT...][/chroot] of an ensemble; repeat for a fleet")
    run.add_argument("--conn-id", action="append", default=[],
                     help="[NAME=]ID of an Airflow connection (conn_type zookeeper); repeat for a fleet")
    run.add_argument(
        "--warehouse", default=None, help="warehouse path or URL (default $KAFKA_ZK_AUDIT_WAREHOUSE or ./warehouse)"
    )
    run.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    run.add_argument(
        "--spark-conn-id", default="spark_default", help="Spark connection (default spark_default, local[*])"
    )
    run.add_argument("--target", default=None, metavar="VERSION",
                     help='Kafka version to plan the ZK -> KRaft migration with, e.g. 3.9 or 3.5.1 '
                          "(default: the settings' migration.target_version)")
    run.add_argument("--from-files", default=None, metavar="DIR|URL",
                     help="audit ZooKeeper's own files instead of the live ensemble: its dataDir (or version-2/), "
                          "a local folder or an fsspec URL (s3://, gs://, https://, file://)")
    run.add_argument("--from-kraft", default=None, metavar="DIR|URL",
                     help="audit a KRaft cluster from a controller's metadata log: its metadata.log.dir (the folder "
                          "holding __cluster_metadata-0/), a local folder or an fsspec URL")
    run.add_argument("--cluster", default=None, metavar="NAME",
                     help="the name of the run's one cluster (the cluster column, its snapshot ids and baselines): "
                          "of a --from-files or --from-kraft run, or of a lone --zk/--conn-id")
    run.add_argument("--at-offset", default=None, metavar="N",
                     help="with --from-kraft: replay the metadata log up to this offset; default: newest")
    run.add_argument("--at-zxid", default=None, metavar="N",
                     help="with --from-files: rebuild the tree at this zxid (decimal or 0x hex); default: newest")
    run.add_argument("--at-time", default=None, metavar="T",
                     help="with --from-files or --from-kraft: the state as it was at this ISO 8601 time (naive: UTC)")
    run.add_argument("-v", "--verbose", action="store_true", help="stream the Airflow run's log to stderr")
    add_stage_parsers(sub)
    add_migration_diff_parser(sub)
    add_connect_server_parser(sub)
    return parser


def _usage_error(message: str) -> int:
    return fail(EXIT_USAGE, message)


def _zookeeper_connection(zk: str, conn_id: str, connections: dict[str, dict[str, Any]],
                          reachable: bool = True) -> str | None:
    """Add a CLI ZooKeeper connection for one ``--zk``; the problem when it is malformed or (when ``reachable``
    is asked) unreachable."""
    from kafka_zk_audit.snapshot.connection import ZkSettings, auth_from_env, split_hosts_and_chroot

    hosts, chroot = split_hosts_and_chroot(zk)
    if not hosts or any(":" not in h for h in hosts.split(",")):
        return f"--zk must be [NAME=]HOST:PORT[,HOST:PORT...][/chroot], not {zk!r}"
    auth = auth_from_env()
    extra: dict[str, Any] = {"chroot": chroot} if chroot else {}
    if auth:
        extra["auth"] = f"{auth[0][0]}:{auth[0][1]}"
    connections[conn_id] = {"conn_type": "zookeeper", "host": hosts, "extra": extra}
    if not reachable:
        return None
    problem = check_reachable(ZkSettings(hosts=hosts, chroot=chroot, auth=auth))
    return f"{problem}; check the address and that the ensemble is up" if problem else None


def _targets(args: argparse.Namespace, connections: dict[str, dict[str, Any]]) -> tuple[list[dict], str | None]:
    """The clusters to audit from ``--zk``/``--conn-id``, or the problem.

    A malformed ``--zk`` is refused. An unreachable one is refused when it is the only cluster; in a fleet it
    is audited like the others, as the DAG does: the run goes on for the reachable clusters and reports the
    dead one by name (and exits non-zero)."""
    given = [("zk", *named(v)) for v in args.zk] + [("conn", *named(v)) for v in args.conn_id]
    fleet = len(given) > 1
    cluster = getattr(args, "cluster", None)
    if cluster and fleet:
        return [], "--cluster names the run's one cluster; name each of a fleet's NAME=HOST:PORT or NAME=ID"
    if cluster and given:
        kind, name, value = given[0]
        if name and name != cluster:
            return [], f"the cluster is named twice: {name}= and --cluster {cluster}"
        given = [(kind, cluster, value)]
    # a connection id has no chroot: it names its cluster itself
    derived = [name_from_address(value) if kind == "zk" else value for kind, _, value in given]
    names = unique_names([name for _, name, _ in given], derived)
    clusters = []
    for index, ((kind, _, target), name) in enumerate(zip(given, names, strict=True)):
        if kind == "zk":
            conn_id = f"{CLI_CONN_ID}_{index}" if fleet else CLI_CONN_ID
            try:
                problem = _zookeeper_connection(target, conn_id, connections,
                                                reachable=not getattr(args, "from_files", None))
            except ValueError as exc:
                return [], str(exc)
            if problem and not problem.startswith("--zk") and fleet:
                say(f"cluster {name}: {problem}; the run goes on and reports it")
            elif problem:
                return [], problem
        else:
            conn_id = target
        clusters.append({"name": name, "zk_conn_id": conn_id})
    if len(set(names)) != len(names):
        return [], f"cluster names must be unique, got {', '.join(names)}"
    if cluster and not clusters:
        from_files, from_kraft = getattr(args, "from_files", None), getattr(args, "from_kraft", None)
        if not from_files and not from_kraft:
            return [], ("--cluster names the cluster of a --from-files or --from-kraft run (or of a lone --zk or "
                        "--conn-id)")
        given_dir = from_files or from_kraft
        location = given_dir if "://" in given_dir else str(Path(given_dir).resolve())
        # the from_files / from_kraft param reads the same
        clusters.append({"name": cluster, **({"files": {"data_dir": location}} if from_files
                                             else {"kraft": {"metadata_dir": location}})})
    return clusters, None


def _described(cluster: dict[str, Any], connections: dict[str, dict[str, Any]]) -> str:
    """``NAME (where)`` for the run's first line: the address of a ``--zk``, else the connection id."""
    conn = connections.get(cluster.get("zk_conn_id") or "")
    if conn:
        chroot = (conn.get("extra") or {}).get("chroot") or ""
        return f"{cluster['name']} ({conn['host']}{chroot})"
    return f"{cluster['name']} ({cluster['zk_conn_id']})" if cluster.get("zk_conn_id") else cluster["name"]


def _run_settings(config: str | None, clusters: list[dict], folder: Path, label: str) -> str | None:
    """The settings file of this run: the user's, with the command line's clusters when it names any."""
    import yaml

    if not clusters:
        return config if not config or "://" in config else str(Path(config).resolve())
    raw: dict[str, Any] = {}
    if config:
        from kafka_zk_audit.contract.settings import read_settings_text

        raw = yaml.safe_load(read_settings_text(config)) or {}
    raw["clusters"] = clusters
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"kafka-zk-audit-{label}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def _find_summary(warehouse: Warehouse, label: str) -> tuple[dict[str, Any], str] | None:
    """This run's summary.json (its run directory ends with the run label) and where it is."""
    runs = warehouse.fs.glob(warehouse.fs_path(f"{warehouse.root}/runs/*-{label}/summary.json"))
    if not runs:
        return None
    run_id = sorted(runs)[-1].rstrip("/").split("/")[-2]
    path = warehouse.summary_path(run_id)
    return warehouse.read_json(path), path


def _incomplete(log_path: Path, returncode: int, fallback: str | None = None) -> int:
    """Say which task failed, why and where its log is; exit 3."""
    from kafka_zk_audit.cli.runner import first_failed_task

    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    failure = first_failed_task(log_text)
    if failure:
        reason = "\n".join(f"    {line}" for line in failure.error.splitlines())
        say(f"the audit could not complete: task '{failure.task_id}' failed:\n{reason}")
        say(f"the task's log is in {log_path} (from \"[DAG TEST] starting task_id={failure.task_id}\")")
    else:
        print("\n".join(log_text.splitlines()[-40:]), file=sys.stderr)
        say(f"the audit could not complete: {fallback or 'the run produced no summary'} "
            f"(airflow exit {returncode}) and its log names no failed task; see {log_path}")
    return EXIT_INCOMPLETE


def _find_fleet(warehouse: Warehouse, label: str) -> tuple[dict[str, Any], str] | None:
    """This run's fleet.json (its run directory ends with the run label) and where it is."""
    runs = warehouse.fs.glob(warehouse.fs_path(f"{warehouse.root}/runs/fleet-*-{label}/fleet.json"))
    if not runs:
        return None
    run_id = sorted(runs)[-1].rstrip("/").split("/")[-2]
    path = f"{warehouse.run_dir(run_id)}/fleet.json"
    return warehouse.read_json(path), path


def _files_params(args: argparse.Namespace, cluster_count: int) -> tuple[dict[str, Any], str | None]:
    """The DAG params of ``--from-files``/``--at-zxid``/``--at-time`` (a local folder made absolute), or the
    problem."""
    from kafka_zk_audit.snapshot.files.sources import FilesSourceError, check_location, parse_at_time, parse_at_zxid

    params: dict[str, Any] = {}
    try:
        if args.at_zxid is not None:
            params["at_zxid"] = parse_at_zxid(args.at_zxid)
        if args.at_time is not None:
            params["at_time"] = parse_at_time(args.at_time).isoformat()
        if args.from_files:
            check_location(args.from_files)
    except FilesSourceError as exc:
        return {}, str(exc)
    if args.at_zxid is not None and args.at_time is not None:
        return {}, "give --at-zxid or --at-time, not both"
    if getattr(args, "from_kraft", None) or getattr(args, "at_offset", None) is not None:
        return _kraft_params(args, params, cluster_count)
    if not args.from_files:
        return params, None
    location = args.from_files
    if "://" not in location:
        if not Path(location).is_dir():
            return {}, f"--from-files {location}: no such directory; give ZooKeeper's dataDir (or its version-2/)"
        if detect_kind(location) == KRAFT:
            return {}, f"--from-files {location}: {hint(KRAFT)}"
        location = str(Path(location).resolve())
    if cluster_count > 1:
        return {}, "--from-files names one cluster's files; for a fleet, give each cluster files: in the settings"
    return {**params, "from_files": location}, None


def _kraft_params(args: argparse.Namespace, params: dict[str, Any],
                  cluster_count: int) -> tuple[dict[str, Any], str | None]:
    """The DAG params of ``--from-kraft``/``--at-offset``/``--at-time``, or the problem."""
    from kafka_zk_audit.snapshot.files.sources import FilesSourceError, check_location
    from kafka_zk_audit.snapshot.targets import parse_at_offset

    if args.from_files:
        return {}, "--from-files (ZooKeeper's files) and --from-kraft (a KRaft metadata log) exclude each other"
    if args.at_zxid is not None:
        return {}, "--at-zxid goes with --from-files; a KRaft log takes --at-offset or --at-time"
    if not args.from_kraft:
        return {}, "--at-offset goes with --from-kraft DIR"
    try:
        check_location(args.from_kraft)
        at_offset = parse_at_offset(args.at_offset)
    except FilesSourceError as exc:
        return {}, str(exc)
    if at_offset is not None and args.at_time is not None:
        return {}, "give --at-offset or --at-time, not both"
    location = args.from_kraft
    if "://" not in location:
        if not Path(location).is_dir():
            return {}, (f"--from-kraft {location}: no such directory; give a controller's metadata.log.dir (the folder "
                        "holding __cluster_metadata-0/)")
        if detect_kind(location) == ZOOKEEPER:
            return {}, f"--from-kraft {location}: {hint(ZOOKEEPER)}"
        location = str(Path(location).resolve())
    if cluster_count > 1:
        return {}, "--from-kraft names one cluster's metadata log; for a fleet, give each cluster kraft: in settings"
    return {**params, "from_kraft": location, **({"at_offset": at_offset} if at_offset is not None else {})}, None


def run(args: argparse.Namespace) -> int:
    from kafka_zk_audit.cli.runner import TaskProgress, airflow_env, run_dag_once
    from kafka_zk_audit.contract.settings import SettingsError, load_config
    from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse
    from kafka_zk_audit.report.fleet import format_fleet
    from kafka_zk_audit.report.summary import format_summary

    try:  # everything that can be wrong with the command line, before Airflow starts
        cfg = load_config(args.config)
    except SettingsError as exc:
        return _usage_error(str(exc))
    if args.target:
        from kafka_zk_audit.contract.readiness import parse_target

        try:
            parse_target(args.target)
        except ValueError as exc:
            return _usage_error(f"--target {args.target!r}: {exc}")
    if args.cluster and cluster_name_problem(args.cluster):
        return _usage_error(f"--cluster: {cluster_name_problem(args.cluster)}")
    files_params, problem = _files_params(
        args, len(args.zk) + len(args.conn_id) or (1 if args.cluster else len(cfg.clusters)))
    if problem:
        return _usage_error(problem)
    if not args.zk and not args.conn_id and not cfg.clusters and not args.from_files and not args.from_kraft:
        return _usage_error("name the ensemble(s) to audit: --zk HOST:PORT[/chroot] or --conn-id ID (repeat "
                            "either for a fleet), or list clusters in the --config settings file")
    connections: dict[str, dict[str, Any]] = {}
    clusters, problem = _targets(args, connections)
    if problem:
        return _usage_error(problem)

    warehouse = Warehouse(args.warehouse or default_warehouse())
    label = "run" + uuid.uuid4().hex[:8]
    env = airflow_env(connections=connections)
    settings = _run_settings(args.config, clusters, Path(env["AIRFLOW_HOME"]) / "settings", label)
    if settings:
        env["KAFKA_ZK_AUDIT_CONFIG"] = settings  # the DAG's shape (clusters) is read when Airflow parses it
    conf = {
        "spark_conn_id": args.spark_conn_id,
        "warehouse": warehouse.root,
        "audit_config": settings,
        "run_label": label,
    }
    if args.target:
        conf["target_version"] = args.target
    conf.update(files_params)
    if (args.from_files or args.from_kraft) and not clusters and not cfg.clusters:
        conf["zk_conn_id"] = ""  # no ensemble to name: the manifest names the files
    log_path = Path(env["AIRFLOW_HOME"]) / "logs" / f"kafka-zk-audit-{label}.log"
    what = ", ".join(_described(c, connections) for c in clusters) or ", ".join(cfg.cluster_names())
    if args.from_files:
        from kafka_zk_audit.snapshot.files.sources import safe_location

        what = f"{what or 'default'} from the ZooKeeper files in {safe_location(args.from_files)}"
    if args.from_kraft:
        from kafka_zk_audit.snapshot.files.sources import safe_location

        what = f"{what or 'default'} from the KRaft metadata log in {safe_location(args.from_kraft)}"
    print(f"running DAG kafka_zk_audit for {what}; warehouse {warehouse.root}", file=sys.stderr)
    print(f"Airflow log: {log_path}", file=sys.stderr)
    try:
        progress = TaskProgress([c["name"] for c in clusters] or list(cfg.cluster_names()) or ["default"])
        result = run_dag_once(env, conf, log_path, echo=args.verbose, on_line=progress)
    except RuntimeError as exc:  # `airflow db migrate` failed: no DAG run started
        say(f"the audit could not start: {exc}")
        return EXIT_INCOMPLETE
    found = _find_fleet(warehouse, label)
    if found is None:
        return _incomplete(log_path, result.returncode)
    fleet, fleet_path = found
    for entry in fleet["clusters"].values():
        if entry.get("summary"):
            print(format_summary(warehouse.read_json(entry["summary"])))
            print(f"summary: {entry['summary']}\n")
    print(format_fleet(fleet))
    print(f"fleet summary: {fleet_path}")
    readiness_page = f"{warehouse.root}/readiness/index.html"
    if warehouse.exists(readiness_page):
        print(f"KRaft migration readiness report: {readiness_page}")
    if fleet["not_audited"] or any(e["status"] == "error" for e in fleet["clusters"].values()):
        broken = fleet["not_audited"] + [n for n, e in fleet["clusters"].items() if e["status"] == "error"]
        return _incomplete(log_path, result.returncode,
                           fallback=f"no audit result for {', '.join(broken)}")
    return EXIT_FAILED if fleet["red"] else EXIT_PASSED


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    if args.command == "run":
        return run(args)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
