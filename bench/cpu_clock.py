"""The CPU clock the benches read around a warm in-process audit: this process and its session's driver JVM."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def stat_cpu(stat: str, *, children: bool = False) -> float:
    """CPU seconds (user + system) in the text of a ``/proc/<pid>[/task/<tid>]/stat`` file; with ``children``, those
    of its finished, waited-for children too."""
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces and parentheses
    return sum(int(value) for value in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def driver_cpu_clock(spark: Any) -> Callable[[], float]:
    """A clock of the CPU seconds so far of this process and of the driver JVM of ``spark``, an in-process session
    (read from /proc)."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()

    def cpu() -> float:
        return stat_cpu(Path(f"/proc/{pid}/stat").read_text()) + time.process_time()

    return cpu
