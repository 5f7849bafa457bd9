"""How a snapshot walks the tree: ``SnapshotOptions``, the one definition of every snapshot option.

Its fields are the walk's parameters, with their defaults and their checks; a manifest records them all
(``options``). ``SETTINGS`` names the fields the settings file's ``snapshot`` section sets, with the stricter
bounds a user's value must keep there: ``contract.settings`` builds that section's model from it, and the
snapshot stage walks with the options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

READ_MODES = ("auto", "multi", "single")
MIB = 1024 * 1024
# Requests in flight at most when multiRead is not available (one read each) and when it is (batch_ops reads each).
SINGLE_IN_FLIGHT = 2000
MULTI_IN_FLIGHT = 50


@dataclass(frozen=True)
class SnapshotOptions:
    """How to walk. Prefixes are paths relative to the chroot, e.g. ``/brokers``.

    Load on the ensemble: at most ``max_reads_in_flight`` reads are outstanding, in at most
    ``max_in_flight`` requests (0: 50 multiRead requests of ``batch_ops`` reads, or 2,000 single-op
    requests) whose responses are estimated at no more than ``max_bytes_in_flight`` bytes, and at most
    ``reads_per_second`` reads start per second (default 20,000; 0: no limit). Before these caps the walk kept up to
    50 × 1,000 reads in flight with no byte cap. Secrets are fingerprinted unless ``copy_secrets``.
    ``parallel_connections`` > 1 walks disjoint subtrees over that many connections in worker processes; the caps
    above then hold for the whole snapshot (each worker gets its share).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ("/zookeeper",)
    read_mode: str = "auto"
    batch_ops: int = 1000
    max_in_flight: int = 0
    max_reads_in_flight: int = 10_000
    max_bytes_in_flight: int = 32 * MIB
    reads_per_second: float = 20_000.0
    copy_secrets: bool = False
    max_reconnects: int = 10
    reconnect_timeout_s: float = 60.0
    row_group_rows: int = 50_000
    file_rows: int = 1_000_000
    progress_every_s: float = 5.0
    request_timeout_s: float = 60.0
    parallel_connections: int = 1

    def __post_init__(self) -> None:
        if self.read_mode not in READ_MODES:
            raise ValueError(f"read_mode must be one of {READ_MODES}, not {self.read_mode!r}")
        for name in ("batch_ops", "max_reads_in_flight", "max_bytes_in_flight", "parallel_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("max_in_flight", "reads_per_second", "max_reconnects"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.reconnect_timeout_s <= 0 or self.request_timeout_s <= 0:
            raise ValueError("reconnect_timeout_s and request_timeout_s must be positive")

    @classmethod
    def from_settings(cls, section: Any) -> SnapshotOptions:
        """The options a settings file's ``snapshot`` section sets (``AuditConfig.snapshot``), the rest at their
        defaults."""
        return cls(**section.model_dump())

    def in_flight(self, mode: str) -> int:
        """Requests in flight at most (before the read and byte caps)."""
        return self.max_in_flight or (MULTI_IN_FLIGHT if mode == "multi" else SINGLE_IN_FLIGHT)

    def wants(self, path: str) -> bool:
        """Record this znode?"""
        if any(_under(path, prefix) for prefix in self.exclude):
            return False
        return not self.include or any(_under(path, prefix) for prefix in self.include)

    def descends(self, path: str) -> bool:
        """Walk this znode's children? (also ancestors of an include prefix)."""
        if any(_under(path, prefix) for prefix in self.exclude):
            return False
        return not self.include or any(_under(path, p) or _under(p, path) for p in self.include)

    def settled_below(self, path: str) -> bool:
        """Is every znode below the wanted ``path`` wanted too (no prefix lies strictly under it)?

        Then the walk records and descends its whole subtree without asking ``wants`` per znode.
        """
        inner = "/" if path == "/" else path + "/"
        return self.wants(path) and not any(
            p.rstrip("/").startswith(inner) for p in (*self.exclude, *self.include) if p.rstrip("/") != path
        )


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/") or "/"
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


# The options the settings file's ``snapshot`` section sets, in the order the packaged defaults list them, each with
# the bounds a user's value must keep there (pydantic's ``Field`` arguments; stricter than ``__post_init__``'s, which
# also admit a parallel walk's per-worker shares). Their types and defaults are the fields' above.
SETTINGS: dict[str, dict[str, float]] = {
    "max_reads_in_flight": {"ge": 1},
    "max_bytes_in_flight": {"ge": 1024},
    "reads_per_second": {"ge": 0},
    "max_reconnects": {"ge": 0},
    "reconnect_timeout_s": {"gt": 0},
    "copy_secrets": {},
    "parallel_connections": {"ge": 1, "le": 64},
}
