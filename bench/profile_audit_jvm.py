"""Where a warm audit's driver JVM spends its CPU: Java Flight Recorder samples, by what the JVM was doing.

    .venv/bin/python bench/profile_audit_jvm.py [--warm 4] [--audits 5] [--topics 8 --partitions 4 --brokers 3]
                                                [--keep FILE.jfr]

A private ZooKeeper on 127.0.0.1 holds one simulated 3.x cluster (``bench/profile_audit.py``'s), snapshotted into a
warehouse. One in-process session (``local[2]``) audits it ``--warm`` times, then ``--audits`` times under the JDK's
own Flight Recorder (``jcmd JFR.start settings=profile``, stacks 2,048 frames deep: Catalyst's recursion is deeper
than the default 64). The execution samples of the driver JVM's threads are then put in one category each, the first
that applies:

* **task execution**: a Spark task runs (``Executor$TaskRunner``);
* **optimization**: Catalyst's optimizer (a job's plan, e.g. the checks' job);
* **analysis**: Catalyst's analyzer (every DataFrame built from Python is analyzed when it is built);
* **physical planning**: the physical plan and its preparation (``EnsureRequirements``, the exchanges);
* **job scheduling**: the DAG scheduler, a job's submission and its results;
* **Arrow**: the conversion of rows to Arrow batches for Python, and back;
* **parsing SQL text**: Spark's SQL parser (the select lists, expressions and joins given as text);
* **the rest of the methods Python called**: their other work (columns built, schemas converted, frames made);
* **py4j's own work**: commands read, methods found by reflection, objects tracked;
* **other**.

It prints the share of each as Markdown, the Spark methods Python called that the samples ran in (by category), and
the analyzer's and optimizer's rules seen most. The JVM's JIT and GC threads are not Java threads: they are not
sampled. Needs ``jcmd`` and ``jfr`` (the JDK's; the JRE alone has neither).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

# (category, frames that mark it), in the order they are tried: the first whose frame is on a sample's stack wins
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("task execution", ("org.apache.spark.executor.Executor$TaskRunner.run",)),
    ("optimization", ("org.apache.spark.sql.execution.QueryExecution.$anonfun$optimizedPlan",
                      "org.apache.spark.sql.catalyst.optimizer.Optimizer.")),
    ("analysis", ("org.apache.spark.sql.execution.QueryExecution.$anonfun$analyzed",
                  "org.apache.spark.sql.execution.QueryExecution.$anonfun$lazyAnalyzed",
                  "org.apache.spark.sql.catalyst.analysis.Analyzer.executeAndCheck")),
    ("physical planning", ("org.apache.spark.sql.execution.QueryExecution.$anonfun$sparkPlan",
                           "org.apache.spark.sql.execution.QueryExecution.$anonfun$executedPlan",
                           "org.apache.spark.sql.execution.QueryExecution$.prepareForExecution")),
    ("job scheduling", ("org.apache.spark.scheduler.DAGScheduler", "org.apache.spark.SparkContext.runJob",
                        "org.apache.spark.scheduler.TaskSchedulerImpl")),
    ("Arrow", ("org.apache.spark.sql.execution.arrow.", "org.apache.spark.sql.api.python.PythonSQLUtils$.readArrow")),
    ("parsing SQL text", ("org.apache.spark.sql.catalyst.parser.",)),
    ("the rest of the methods Python called", ("py4j.reflection.MethodInvoker.invoke",)),
    ("py4j's own work", ("py4j.",)),
)
_INVOKER = "py4j.reflection.MethodInvoker.invoke"
# a rule's apply: the object or inner object (``Analyzer$ResolveReferences$``) of a Catalyst or execution package
_RULE = re.compile(r"org\.apache\.spark\.sql\.(?:catalyst|execution)\.(?:[a-z0-9]+\.)*([A-Z][\w$]*?)\$?\.apply$")
_NOT_RULES = ("RuleExecutor", "TreeNode", "QueryPlan", "AnalysisHelper", "CurrentOrigin")


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def jdk_tool(name: str) -> str:
    """A JDK tool (``jcmd``, ``jfr``) of the JVM that runs Spark: $JAVA_HOME/bin, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).is_file():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: install the JDK (Debian: openjdk-17-jdk-headless) or set JAVA_HOME")
    return found


def samples(recording: Path) -> list[tuple[str, list[str]]]:
    """(thread name, stack frames innermost first) of every execution sample of the recording."""
    text = subprocess.run([jdk_tool("jfr"), "print", "--events", "jdk.ExecutionSample", "--stack-depth", "2048",
                           str(recording)], capture_output=True, text=True, check=True).stdout
    found = []
    for block in text.split("jdk.ExecutionSample {")[1:]:
        thread = re.search(r'sampledThread = "([^"]*)"', block)
        found.append((thread.group(1) if thread else "?", re.findall(r"^\s+([\w$.<>]+)\(", block, re.M)))
    return found


