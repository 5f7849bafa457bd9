"""How to reach a ZooKeeper ensemble: hosts, chroot and auth, without any secret in logs."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

AUTH_ENV = "KAFKA_ZK_AUDIT_ZK_AUTH"
# kazoo logs every response it receives at DEBUG (znode data included): its logger for the snapshot
# stays at INFO whatever the root level, so secrets never reach a log.
KAZOO_LOGGER = "kafka_zk_audit.kazoo"
# kazoo's own reconnection policy: keep trying every host, backing off to at most a second between
# rounds. The walk's retry budget (SnapshotOptions.max_reconnects, reconnect_timeout_s) decides when
# to give up, not this policy (kazoo's default backs off up to an hour).
CONNECTION_RETRY = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}


def kazoo_logger() -> logging.Logger:
    """The logger kazoo clients of the snapshot log to: never below INFO."""
    logger = logging.getLogger(KAZOO_LOGGER)
    if logger.level < logging.INFO:
        logger.setLevel(logging.INFO)
    return logger


@dataclass(frozen=True)
class ZkSettings:
    """Connection settings. ``auth`` holds (scheme, credential) pairs and is never printed."""

    hosts: str
    chroot: str = ""
    auth: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    sasl_options: dict[str, Any] | None = field(default=None, repr=False)
    timeout: float = 15.0
    use_ssl: bool = False

    @property
    def ensemble(self) -> str:
        """Hosts and chroot, safe to log and to put in a manifest."""
        return self.hosts + self.chroot

    @property
    def identity(self) -> str:
        """Who the auditor authenticates as, safe to log: ``digest:<user>``, ``sasl:<user>`` or ``anonymous``."""
        names = [f"{scheme}:{credential.split(':', 1)[0]}" for scheme, credential in self.auth]
        if self.sasl_options:
            options = self.sasl_options
            names.append(f"sasl:{options.get('username') or options.get('principal') or options.get('mechanism')}")
        return ", ".join(names) or "anonymous"

    def kazoo_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "hosts": self.ensemble,
            "timeout": self.timeout,
            "read_only": True,
            "use_ssl": self.use_ssl,
            "connection_retry": dict(CONNECTION_RETRY),
            "logger": kazoo_logger(),
        }
        if self.auth:
            kwargs["auth_data"] = list(self.auth)
        if self.sasl_options:
            kwargs["sasl_options"] = self.sasl_options
        return kwargs


def split_hosts_and_chroot(value: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/kafka"`` → ``("h1:2181,h2:2181", "/kafka")``."""
    value = value.strip()
    if "/" in value:
        hosts, chroot = value.split("/", 1)
        chroot = "/" + chroot.strip("/")
        return hosts, "" if chroot == "/" else chroot
    return value, ""


def parse_auth(value: str) -> tuple[str, str]:
    """``"digest:user:password"`` → ``("digest", "user:password")``; clear error otherwise."""
    scheme, sep, credential = value.partition(":")
    if not sep or not scheme or not credential:
        raise ValueError(f"{AUTH_ENV} must look like digest:USER:PASSWORD")
    return scheme, credential


def auth_from_env() -> tuple[tuple[str, str], ...]:
    value = os.environ.get(AUTH_ENV, "").strip()
    return (parse_auth(value),) if value else ()


def settings_from_connection(host: str | None, port: int | None, schema: str | None, login: str | None,
                             password: str | None, extra: dict[str, Any]) -> ZkSettings:
    """Build settings from an Airflow connection's fields (``conn_type`` ``zookeeper``).

    host may list several ``host:port`` pairs and may end in the chroot; the chroot may also be in
    extra ``chroot`` or in ``schema``. Digest auth comes from login/password (or extra ``auth``
    ``"digest:user:password"``); SASL from extra ``sasl`` (kazoo ``sasl_options``).
    """
    if not host:
        raise ValueError("the ZooKeeper connection has no host; set host to host:port[,host:port...]")
    hosts, chroot = split_hosts_and_chroot(host)
    if port and "," not in hosts and ":" not in hosts:
        hosts = f"{hosts}:{port}"
    chroot_extra = extra.get("chroot") or schema or ""
    if chroot_extra:
        chroot = "/" + str(chroot_extra).strip("/")
        chroot = "" if chroot == "/" else chroot
    auth: list[tuple[str, str]] = []
    if login:
        auth.append(("digest", f"{login}:{password or ''}"))
    if extra.get("auth"):
        auth.append(parse_auth(str(extra["auth"])))
    return ZkSettings(
        hosts=hosts,
        chroot=chroot,
        auth=tuple(auth),
        sasl_options=extra.get("sasl"),
        timeout=float(extra.get("timeout", 15.0)),
        use_ssl=str(extra.get("use_ssl", "false")).lower() in ("1", "true", "yes"),
    )
