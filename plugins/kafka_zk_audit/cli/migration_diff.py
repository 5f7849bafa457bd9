"""``kafka-zk-audit migration-diff``: prove a ZK → KRaft migration, ZooKeeper's last state against the KRaft log.

    kafka-zk-audit migration-diff --zk HOST:PORT[/chroot] | --from-files DIR [--chroot /kafka]
                                  --from-kraft DIR [--release 3.9] [--max-lag-records N] [--max-lag-seconds S]
                                  [--json]

The ZooKeeper side is read live (getData and getChildren only; credentials from ``KAFKA_ZK_AUDIT_ZK_AUTH``) or
rebuilt from ZooKeeper's files; the KRaft side is replayed from a controller's metadata directory up to the offset
``/migration`` names. Secrets are fingerprinted with a key made for this run only and never printed; with the
brokers' ``password.encoder.secret`` in ``KAFKA_ZK_AUDIT_PASSWORD_ENCODER_SECRET`` (never an argument), encoded
broker passwords are decoded and compared by the fingerprint of their clear text, else by key. Exit codes: 0 the
two match (migration verified), 1 they diverge (each divergence printed with both sides' evidence), 2 usage or
connection error, 3 the files could not be read.

``paired_snapshot`` is the ``snapshot`` stage of a cluster the settings pair with its KRaft log: the snapshot taken
with the brokers' secret (the password of ``migration.password_encoder_secret_conn_id``), then both sides laid out
for the audit's diff, as the DAG's snapshot task does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from kafka_zk_audit.cli.common import EXIT_INCOMPLETE, EXIT_USAGE, check_reachable, fail
from kafka_zk_audit.contract.migration_checks import BY_ID
from kafka_zk_audit.snapshot.migration.diff import DEFAULT_MAX_LAG_MS, DEFAULT_MAX_LAG_RECORDS, LagLimits

SCRATCH_SNAPSHOT = "20000101T000000Z-migration-diff"  # the one snapshot of the scratch warehouse

EXIT_VERIFIED, EXIT_DIVERGED = 0, 1
SECRET_ENV = "KAFKA_ZK_AUDIT_PASSWORD_ENCODER_SECRET"


class PairedSetupError(ValueError):
    """A paired cluster's settings that cannot be used (its secret's connection missing or empty)."""


def env_decoder() -> Any:
    """A decoder of the brokers' password.encoder.secret from ``KAFKA_ZK_AUDIT_PASSWORD_ENCODER_SECRET``, or None."""
    from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder

    secret = os.environ.get(SECRET_ENV)
    return PasswordDecoder(secret) if secret else None


def paired_decoder(migration: dict[str, Any] | None, connection: Callable[[str], dict[str, Any] | None]) -> Any:
    """The decoder of a paired cluster's ``password_encoder_secret_conn_id`` (its connection's password, looked up
    with ``connection``)."""
    conn_id = (migration or {}).get("password_encoder_secret_conn_id")
    if not conn_id:
        return None
    from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder

    secret = (connection(conn_id) or {}).get("password")
    if not secret:
        raise PairedSetupError(f"connection {conn_id!r} (migration.password_encoder_secret_conn_id) is missing or "
                               "has no password: set its password to the brokers' password.encoder.secret")
    return PasswordDecoder(secret)


