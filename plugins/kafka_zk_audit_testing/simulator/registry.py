"""Where plants register on the simulator: the ``Planted`` record, the planters by check id and what the simulator
asks of them while time passes.

A leaf of the simulator: it imports none of its modules. The plant modules (``partition_plants``,
``cluster_plants``, ``group_plants``) register their planters here when they are imported, which the package's
``__init__`` does through ``plants``; ``cluster.Simulator`` looks them up here and never imports a plant module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Planted:
    """Where a plant put its problem: the subject and ``path`` (relative to the chroot) of the finding
    the audit reports for it. ``broker_id`` is set only where the finding's subject is a broker."""

    check_id: str
    topic: str | None = None
    partition: int | None = None
    group_id: str | None = None
    broker_id: int | None = None
    path: str = ""
    implied: tuple[str, ...] = ()


# A planter takes the simulator (``cluster.Simulator``, typed loosely so that this module imports nothing of the
# simulator) and the plant's name, and says where it planted.
Planter = Callable[[Any, str], Planted]
# Called by ``Simulator.advance()`` with the simulator and the step's batch writer, after each step's writes.
AdvanceHook = Callable[[Any, Any], None]


class Planters(dict[str, Planter]):
    """Planters by name: ``@planters.register(name, …)`` files a function under each of its names;
    ``holds_controller=True`` marks plants that own /controller (while one is planted, time passing does not move
    the controller)."""

    def __init__(self) -> None:
        super().__init__()
        self.controller_holders: set[str] = set()

    def register(self, *names: str, holds_controller: bool = False) -> Callable[[Planter], Planter]:
        def add(function: Planter) -> Planter:
            for name in names:
                self[name] = function
                if holds_controller:
                    self.controller_holders.add(name)
            return function

        return add


PLANTERS = Planters()  # the check catalogue's plants, filled by the plant modules as they are imported
ADVANCE_HOOKS: list[AdvanceHook] = []


def on_advance(hook: AdvanceHook) -> AdvanceHook:
    """Register ``hook`` to run at every step of ``Simulator.advance()``."""
    ADVANCE_HOOKS.append(hook)
    return hook
