"""Write a simulated Kafka cluster (with planted problems) into ZooKeeper.

    python -m kafka_zk_audit_testing.simulator --zk HOST:PORT/CHROOT [--era 3.x] [--plant CHECK_ID ...]

Credentials only come from the environment (``KAFKA_ZK_AUDIT_ZK_AUTH=digest:USER:PASSWORD``),
never from argv where ``ps`` would show them. With ``--hold`` the sessions (and so the brokers'
and consumers' ephemeral nodes) stay alive until SIGTERM or SIGINT; ``--ready-file`` is written
once everything is in place.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit_testing.simulator.cluster import Simulator
from kafka_zk_audit_testing.simulator.spec import ERAS, ClusterSpec

AUTH_ENV = "KAFKA_ZK_AUDIT_ZK_AUTH"


def auth_from_env(environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[str, str] | None:
    """``digest:USER:PASSWORD`` -> ``("digest", "USER:PASSWORD")`` for kazoo's ``auth_data``."""
    value = environ.get(AUTH_ENV, "")
    if not value:
        return None
    scheme, _, credentials = value.partition(":")
    if scheme != "digest" or ":" not in credentials:
        raise ValueError(f"{AUTH_ENV} must look like digest:USER:PASSWORD")
    return scheme, credentials


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    defaults = ClusterSpec()
    parser = argparse.ArgumentParser(prog="kafka-zk-sim", description=__doc__.splitlines()[0])
    parser.add_argument("--zk", required=True, help="HOST:PORT[,HOST:PORT…][/chroot]")
    parser.add_argument("--era", default=defaults.era, choices=list(ERAS))
    parser.add_argument("--brokers", type=int, default=defaults.brokers)
    parser.add_argument("--racks", type=int, default=defaults.racks)
    parser.add_argument("--topics", type=int, default=defaults.topics)
    parser.add_argument("--partitions", type=int, default=defaults.partitions)
    parser.add_argument("--replication-factor", type=int, default=defaults.replication_factor)
    parser.add_argument("--groups", type=int, default=defaults.groups)
    parser.add_argument("--consumers", type=int, default=defaults.consumers_per_group, help="consumers per group")
    parser.add_argument("--threads", type=int, default=defaults.threads_per_consumer, help="streams per consumer")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--internal-topics", action="store_true", help="add __consumer_offsets (0.9+)")
    parser.add_argument(
        "--plant", action="extend", nargs="+", default=[], choices=CHECK_IDS, metavar="CHECK_ID",
        help="plant this check's problem (repeatable)",
    )
    parser.add_argument("--hold", action="store_true", help="keep the sessions alive until SIGTERM/SIGINT")
    parser.add_argument("--ready-file", type=Path, help="write this JSON file once everything is written")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        auth = auth_from_env()
        spec = ClusterSpec(
            era=args.era, brokers=args.brokers, racks=args.racks, topics=args.topics, partitions=args.partitions,
            replication_factor=args.replication_factor, groups=args.groups, consumers_per_group=args.consumers,
            threads_per_consumer=args.threads, seed=args.seed, internal_topics=args.internal_topics,
        )
    except ValueError as error:
        print(f"kafka-zk-sim: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    sim = Simulator(hosts=args.zk, auth=auth)
    try:
        counts = sim.write(spec)
        planted = [sim.plant(check_id) for check_id in dict.fromkeys(args.plant)]
        rate = counts.creates / max(counts.seconds, 1e-9)
        print(f"wrote era {spec.era} to {args.zk}: {counts.creates:,} znodes ({counts.ops:,} operations) "
              f"in {counts.seconds:.1f} s, {rate:,.0f} znodes/s")
        for plant in planted:
            implied = f" (also {', '.join(plant.implied)})" if plant.implied else ""
            print(f"planted {plant.check_id} at {plant.path}{implied}")
        if args.hold:
            # From here on SIGTERM/SIGINT end the hold and close the sessions cleanly.
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
        if args.ready_file:
            ready = {
                "zk": args.zk, "era": spec.era, "znodes": sim.counts.creates, "seconds": round(counts.seconds, 3),
                "planted": [dataclasses.asdict(plant) for plant in planted],
            }
            temporary = args.ready_file.with_name(args.ready_file.name + ".tmp")
            temporary.write_text(json.dumps(ready, indent=2))
            temporary.replace(args.ready_file)
        if args.hold:
            print("holding the sessions; stop with SIGTERM or SIGINT", flush=True)
            while not stop.wait(0.5):
                pass
    except Exception as error:  # noqa: BLE001 - a command line reports, it does not trace back
        print(f"kafka-zk-sim: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
