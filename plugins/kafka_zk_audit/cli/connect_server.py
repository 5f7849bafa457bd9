"""``kafka-zk-audit connect-server``: the long-lived Spark Connect server the event-driven DAG's audit can run through.

    kafka-zk-audit connect-server start [--port 15002] [--master local[*]] [--driver-memory 2g] [--dir DIR]
                                        [--warm-up [WAREHOUSE]]
    kafka-zk-audit connect-server status [--dir DIR]
    kafka-zk-audit connect-server stop [--dir DIR]

``start`` launches the server (spark-submit of Spark's ``SparkConnectServer``) on 127.0.0.1, waits until it answers a
Spark Connect ping and prints the Airflow connection that reaches it (with ``--warm-up``, after one audit of the
warehouse's newest snapshot through it, into a scratch folder); ``stop`` stops it by its recorded pid. Its
folder (``--dir``, default ``$KAFKA_ZK_AUDIT_CONNECT_DIR``, else ``~/.kafka-zk-audit/connect-server``) holds its pid,
port and log. Exit codes: 0 done (``status``: it serves), 1 ``status``: it does not serve, 2 usage error (the port is
taken, a server already runs from that folder), 3 it could not start.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kafka_zk_audit.cli.common import EXIT_BLOCKED, EXIT_DONE, EXIT_INCOMPLETE, EXIT_USAGE, fail, say


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("connect-server", help="start, stop or check the Spark Connect server the event-driven "
                                                   "audit can run through")
    actions = parser.add_subparsers(dest="action", required=True)
    folder = argparse.ArgumentParser(add_help=False)
    folder.add_argument("--dir", default=None, type=Path,
                        help="the server's folder: pid, port, log (default $KAFKA_ZK_AUDIT_CONNECT_DIR or "
                             "~/.kafka-zk-audit/connect-server)")
    start = actions.add_parser("start", parents=[folder], help="start the server on 127.0.0.1 and wait until it serves")
    start.add_argument("--port", type=int, default=None, help="its port on 127.0.0.1 (default 15002)")
    start.add_argument("--master", default="local[*]", help="the Spark master of its JVM (default local[*])")
    start.add_argument("--driver-memory", default=None, help="its JVM's heap, e.g. 2g (default Spark's, 1g)")
    start.add_argument("--timeout", type=float, default=180.0, help="seconds to wait until it serves (default 180)")
    start.add_argument("--warm-up", nargs="?", const="", default=None, metavar="WAREHOUSE",
                       help="then audit the newest snapshot of this warehouse (default $KAFKA_ZK_AUDIT_WAREHOUSE or "
                            "./warehouse) through it, into a scratch folder: the first event's audit finds it warm")
    start.add_argument("--warm-up-rounds", type=int, default=None, metavar="N",
                       help="with --warm-up: how many audits it runs (default 5: the server's JIT needs several)")
    start.set_defaults(handler=start_server)
    actions.add_parser("status", parents=[folder], help="whether it serves, its pid and address").set_defaults(
        handler=server_status)
    actions.add_parser("stop", parents=[folder], help="stop it by its recorded pid").set_defaults(handler=stop_server)


def _folder(args: argparse.Namespace) -> Path:
    from kafka_zk_audit.audit.connect import default_dir

    return (args.dir or default_dir()).expanduser().resolve()


def connection_json(server: Any) -> str:
    """The Spark provider's connection that reaches ``server``, as ``AIRFLOW_CONN_<ID>`` takes it."""
    return json.dumps({"conn_type": "spark_connect", "host": server.host, "port": server.port})


def start_server(args: argparse.Namespace) -> int:
    from kafka_zk_audit.audit.connect import DEFAULT_PORT, ConnectServer

    folder = _folder(args)
    recorded = ConnectServer.recorded(folder)
    if recorded is not None and recorded.pid is not None:
        return fail(EXIT_USAGE, f"a Spark Connect server already runs from {folder} (pid {recorded.pid}, "
                                f"{recorded.host}:{recorded.port}); stop it first: kafka-zk-audit connect-server stop")
    server = ConnectServer(folder, port=args.port or DEFAULT_PORT, master=args.master,
                           driver_memory=args.driver_memory)
    say(f"starting a Spark Connect server on {server.host}:{server.port} ({server.master}); log {server.log_file}")
    try:
        server.launch()
    except (RuntimeError, FileNotFoundError) as exc:
        return fail(EXIT_USAGE, str(exc))
    try:
        server.wait_serving(args.timeout)
    except RuntimeError as exc:
        return fail(EXIT_INCOMPLETE, str(exc))
    say(f"serving on {server.url} (pid {server.pid}); stop it with: kafka-zk-audit connect-server stop"
        + (f" --dir {folder}" if args.dir else ""))
    if args.warm_up is not None:
        warm_up_server(server, args.warm_up, args.warm_up_rounds)
    print("# the Airflow connection that reaches it; name it in the settings' events.spark_connect_conn_id")
    print(f"export AIRFLOW_CONN_SPARK_CONNECT_DEFAULT='{connection_json(server)}'")
    return EXIT_DONE


def warm_up_server(server: Any, warehouse: str, rounds: int | None = None) -> None:
    """The ``--warm-up`` audits (a failure is said, not fatal: the server serves)."""
    import time

    from kafka_zk_audit.audit.connect import WARM_UP_ROUNDS, warm_up
    from kafka_zk_audit.contract.warehouse import default_warehouse

    root = warehouse or default_warehouse()
    rounds = WARM_UP_ROUNDS if rounds is None else max(rounds, 1)
    began = time.monotonic()
    try:
        snapshot_id = warm_up(server.url, root if "://" in root else str(Path(root).resolve()), rounds,
                              progress=lambda number, seconds: say(f"  warm-up audit {number} of {rounds}: "
                                                                   f"{seconds:.1f}s"))
    except Exception as exc:  # the server serves either way
        say(f"the warm-up audit failed ({type(exc).__name__}: {str(exc)[:300]}); the server serves, cold")
        return
    if snapshot_id is None:
        say(f"no snapshot in {root} to warm up with; the server serves, cold")
    else:
        say(f"warmed up with {rounds} audit(s) of {snapshot_id} in {time.monotonic() - began:.1f}s")


def server_status(args: argparse.Namespace) -> int:
    from kafka_zk_audit.audit.connect import ConnectServer

    folder = _folder(args)
    server = ConnectServer.recorded(folder)
    if server is None:
        print(f"no Spark Connect server was started from {folder}")
        return EXIT_BLOCKED
    if not server.is_serving():
        state = "its process runs but its port does not answer" if server.pid else "not running"
        print(f"Spark Connect server of {folder}: {state} ({server.host}:{server.port}); log {server.log_file}")
        return EXIT_BLOCKED
    print(f"Spark Connect server of {folder}: serving on {server.url} (pid {server.pid}, {server.master}); "
          f"log {server.log_file}")
    return EXIT_DONE


def stop_server(args: argparse.Namespace) -> int:
    from kafka_zk_audit.audit.connect import ConnectServer

    folder = _folder(args)
    server = ConnectServer.recorded(folder)
    if server is None or not server.stop():
        print(f"no Spark Connect server runs from {folder}")
        return EXIT_DONE
    print(f"stopped the Spark Connect server of {folder}")
    return EXIT_DONE