def paired_snapshot(cfg: Any, cluster: str | None, warehouse: Any, options: Any,
                    write: Callable[[Any], dict[str, Any]],
                    connection: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
    """``write(decoder)`` the snapshot, then, for a cluster the settings pair with its KRaft log, lay both sides
    out for the audit's diff (the verdict's summary on stderr); the manifest."""
    from kafka_zk_audit.cli.common import say
    from kafka_zk_audit.snapshot.kraft.sources import kraft_files
    from kafka_zk_audit.snapshot.migration.paired import prepare_migration_of
    from kafka_zk_audit.snapshot.targets import migration_target

    paired = next((c for c in (cfg.clusters if cfg else ()) if c.name == cluster and c.migration), None)
    migration = migration_target(paired.migration) if paired else None
    decoder = paired_decoder(migration, connection)
    manifest = write(decoder)
    if migration is not None:
        def fetch(target: dict[str, Any]) -> Any:
            if target.get("sftp_conn_id"):
                raise PairedSetupError("a KRaft directory over SFTP is fetched by the DAG's snapshot task (its SFTP "
                                       "connection); give the stage a local folder or an fsspec URL")
            return kraft_files(str(target["metadata_dir"]))

        verdict = prepare_migration_of(warehouse, manifest, migration, fetch, decoder=decoder,
                                       secrets_in_clear=options.copy_secrets)
        say(f"{cluster}: {verdict['summary']}")
    return manifest


def add_parser(sub: Any) -> None:
    """The ``migration-diff`` subcommand."""
    parser = sub.add_parser("migration-diff", help="compare ZooKeeper's last state with the KRaft metadata log a "
                                                   "ZK -> KRaft migration wrote; exit 0 when they match, 1 when not")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--zk", default=None, metavar="HOST:PORT[/chroot]", help="the live ZooKeeper ensemble")
    source.add_argument("--from-files", default=None, metavar="DIR", help="ZooKeeper's dataDir (or version-2/)")
    parser.add_argument("--chroot", default="/", help="with --from-files: Kafka's chroot in the tree (default /)")
    parser.add_argument("--from-kraft", required=True, metavar="DIR",
                        help="a KRaft controller's metadata.log.dir (the folder holding __cluster_metadata-0/)")
    parser.add_argument("--release", default="3.9", metavar="VERSION",
                        help="the Kafka release that ran the migration, 3.4 to 3.9 (default 3.9)")
    parser.add_argument("--max-lag-records", type=int, default=DEFAULT_MAX_LAG_RECORDS,
                        help=f"dual-write lag allowed, in records (default {DEFAULT_MAX_LAG_RECORDS})")
    parser.add_argument("--max-lag-seconds", type=float, default=DEFAULT_MAX_LAG_MS / 1000,
                        help=f"dual-write lag allowed, in seconds (default {DEFAULT_MAX_LAG_MS // 1000})")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    parser.set_defaults(handler=migration_diff)


def _tree(args: argparse.Namespace, fingerprint: Any, scratch: str) -> tuple[dict[str, Any] | None, str | None]:
    """The ZooKeeper side: rebuilt from its files, or walked live with the snapshot stage's own walker (paced,
    read-only, secrets fingerprinted) into the scratch warehouse ``scratch``."""
    from kafka_zk_audit.snapshot.migration.paired import snapshot_tree
    from kafka_zk_audit.snapshot.migration.tree import tree_from_files

    if args.from_files:
        return tree_from_files(args.from_files, args.chroot, fingerprinter=fingerprint), None
    from kazoo.client import KazooClient

    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit.snapshot.connection import ZkSettings, auth_from_env, split_hosts_and_chroot
    from kafka_zk_audit.snapshot.live import write_snapshot

    hosts, chroot = split_hosts_and_chroot(args.zk)
    settings = ZkSettings(hosts=hosts, chroot=chroot, auth=auth_from_env())
    problem = check_reachable(settings)
    if problem:
        return None, problem
    warehouse = Warehouse(scratch)
    client = KazooClient(**settings.kazoo_kwargs())
    client.start(timeout=settings.timeout)
    try:
        write_snapshot(client, settings, warehouse, SCRATCH_SNAPSHOT, decoder=env_decoder())
    finally:
        client.stop()
        client.close()
    return snapshot_tree(warehouse, SCRATCH_SNAPSHOT), None


def migration_diff(args: argparse.Namespace) -> int:
    """Compare, print the verdict; 0 verified, 1 diverged."""
    from kafka_zk_audit.snapshot.migration.mapping import parse_release

    try:
        parse_release(args.release)
    except ValueError as error:
        return fail(EXIT_USAGE, str(error))
    # a scratch warehouse of this run only: its key fingerprints both sides, so fingerprints compare, never leak
    with tempfile.TemporaryDirectory(prefix="kafka-zk-audit-diff-") as scratch:
        return _compared(args, scratch)


def _compared(args: argparse.Namespace, scratch: str) -> int:
    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit.snapshot.migration.diff import verify_migration
    from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key

    decoder = env_decoder()
    fingerprinter = Fingerprinter(warehouse_key(Warehouse(scratch)), decoder)
    try:
        tree, problem = _tree(args, fingerprinter, scratch)
        if tree is None:
            return fail(EXIT_USAGE, problem or "no ZooKeeper tree")
        limits = LagLimits(records=args.max_lag_records, ms=int(args.max_lag_seconds * 1000))
        verification = verify_migration(tree, args.from_kraft, args.release, fingerprinter.fingerprint, limits,
                                        decoding=decoder is not None)
    except (OSError, ValueError) as error:  # KraftError, OfflineFilesError: unreadable files
        return fail(EXIT_INCOMPLETE, f"cannot compare: {error}")
    if args.json:
        json.dump(verification.as_dict(), sys.stdout, indent=2)
        print()
    else:
        print(verification.summary())
        if verification.lag_records is not None:
            print(f"dual writes: ZooKeeper reflects offset {verification.offset}, the log ends at "
                  f"{verification.log_end_offset} ({verification.lag_records} records, "
                  f"{(verification.lag_ms or 0) / 1000:.1f}s behind); state {verification.migration_state}")
        for finding in verification.findings:
            divergence = BY_ID[finding.check_id]
            print(f"  - [{divergence.severity}] {finding.check_id} {finding.path or ''}: {finding.detail}")
            print(f"      remedy: {divergence.remedy}")
    return EXIT_VERIFIED if verification.verified else EXIT_DIVERGED
