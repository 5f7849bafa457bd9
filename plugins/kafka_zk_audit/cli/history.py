"""``kafka-zk-audit history --from-files DIR``: what happened between runs, from ZooKeeper's transaction logs.

Runs the packaged Spark app ``zk_history.py`` (``kafka_zk_audit.history.job``) with spark-submit and prints
its summary (``--json``: ``history.json``). ``--min-interval`` defaults to the setting ``history.min_interval`` of
``--config`` (1s in the packaged defaults). Exit codes as for the other stages: 0 done, 2 usage, 3 could not
complete (or a log could not be read to its end).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kafka_zk_audit.cli.common import EXIT_DONE, EXIT_INCOMPLETE, EXIT_USAGE, fail, say
from kafka_zk_audit.cli.spark import submit_for_summary
from kafka_zk_audit.contract.settings import SettingsError, load_config, parse_duration, seconds_text
from kafka_zk_audit.contract.warehouse import Warehouse, default_warehouse

HISTORY_APP = "zk_history.py"


def format_history(summary: dict[str, Any]) -> str:
    """A few lines: the window, each check's listed and shorter intervals, the failovers, where it all is."""
    lines = [f"history {summary['history_id']}: {summary['txns']:,} txns, zxid {summary['first_zxid']} to "
             f"{summary['last_zxid']} ({summary['first_time']} to {summary['last_time']}), {summary['seconds']} s "
             f"({summary['txns_per_second']} txns/s decoded)"]
    for check, counts in summary["checks"].items():
        lines.append(f"  {check}: {counts['listed']} interval(s), {counts['short']} shorter than "
                     f"{summary['min_interval_ms'] / 1000:g} s")
    if not summary["checks"]:
        lines.append("  no invariant was broken")
    lines.append(f"controller failovers: {summary['controller_failovers']}")
    lines += [f"NOT read to its end: {e['file']} after zxid {e['after_zxid']}: {e['error']}"
              for e in summary["log_errors"]]
    lines += [f"page: {summary['page']}", f"history: {summary['path']}/history.json"]
    return "\n".join(lines)


def history(args: argparse.Namespace) -> int:
    """spark-submit the history app on ``--from-files`` and print its summary."""
    from kafka_zk_audit.history.job import history_dir, new_history_id

    files = Path(args.from_files)
    if not files.is_dir():
        return fail(EXIT_USAGE, f"--from-files {args.from_files}: not a directory")
    try:
        min_interval = (parse_duration(args.min_interval, "--min-interval", "the command line")
                        if args.min_interval is not None else load_config(args.config).history.min_interval)
    except SettingsError as exc:
        return fail(EXIT_USAGE, str(exc))
    warehouse = Warehouse(args.warehouse or default_warehouse())
    history_id = args.history_id or new_history_id()
    app_args = ["--warehouse", warehouse.root, "--files", str(files.resolve()), "--history-id", history_id,
                "--min-interval", seconds_text(min_interval)]
    app_args += ["--log-dir", str(Path(args.log_dir).resolve())] if args.log_dir else []
    for option in ("cluster", "chroot", "from_zxid", "to_zxid"):
        value = getattr(args, option)
        app_args += [f"--{option.replace('_', '-')}", str(value)] if value else []
    say(f"history {history_id} of {files}")
    summary, code = submit_for_summary(HISTORY_APP, app_args, args.spark_master, warehouse,
                                       f"{history_dir(warehouse, history_id)}/history.json", "history")
    if summary is None:
        return code
    print(json.dumps(summary, indent=2) if args.json else format_history(summary))
    if code:
        return fail(EXIT_INCOMPLETE, f"{len(summary['log_errors'])} log(s) could not be read to their end")
    return EXIT_DONE


def add_parser(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """The ``history`` subcommand (``parents``: the common and Spark options of the other stages)."""
    parser = sub.add_parser("history", parents=parents,
                            help="what happened between runs, from ZooKeeper's transaction logs")
    parser.add_argument("--from-files", required=True, help="ZooKeeper's dataDir (snapshots, and logs)")
    parser.add_argument("--log-dir", default=None, help="ZooKeeper's dataLogDir when apart from the dataDir")
    parser.add_argument("--cluster", default=None, help="the cluster's fleet name")
    parser.add_argument("--chroot", default=None, help="Kafka's chroot (/kafka); paths are relative to it")
    parser.add_argument("--history-id", default=None, help="default: a new one (YYYYMMDDTHHMMSSZ-<hex>)")
    parser.add_argument("--min-interval", default=None,
                        help="shorter intervals are counted, not listed (default: the setting history.min_interval)")
    parser.add_argument("--from-zxid", default=None, help="first zxid of the window (decimal or 0x hex)")
    parser.add_argument("--to-zxid", default=None, help="last zxid of the window (decimal or 0x hex)")
    parser.add_argument("--json", action="store_true", help="print history.json instead of the summary")
    parser.set_defaults(handler=history)
