"""Count the Spark work a stretch of driver code does: DataFrames built, analyses, Spark jobs and JVM calls.

    with SparkCounter(spark) as counted:
        run_audit(spark, warehouse, snapshot_id, None)
    counted.counts  # {"dataframes": 612, "analyses": 1480, "jobs": 9, "jvm_calls": 20512, "rule_seconds": 4.1}

* **dataframes**: PySpark ``DataFrame`` objects created in this process (each wraps a new JVM Dataset, which
  Catalyst analyses when it is created), each once: a frame made through ``pyspark.sql.DataFrame(jdf, session)``
  (``createDataFrame`` from Arrow, ``spark.sql``) has its initializer run twice;
* **analyses**: the runs of Catalyst's analyzer in the driver JVM (its ``LookupFunctions`` rule runs once per
  analysis), from ``RuleExecutor``'s metrics; ``rule_seconds`` is the time of every analyzer and optimizer rule;
* **jobs**: the Spark jobs the session's status tracker saw start; **stages**: the stages of those jobs;
* **jvm_calls**: py4j commands sent from this process to the driver JVM (the counting's own few included).

The counters patch PySpark's classes for the life of the context and put them back after. The package never
imports this module: the benchmark (``bench/bench_audit_counts.py``) and a test (a bound on the DataFrames an audit
builds) do.
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any

ANALYSIS_RULE = "org.apache.spark.sql.catalyst.analysis.Analyzer$LookupFunctions"
_RULE_LINE = re.compile(r"^(\S+)\s+\d+ / \d+\s+\d+ / (\d+)\s*$")


def _classic_dataframe() -> type:
    from pyspark.sql.classic.dataframe import DataFrame

    return DataFrame


def _client_connection() -> type:
    import py4j.clientserver

    return py4j.clientserver.ClientServerConnection


def rule_runs(spark: Any, rule: str = ANALYSIS_RULE) -> int:
    """Total runs of one Catalyst rule so far in ``spark``'s driver JVM (0 when it never ran)."""
    dump = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.dumpTimeSpent()
    for line in dump.splitlines():
        match = _RULE_LINE.match(line.strip())
        if match and match.group(1) == rule:
            return int(match.group(2))
    return 0


def rule_nanos(spark: Any) -> int:
    """Nanoseconds spent so far in every analyzer and optimizer rule of ``spark``'s driver JVM."""
    return int(spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.getCurrentMetrics().time())


class SparkCounter:
    """A context counting the DataFrames, analyses, Spark jobs and stages and JVM calls of the code it wraps."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.counts: dict[str, float] = {}
        self._dataframes = 0
        self._calls = 0
        self._patched: list[tuple[type, str, Any]] = []
        self._start: dict[str, float] = {}
        self._first_job = 0

    def _job_ids(self) -> list[int]:
        """The ids of the jobs the session's status tracker holds (its most recent ones: it keeps a bounded number)."""
        return list(self.spark.sparkContext._jsc.statusTracker().getJobIdsForGroup(None))

    def _jobs_since(self, first: int) -> tuple[int, int]:
        """The jobs numbered ``first`` or later (job ids count up from 0), and their stages."""
        tracker = self.spark.sparkContext._jsc.statusTracker()
        infos = [tracker.getJobInfo(job) for job in self._job_ids() if job >= first]
        return len(infos), sum(len(list(info.stageIds())) for info in infos if info is not None)

    def _patch(self) -> None:
        frame_class, connection = _classic_dataframe(), _client_connection()
        frame_init, send = frame_class.__init__, connection.send_command
        counter = self

        def counted_init(frame: Any, *args: Any, **kwargs: Any) -> None:
            if "_jdf" not in vars(frame):  # pyspark.sql.DataFrame(jdf, session) initializes its frame twice
                counter._dataframes += 1
            frame_init(frame, *args, **kwargs)

        def counted_send(conn: Any, command: str, *args: Any, **kwargs: Any) -> Any:
            counter._calls += 1
            return send(conn, command, *args, **kwargs)

        self._patched = [(frame_class, "__init__", frame_init), (connection, "send_command", send)]
        frame_class.__init__ = counted_init  # type: ignore[method-assign]
        connection.send_command = counted_send  # type: ignore[method-assign]

    def _read(self) -> dict[str, float]:
        return {"dataframes": self._dataframes, "analyses": rule_runs(self.spark), "jvm_calls": self._calls,
                "rule_seconds": rule_nanos(self.spark) / 1e9}

    def __enter__(self) -> SparkCounter:
        self._first_job = max(self._job_ids(), default=-1) + 1  # before the patch: not counted as JVM calls
        self._patch()
        self._start = self._read()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        end = self._read()
        for owner, name, original in self._patched:
            setattr(owner, name, original)
        self._patched = []
        self.counts = {key: end[key] - self._start[key] for key in end}
        self.counts["jobs"], self.counts["stages"] = self._jobs_since(self._first_job)
        self.counts["rule_seconds"] = round(self.counts["rule_seconds"], 3)
