"""The ZooKeeper ACLs of Kafka's own znodes, as a snapshot's manifest records them (``znode_acls``).

``format_acl`` writes one ACL as ZooKeeper's CLI prints it (both sources use it); ``kafka_znode_acls`` reads those
of ``KAFKA_ACL_PATHS`` from a live ensemble.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError

# Kafka's own znodes whose ZooKeeper ACLs the manifest records (``znode_acls``): the KRaft controllers of a
# ZK→KRaft migration must log in to ZooKeeper as the principal these ACLs name (zookeeper.set.acl).
KAFKA_ACL_PATHS = (
    "/", "/admin", "/admin/delete_topics", "/brokers", "/brokers/ids", "/brokers/seqid", "/brokers/topics",
    "/cluster", "/cluster/id", "/config", "/config/brokers", "/config/changes", "/config/clients",
    "/config/topics", "/config/users", "/consumers", "/controller", "/controller_epoch", "/delegation_token",
    "/feature", "/isr_change_notification", "/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended",
    "/kafka-acl-extended-changes", "/latest_producer_id_block", "/log_dir_event_notification", "/migration",
)
_PERMS = ((4, "c"), (8, "d"), (1, "r"), (2, "w"), (16, "a"))  # ZooKeeper's cdrwa order


def format_acl(acl: Any) -> str:
    """``scheme:id:perms`` as ZooKeeper's CLI prints it; a digest id keeps its user name only (the rest is
    a password hash)."""
    scheme, ident = acl.id.scheme, acl.id.id
    if scheme == "digest":
        ident = ident.split(":", 1)[0]
    perms = "".join(letter for bit, letter in _PERMS if acl.perms & bit)
    return f"{scheme}:{ident}:{perms}"


def kafka_znode_acls(client: KazooClient, with_retry: Callable[[Callable[[], Any]], Any]) -> dict[str, list[str]]:
    """The ACLs of Kafka's top-level znodes that exist (``KAFKA_ACL_PATHS``), a few reads in all, each read through
    ``with_retry`` (the walk's retry budget); a znode whose ACL the auditor may not read maps to ``["unreadable"]``."""
    acls: dict[str, list[str]] = {}
    for path in KAFKA_ACL_PATHS:
        try:
            found, _stat = with_retry(lambda path=path: client.get_acls(path))
        except NoNodeError:
            continue
        except NoAuthError:
            acls[path] = ["unreadable"]
            continue
        acls[path] = sorted(format_acl(acl) for acl in found)
    return acls
