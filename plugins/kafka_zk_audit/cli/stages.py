"""``kafka-zk-audit snapshot | audit | reaudit | readiness``: one stage at a time, without Airflow.

``snapshot`` walks one ensemble into the warehouse and prints its manifest (a cluster paired with its KRaft log:
both sides laid out for the audit's migration diff, as the DAG does); ``audit`` runs the packaged Spark app on one
stored snapshot and prints its ``audit.json``; ``reaudit`` re-runs every check over the stored snapshots in one
Spark app (``kafka_zk_audit.audit.reaudit``) and prints what it found; ``readiness`` snapshots and audits one
ensemble for a KRaft migration and prints its readiness report (``kafka_zk_audit.report.readiness``). JSON goes to
stdout, progress and Spark's log to stderr. Exit codes as for ``run``: 0 done (``readiness``: ready, with or without
warnings), 1 ``readiness``: blocked, 2 usage, settings or connection error (before anything starts), 3 could not
complete.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from kafka_zk_audit.cli.common import (
    EXIT_BLOCKED,
    EXIT_DONE,
    EXIT_INCOMPLETE,
    EXIT_USAGE,
    check_reachable,
    cluster_name_problem,
    fail,
    name_from_address,
    named,
    say,
)
from kafka_zk_audit.cli.history import add_parser as add_history_parser
from kafka_zk_audit.cli.migration_diff import paired_snapshot
from kafka_zk_audit.cli.spark import spark_app, spark_submit, submit_for_summary
from kafka_zk_audit.contract.settings import AuditConfig, SettingsError, load_config
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse, stored_znodes, validate_snapshot_id

AUDIT_APP, REAUDIT_APP = "audit_snapshot.py", "reaudit_snapshots.py"
PROGRESS_EVERY_S = 5.0


def _settings_file(config: str | None) -> tuple[AuditConfig | None, str | None, str | None]:
    """(settings, the path to hand to Spark, the problem): local paths absolute, URLs as given."""
    try:
        cfg = load_config(config)
    except SettingsError as exc:
        return None, None, str(exc)
    return cfg, (config if not config or "://" in config else str(Path(config).resolve())) or None, None


# -- ZooKeeper connection settings ---------------------------------------------------------------
def _connection_from_uri(uri: str) -> dict[str, Any]:
    """An Airflow connection URI (``zookeeper://[login:password@]host:port[,host:port]/schema?extra``)."""
    scheme, _, rest = uri.partition("://")
    rest, _, query = rest.partition("?")
    netloc, _, schema = rest.partition("/")
    login = password = None
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        login, _, password = (unquote(part) for part in userinfo.partition(":"))
    params = dict(parse_qsl(query, keep_blank_values=True))
    extra = json.loads(params["__extra__"]) if "__extra__" in params else params
    return {"conn_type": scheme.replace("-", "_"), "host": unquote(netloc), "schema": unquote(schema) or None,
            "login": login or None, "password": password or None, "extra": extra}


def airflow_connection(conn_id: str) -> dict[str, Any] | None:
    """The fields of an Airflow connection: from ``AIRFLOW_CONN_<ID>`` (JSON or URI), else from
    ``airflow connections get`` (the metadata DB or secrets backend); None when there is none."""
    value = os.environ.get(f"AIRFLOW_CONN_{conn_id.upper()}")
    if value:
        return json.loads(value) if value.lstrip().startswith("{") else _connection_from_uri(value.strip())
    from kafka_zk_audit.cli.runner import airflow_env

    airflow = Path(sys.executable).parent / "airflow"
    if not airflow.exists():
        return None
    proc = subprocess.run([str(airflow), "connections", "get", conn_id, "-o", "json"], env=airflow_env(),
                          capture_output=True, text=True)  # the password stays in this process's memory
    if proc.returncode:
        return None
    try:
        found = json.loads(proc.stdout[proc.stdout.find("["):] if "[" in proc.stdout else proc.stdout)
    except ValueError:
        return None
    found = found[0] if isinstance(found, list) and found else found
    if not isinstance(found, dict):
        return None
    found["extra"] = found.get("extra_dejson") or found.get("extra") or {}
    return found


def cluster_of(args: argparse.Namespace, prefixed: str | None,
               derived: str | None = None) -> tuple[str, str | None]:
    """(the snapshot's cluster name, the problem): ``--cluster NAME``, else the target's ``NAME=``, else the name
    ``derived`` from its address (as ``run`` names it), else ``default``; refused when both name it differently or
    the name is not a valid cluster name."""
    given = getattr(args, "cluster", None)
    if given and prefixed and given != prefixed:
        return given, f"the cluster is named twice: {prefixed}= and --cluster {given}"
    name = given or prefixed or derived or "default"
    return name, cluster_name_problem(name) if given else None


def zookeeper_settings(args: argparse.Namespace) -> tuple[Any, str, str | None]:
    """(ZkSettings, cluster name, problem) for ``--zk`` or ``--conn-id``; reachable or the problem says why."""
    from kafka_zk_audit.snapshot.connection import (
        ZkSettings,
        auth_from_env,
        settings_from_connection,
        split_hosts_and_chroot,
    )

    name, target = named(args.zk or args.conn_id)
    cluster, problem = cluster_of(args, name, name_from_address(target) if args.zk else target)
    if problem:
        return None, cluster, problem
    try:
        if args.zk:
            hosts, chroot = split_hosts_and_chroot(target)
            if not hosts or any(":" not in h for h in hosts.split(",")):
                return None, cluster, f"--zk must be [NAME=]HOST:PORT[,HOST:PORT...][/chroot], not {args.zk!r}"
            settings = ZkSettings(hosts=hosts, chroot=chroot, auth=auth_from_env())
        else:
            conn = airflow_connection(target)
            if conn is None:
                return None, cluster, (f"no Airflow connection {target!r} (set AIRFLOW_CONN_{target.upper()} or "
                                       "add it to Airflow)")
            extra = conn.get("extra") or {}
            extra = json.loads(extra) if isinstance(extra, str) and extra.strip() else extra or {}
            settings = settings_from_connection(conn.get("host"), conn.get("port"), conn.get("schema"),
                                                conn.get("login"), conn.get("password"), extra)
    except ValueError as exc:
        return None, cluster, str(exc)
    problem = check_reachable(settings)
    return settings, cluster, f"{problem}; check the address and that the ensemble is up" if problem else None


# -- snapshot --------------------------------------------------------------------------------------
def snapshot(args: argparse.Namespace) -> int:
    """Take one snapshot and print its manifest."""
    manifest, code = take_snapshot(args)
    if manifest is None:
        return code
    print(json.dumps(manifest, indent=2))
    return EXIT_DONE


def take_snapshot(args: argparse.Namespace) -> tuple[dict[str, Any] | None, int]:
    """Walk the ensemble of ``--zk``/``--conn-id`` into the warehouse: (manifest, 0), or (None, exit code) after
    saying what went wrong."""
    import logging

    if getattr(args, "from_kraft", None):
        return take_kraft_snapshot(args)
    if getattr(args, "at_offset", None):
        return None, fail(EXIT_USAGE, "--at-offset goes with --from-kraft DIR")
    if getattr(args, "from_files", None):
        return take_offline_snapshot(args)
    if getattr(args, "at_zxid", None) or getattr(args, "at_time", None) or getattr(args, "log_dir", None):
        return None, fail(EXIT_USAGE, "--log-dir, --at-zxid and --at-time go with --from-files DIR")

    from kazoo.client import KazooClient

    from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
    from kafka_zk_audit.snapshot.live import write_new_snapshot

    cfg, _, problem = _settings_file(args.config)
    if problem:
        return None, fail(EXIT_USAGE, problem)
    settings, cluster, problem = zookeeper_settings(args)
    if problem:
        return None, fail(EXIT_USAGE, problem)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    warehouse = Warehouse(args.warehouse or default_warehouse())
    options = SnapshotOptions.from_settings(cfg.snapshot)
    last = [time.monotonic()]

    def progress(stats: Any) -> None:
        if time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            last[0] = time.monotonic()
            say(f"... {stats.znodes:,} znodes read")

    client = KazooClient(**settings.kazoo_kwargs())
    try:
        client.start(timeout=settings.timeout)
    except Exception as exc:
        client.close()
        return None, fail(EXIT_USAGE, f"cannot reach ZooKeeper at {settings.ensemble}: "
                                       f"{exc or type(exc).__name__}")
    say(f"snapshot of {settings.ensemble} as {settings.identity} into {warehouse.root}")
    try:
        manifest = paired_snapshot(cfg, cluster, warehouse, options, lambda dec: write_new_snapshot(
            client, settings, warehouse, cluster, options, progress, cluster=cluster, decoder=dec), airflow_connection)
    except Exception as exc:
        return None, fail(EXIT_INCOMPLETE, f"the snapshot could not complete: {type(exc).__name__}: {exc}")
    finally:
        client.stop()
        client.close()
    return manifest, EXIT_DONE


def _files_target(args: argparse.Namespace, given: str) -> tuple[Any, str, str, str | None]:
    """(settings, the folder or URL, the cluster name, problem) of ``--from-files``/``--from-kraft [NAME=]DIR``."""
    cfg, _, problem = _settings_file(args.config)
    name, source = named(given)
    cluster, naming = cluster_of(args, name)
    return cfg, source, cluster, problem or naming


def _writing_to(args: argparse.Namespace, cfg: Any) -> tuple[Warehouse, Any]:
    """The warehouse and snapshot options of a snapshot about to be written (and its log on stderr)."""
    import logging

    from kafka_zk_audit.contract.snapshot_options import SnapshotOptions

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    return Warehouse(args.warehouse or default_warehouse()), SnapshotOptions.from_settings(cfg.snapshot)


def take_offline_snapshot(args: argparse.Namespace) -> tuple[dict[str, Any] | None, int]:
    """Rebuild the tree from ZooKeeper's files (``--from-files``) into the warehouse: (manifest, 0), or (None,
    exit code) after saying what went wrong (2: the files or arguments cannot give a tree, nothing written)."""
    from kafka_zk_audit.snapshot.files.processtxn import OfflineFilesError
    from kafka_zk_audit.snapshot.files.rebuild import write_new_offline_snapshot
    from kafka_zk_audit.snapshot.files.sources import FilesSourceError, parse_at_time, parse_at_zxid

    cfg, source, cluster, problem = _files_target(args, args.from_files)
    if problem:
        return None, fail(EXIT_USAGE, problem)
    try:
        at_zxid, at_time = parse_at_zxid(args.at_zxid), parse_at_time(args.at_time)
    except FilesSourceError as exc:
        return None, fail(EXIT_USAGE, str(exc))
    if at_zxid is not None and at_time is not None:
        return None, fail(EXIT_USAGE, "give --at-zxid or --at-time, not both")
    for label, folder in (("--from-files", source), ("--log-dir", args.log_dir)):
        if folder is not None and not Path(folder).is_dir():
            return None, fail(EXIT_USAGE, f"{label} {folder}: no such directory; pass ZooKeeper's dataDir "
                                           "(the folder holding version-2/ or snapshot.* files)")
    from kafka_zk_audit.snapshot.kraft.kind import KRAFT, detect_kind, hint

    if detect_kind(source) == KRAFT:
        return None, fail(EXIT_USAGE, f"--from-files {source}: {hint(KRAFT)}")
    warehouse, options = _writing_to(args, cfg)
    say(f"snapshot rebuilt from the files in {source} into {warehouse.root}")
    try:
        manifest = paired_snapshot(cfg, cluster, warehouse, options, lambda dec: write_new_offline_snapshot(
            str(Path(source).resolve()), warehouse, cluster, log_dir=args.log_dir and str(Path(args.log_dir).resolve()),
            at_zxid=at_zxid, at_time=at_time, options=options, cluster=cluster, progress=say, decoder=dec),
            airflow_connection)
    except OfflineFilesError as exc:
        return None, fail(EXIT_USAGE, f"the files cannot give a trustworthy tree: {exc}")
    except Exception as exc:
        return None, fail(EXIT_INCOMPLETE, f"the snapshot could not complete: {type(exc).__name__}: {exc}")
    return manifest, EXIT_DONE


def take_kraft_snapshot(args: argparse.Namespace) -> tuple[dict[str, Any] | None, int]:
    """Replay a KRaft metadata log (``--from-kraft``) into the warehouse: (manifest, 0), or (None, exit code) after
    saying what went wrong (2: the files or arguments cannot give an image, nothing written)."""
    from kafka_zk_audit.snapshot.files.sources import FilesSourceError, parse_at_time
    from kafka_zk_audit.snapshot.kraft.batches import KraftError
    from kafka_zk_audit.snapshot.kraft.kind import ZOOKEEPER, detect_kind, hint
    from kafka_zk_audit.snapshot.kraft.sources import kraft_files
    from kafka_zk_audit.snapshot.kraft.take import write_new_kraft_snapshot
    from kafka_zk_audit.snapshot.targets import parse_at_offset

    if getattr(args, "at_zxid", None) or getattr(args, "log_dir", None):
        return None, fail(EXIT_USAGE, "--at-zxid and --log-dir go with --from-files; a KRaft log takes --at-offset "
                                       "or --at-time")
    cfg, source, cluster, problem = _files_target(args, args.from_kraft)
    if problem:
        return None, fail(EXIT_USAGE, problem)
    try:
        at_offset, at_time = parse_at_offset(args.at_offset), parse_at_time(args.at_time)
    except FilesSourceError as exc:
        return None, fail(EXIT_USAGE, str(exc))
    if "://" not in source and detect_kind(source) == ZOOKEEPER:
        return None, fail(EXIT_USAGE, f"--from-kraft {source}: {hint(ZOOKEEPER)}")
    warehouse, options = _writing_to(args, cfg)
    try:
        with kraft_files(source if "://" in source else str(Path(source).resolve())) as staged:
            say(f"snapshot replayed from the KRaft metadata log in {staged.origin} into {warehouse.root}")
            manifest = write_new_kraft_snapshot(staged.data_dir, warehouse, cluster, at_offset=at_offset,
                                                at_time=at_time, options=options, cluster=cluster,
                                                origin=staged.origin if staged.fetched else None, progress=say)
    except (FilesSourceError, KraftError) as exc:
        return None, fail(EXIT_USAGE, f"the metadata log cannot give a trustworthy image: {exc}")
    except Exception as exc:
        return None, fail(EXIT_INCOMPLETE, f"the snapshot could not complete: {type(exc).__name__}: {exc}")
    for warning in manifest["kraft"]["warnings"]:
        say(f"warning: {warning}")
    return manifest, EXIT_DONE


# -- Spark apps ------------------------------------------------------------------------------------
def audit(args: argparse.Namespace) -> int:
    """Run the audit Spark app once on the stored snapshots named (one plan for all of them) and print each one's
    audit.json: the object itself for one snapshot, else an object of them by snapshot id."""
    _, config, problem = _settings_file(args.config)
    if problem:
        return fail(EXIT_USAGE, problem)
    warehouse = Warehouse(args.warehouse or default_warehouse())
    snapshot_ids = list(dict.fromkeys(sid.strip() for value in args.snapshot_id for sid in value.split(",")
                                      if sid.strip()))
    for snapshot_id in snapshot_ids:
        try:
            validate_snapshot_id(snapshot_id)
        except ValueError as exc:
            return fail(EXIT_USAGE, str(exc))
        if not warehouse.exists(warehouse.manifest_path(snapshot_id)):
            return fail(EXIT_USAGE, f"snapshot {snapshot_id} has no manifest in {warehouse.root}: it is "
                                     "incomplete or absent")
    code = run_audit_app(warehouse, snapshot_ids, config, args.spark_master)
    if code:
        return code
    figures = {sid: warehouse.read_json(f"{warehouse.run_dir(sid)}/audit.json") for sid in snapshot_ids}
    print(json.dumps(figures[snapshot_ids[0]] if len(snapshot_ids) == 1 else figures, indent=2))
    return EXIT_DONE


def run_audit_app(warehouse: Warehouse, snapshot_ids: list[str], config: str | None, master: str,
                  extra_args: list[str] | None = None) -> int:
    """spark-submit the audit app once on stored snapshots: 0 when it wrote each one's ``audit.json``, else says so
    and 3."""
    app_args = ["--warehouse", warehouse.root, "--snapshot-ids", ",".join(snapshot_ids),
                *(["--config", config] if config else []), *(extra_args or [])]
    code = spark_submit(spark_app(AUDIT_APP), app_args, master, stored_znodes(warehouse, snapshot_ids))
    missing = [sid for sid in snapshot_ids if not warehouse.exists(f"{warehouse.run_dir(sid)}/audit.json")]
    if code or missing:
        return fail(EXIT_INCOMPLETE, f"the audit could not complete (spark-submit exit {code}; not audited: "
                                      f"{', '.join(missing) or 'none'}); see its log above")
    return EXIT_DONE


def format_reaudit(summary: dict[str, Any]) -> str:
    """A few lines per cluster: each snapshot's counts, and the checks that found something when."""
    lines = [f"reaudit {summary['reaudit_id']}: {len(summary['snapshots'])} snapshot(s), {summary['znodes']:,} "
             f"znodes in {summary['seconds']} s ({summary['snapshots_per_second']} snapshots/s, "
             f"{summary['znodes_per_second']} znodes/s)"]
    for cluster in summary["clusters"]:
        lines.append(f"cluster {cluster}:")
        for snap in (s for s in summary["snapshots"] if s["cluster"] == cluster):
            checks = ", ".join(f"{c}: {n}" for c, n in snap["checks"].items()) or "no finding"
            lines.append(f"  {snap['snapshot_id']}: {snap['findings']} finding(s), {snap['new_findings']} new, "
                         f"{snap['resolved_findings']} resolved; {checks}")
    lines += [f"NOT reaudited {f['snapshot_id']}: {f['error']}" for f in summary["failed"]]
    lines += [f"timeline: {summary['timeline']}", f"page: {summary['page']}",
              f"reaudit: {summary['path']}/reaudit.json"]
    return "\n".join(lines)


def reaudit(args: argparse.Namespace) -> int:
    """Re-run every check over the stored snapshots in one Spark app; print the summary."""
    from kafka_zk_audit.audit.reaudit import new_reaudit_id, parse_moment, reaudit_dir, select_snapshots

    _, config, problem = _settings_file(args.config)
    if problem:
        return fail(EXIT_USAGE, problem)
    if args.batch_znodes is not None and args.batch_znodes < 1:
        return fail(EXIT_USAGE, f"--batch-znodes must be at least 1, not {args.batch_znodes}")
    try:
        since = parse_moment(args.since) if args.since else None
        until = parse_moment(args.until) if args.until else None
    except ValueError as exc:
        return fail(EXIT_USAGE, f"--since/--until: {exc}")
    warehouse = Warehouse(args.warehouse or default_warehouse())
    chosen = select_snapshots(warehouse, args.cluster, since, until)
    if not chosen:
        return fail(EXIT_USAGE, f"no stored snapshot in {warehouse.root} matches"
                                 f"{' clusters ' + ', '.join(args.cluster) if args.cluster else ''}"
                                 f"{' since ' + since.isoformat() if since else ''}"
                                 f"{' until ' + until.isoformat() if until else ''}")
    reaudit_id = new_reaudit_id()
    say(f"reaudit {reaudit_id} of {len(chosen)} snapshot(s) of {', '.join(sorted({s.cluster for s in chosen}))}")
    app_args = ["--warehouse", warehouse.root, "--reaudit-id", reaudit_id]
    app_args += [arg for cluster in args.cluster for arg in ("--cluster", cluster)]
    app_args += ["--since", since.isoformat()] if since else []
    app_args += ["--until", until.isoformat()] if until else []
    app_args += ["--config", config] if config else []
    app_args += ["--batch-znodes", str(args.batch_znodes)] if args.batch_znodes else []
    summary, code = submit_for_summary(REAUDIT_APP, app_args, args.spark_master, warehouse,
                                       f"{reaudit_dir(warehouse, reaudit_id)}/reaudit.json", "reaudit")
    if summary is None:
        return code
    print(json.dumps(summary, indent=2) if args.json else format_reaudit(summary))
    if code or summary["failed"]:
        return fail(EXIT_INCOMPLETE, f"{len(summary['failed'])} snapshot(s) could not be reaudited "
                                      f"(spark-submit exit {code})")
    return EXIT_DONE


def readiness(args: argparse.Namespace) -> int:
    """Snapshot one ensemble, audit it for a KRaft migration to ``--target``, write the readiness pages and print
    the report. Exit 0 ready (with or without warnings), 1 blocked, 2 usage, 3 a stage failed."""
    from kafka_zk_audit.contract.readiness import parse_target
    from kafka_zk_audit.report.readiness import load_reports, readiness_json_path, render_text, write_pages

    _, config, problem = _settings_file(args.config)
    if problem:
        return fail(EXIT_USAGE, problem)
    if args.target is not None:
        try:
            parse_target(args.target)
        except ValueError as exc:
            return fail(EXIT_USAGE, f"--target: {exc}")
    manifest, code = take_snapshot(args)
    if manifest is None:
        return code
    snapshot_id = manifest["snapshot_id"]
    warehouse = Warehouse(args.warehouse or default_warehouse())
    target = ["--target-version", args.target] if args.target else []  # else the cluster's settings decide
    code = run_audit_app(warehouse, [snapshot_id], config, args.spark_master, target)
    if code:
        return code
    if not warehouse.exists(readiness_json_path(warehouse, snapshot_id)):
        return fail(EXIT_INCOMPLETE, f"the audit of {snapshot_id} wrote no readiness report "
                                      f"({readiness_json_path(warehouse, snapshot_id)}): set migration.readiness "
                                      "to true in the settings, or see the audit's log above")
    report = load_reports(warehouse, [snapshot_id])[0]
    pages = write_pages(warehouse, [report])
    print(json.dumps(report, indent=2) if args.json else render_text(report))
    say(f"readiness pages: {', '.join(pages)}")
    verdict = report.get("verdict")
    if verdict == "blocked":
        return EXIT_BLOCKED
    if verdict in ("ready", "ready_with_warnings"):
        return EXIT_DONE
    return fail(EXIT_INCOMPLETE, f"the readiness report of {snapshot_id} has no known verdict ({verdict!r})")


def add_parsers(sub: Any) -> None:
    """The ``snapshot``, ``audit``, ``reaudit`` and ``readiness`` subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--warehouse", default=None,
                        help="warehouse path or URL (default $KAFKA_ZK_AUDIT_WAREHOUSE or ./warehouse)")
    common.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    spark = argparse.ArgumentParser(add_help=False)
    spark.add_argument("--spark-master", default="local[*]", help="Spark master (default local[*])")

    snap = sub.add_parser("snapshot", parents=[common], help="take one snapshot and print its manifest (JSON)")
    target = snap.add_mutually_exclusive_group(required=True)
    target.add_argument("--zk", help="[NAME=]HOST:PORT[,HOST:PORT...][/chroot] of the ensemble")
    target.add_argument("--conn-id", help="[NAME=]ID of an Airflow connection (conn_type zookeeper)")
    target.add_argument("--from-files", metavar="[NAME=]DIR",
                        help="rebuild the tree from ZooKeeper's own files: its dataDir (snapshot.*, or version-2/)")
    target.add_argument("--from-kraft", metavar="[NAME=]DIR|URL",
                        help="replay a KRaft controller's metadata log: its metadata.log.dir (the folder holding "
                             "__cluster_metadata-0/), a local path or an fsspec URL")
    snap.add_argument("--cluster", default=None, metavar="NAME",
                      help="the snapshot's cluster name (its id and cluster column; default: the target's NAME=, "
                           "else default)")
    snap.add_argument("--log-dir", default=None, metavar="DIR",
                      help="with --from-files: the dataLogDir holding log.* (default: the --from-files folder)")
    snap.add_argument("--at-zxid", default=None, metavar="N",
                      help="with --from-files: the tree at this zxid (decimal or 0x hex); default: the newest")
    snap.add_argument("--at-time", default=None, metavar="T",
                      help="with --from-files or --from-kraft: the state at this ISO 8601 time (naive: UTC); "
                           "default: the newest")
    snap.add_argument("--at-offset", default=None, metavar="N",
                      help="with --from-kraft: the image after the record at this log offset; default: the newest")
    snap.set_defaults(handler=snapshot)

    one = sub.add_parser("audit", parents=[common, spark],
                         help="run the audit Spark app on stored snapshots (one plan for all) and print their "
                              "audit.json")
    one.add_argument("--snapshot-id", required=True, action="append",
                     help="a stored snapshot; repeatable, or comma-separated")
    one.set_defaults(handler=audit)

    again = sub.add_parser("reaudit", parents=[common, spark],
                           help="re-run every check over the stored snapshots, into <warehouse>/reaudits/<id>/")
    again.add_argument("--cluster", action="append", default=[],
                       help="a cluster's fleet name or ensemble (HOST:PORT/chroot); repeatable; default: all")
    again.add_argument("--since", default=None, help="snapshots started at or after: 2026-11-01[T06:00:00Z] or 7d")
    again.add_argument("--until", default=None, help="snapshots started at or before: a date, a time or a duration")
    again.add_argument("--json", action="store_true", help="print reaudit.json instead of the summary")
    again.add_argument("--batch-znodes", type=int, default=None, metavar="N",
                       help="at most N znodes per Spark batch (default 300,000, for Spark's default 1 GB driver; raise "
                            "it with a larger driver)")
    again.set_defaults(handler=reaudit)

    ready = sub.add_parser("readiness", parents=[common, spark],
                           help="snapshot one ensemble and report its readiness for a ZooKeeper to KRaft migration")
    target = ready.add_mutually_exclusive_group(required=True)
    target.add_argument("--zk", help="[NAME=]HOST:PORT[,HOST:PORT...][/chroot] of the ensemble")
    target.add_argument("--conn-id", help="[NAME=]ID of an Airflow connection (conn_type zookeeper)")
    ready.add_argument("--target", default=None,
                       help="Kafka version of the migration, 3.4 to 3.9 with an optional patch (3.6.1); default: "
                            "the settings' migration.target_version (3.9 unless set)")
    ready.add_argument("--json", action="store_true", help="print readiness.json instead of the report")
    ready.set_defaults(handler=readiness)
    add_history_parser(sub, [common, spark])