def category(frames: list[str]) -> str:
    for name, marks in CATEGORIES:
        if any(frame.startswith(mark) for frame in frames for mark in marks):
            return name
    return "other"


def called_from_python(frames: list[str]) -> str | None:
    """The Spark method a py4j command called, for a sample within one (None otherwise)."""
    if _INVOKER not in frames:
        return None
    for frame in reversed(frames[:frames.index(_INVOKER)]):
        if not frame.startswith(("java.", "jdk.", "sun.", "py4j.")):
            return frame
    return None


def tables(found: list[tuple[str, list[str]]], audits: int, seconds: float) -> str:
    """The Markdown tables of the samples."""
    total = len(found)
    kinds = collections.Counter(category(frames) for _, frames in found)
    lines = [f"{total:,} execution samples of the driver JVM's threads over {audits} warm audits "
             f"({seconds:.1f} s of wall, {seconds / audits:.1f} s each, under the recorder):", "",
             "| what the JVM was doing | samples | share |", "|---|---|---|"]
    lines += [f"| {name} | {count:,} | {100 * count / total:.0f} % |" for name, count in kinds.most_common()]
    calls = collections.Counter()
    for _, frames in found:
        method = called_from_python(frames)
        if method is not None:
            calls[(method.rsplit(".", 2)[-2] + "." + method.rsplit(".", 1)[-1], category(frames))] += 1
    lines += ["", "The Spark methods Python called, by what the JVM did within them (the first 15):", "",
              "| method called through py4j | within it | samples | share |", "|---|---|---|---|"]
    lines += [f"| `{method}` | {kind} | {count:,} | {100 * count / total:.0f} % |"
              for (method, kind), count in calls.most_common(15)]
    rules = collections.Counter()
    for _, frames in found:
        kind = category(frames)
        if kind in ("analysis", "optimization"):
            named = [match.group(1).rsplit("$", 1)[-1] for frame in frames if (match := _RULE.match(frame))
                     and "$anonfun" not in frame and not match.group(1).startswith(_NOT_RULES)]
            rules[(kind, named[0] if named else "(between rules: the rule executor, plan validation)")] += 1
    lines += ["", "The analyzer's and optimizer's rules the samples were in (the innermost; the first 12):",
              "",
              "| phase | rule | samples | share |", "|---|---|---|---|"]
    lines += [f"| {kind} | {rule} | {count:,} | {100 * count / total:.0f} % |"
              for (kind, rule), count in rules.most_common(12)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm", type=int, default=4, help="audits before the recording (the JIT's warm-up)")
    parser.add_argument("--audits", type=int, default=5, help="audits recorded")
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="keep the recording here")
    args = parser.parse_args()
    jcmd = jdk_tool("jcmd")
    jdk_tool("jfr")

    from bench_audit_counts import fresh_warehouse, snapshotted

    from kafka_zk_audit.audit.job import run_audit
    from kafka_zk_audit.audit.session import get_spark
    from kafka_zk_audit.contract.warehouse import Warehouse

    work, warehouse, snapshot_id = snapshotted("jvm-profile", args)
    say(f"snapshot {snapshot_id}; work folder {work}")
    spark = get_spark("bench-profile-audit-jvm", master="local[2]")
    pid = str(spark._jvm.java.lang.ProcessHandle.current().pid())
    snapshots = Path(warehouse.root) / "snapshots"

    def audit(label: str) -> float:
        began = time.monotonic()
        run_audit(spark, Warehouse(fresh_warehouse(work, snapshots, label)), [snapshot_id], None)
        return time.monotonic() - began

    for attempt in range(args.warm):
        say(f"warm-up audit {attempt + 1} of {args.warm}: {audit(f'warm-{attempt}'):.1f} s")
    recording = args.keep or Path(tempfile.mkdtemp(prefix="kafka-zk-audit-jfr-")) / "audits.jfr"
    subprocess.run([jcmd, pid, "JFR.configure", "stackdepth=2048"], check=True, capture_output=True)
    subprocess.run([jcmd, pid, "JFR.start", "name=audits", "settings=profile"], check=True, capture_output=True)
    began = time.monotonic()
    for attempt in range(args.audits):
        say(f"recorded audit {attempt + 1} of {args.audits}: {audit(f'recorded-{attempt}'):.1f} s")
    seconds = time.monotonic() - began
    subprocess.run([jcmd, pid, "JFR.dump", "name=audits", f"filename={recording}"], check=True, capture_output=True)
    subprocess.run([jcmd, pid, "JFR.stop", "name=audits"], check=True, capture_output=True)
    spark.stop()
    say(f"recording {recording}")
    print(tables(samples(recording), args.audits, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
