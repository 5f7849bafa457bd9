"""The CPU clock the benches read around a warm in-process audit: this process and its session's driver JVM."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def driver_cpu_clock(spark: Any) -> Callable[[], float]:
    """A clock of the CPU seconds so far of this process and of the driver JVM of ``spark``, an in-process session
    (read from /proc)."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + time.process_time()

    return cpu
