"""Where the test suite's CPU goes: every process of a pytest run, by kind and by the test module that started it.

    .venv/bin/python bench/profile_suite_cpu.py                 # the whole suite as `make test` runs it (-n 3)
    .venv/bin/python bench/profile_suite_cpu.py -- -n 0 tests/audit/checks

The suite is CPU-bound on two cores: its wall time follows the CPU seconds of all its processes, which pytest's
durations do not show (a fixture's spark-submit app or Airflow scheduler is another process). A sampler reads
/proc every half second while pytest runs:

- each process's CPU (user + system), attributed to the test module in its ``PYTEST_CURRENT_TEST`` (the test that
  started it, inherited from the pytest worker) and to its kind (a Spark app, a standalone executor, the
  in-process Spark session's JVM, an Airflow service, ZooKeeper, ...);
- the threads of every JVM, grouped (the JIT's compilers, the garbage collector, Spark's tasks, the py4j threads
  that plan what Python asks);
- and, through this module loaded into pytest as a plugin, each pytest process's own CPU by the test module it ran
  (setup, call and teardown of each test, module fixtures included).

A process that ends between two samples loses its last half second. Runs in the checkout's environment (``make
test``'s variables).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cpu_clock import stat_cpu

REPO = Path(__file__).resolve().parents[1]
# (kind, what the command line holds), first match wins; JVMs are told apart by their main class
JVM_KINDS = (
    ("Spark app (spark-submit)", re.compile(r"SparkSubmit .*?(?:spark_apps/|kafka_zk_audit/spark_apps/)(\w+)\.py")),
    ("Spark Connect server", re.compile(r"SparkConnectServer|connect\.service")),
    ("in-process Spark session (pytest worker)", re.compile(r"SparkSubmit .*pyspark-shell")),
    ("Spark standalone executor", re.compile(r"CoarseGrainedExecutorBackend")),
    ("Spark standalone master / worker", re.compile(r"deploy\.(?:master\.Master|worker\.Worker)")),
    ("ZooKeeper server", re.compile(r"QuorumPeerMain|ZooKeeperServerMain")),
)
PYTHON_KINDS = (
    ("pytest worker (its own Python)", re.compile(r"exec\(eval\(sys\.stdin")),
    ("pytest (its own Python)", re.compile(r"-m pytest")),
    ("Spark app's Python driver", re.compile(r"spark_apps/\w+\.py")),
    ("PySpark's Python workers", re.compile(r"pyspark\.daemon|pyspark\.worker")),
    ("airflow dags test", re.compile(r"dags test")),
    ("Airflow service (scheduler, API, triggerer, DAG processor)",
     re.compile(r"airflow (?:scheduler|api-server|triggerer|dag-processor|serve-logs)")),
    ("Airflow task process", re.compile(r"airflow worker")),
    ("Airflow, other commands (db migrate, connections, ...)", re.compile(r"\bairflow\b|airflow\.command_line")),
    ("the command line (kafka-zk-audit)", re.compile(r"bin/kafka-zk-audit |kafka_zk_audit\.cli")),
    ("pip", re.compile(r"\bpip\b")),
    ("Chromium", re.compile(r"chrom")),
)
# a process one module starts for the modules after it too: the ``spark`` session fixture's JVM (tests/conftest.py)
SHARED_KINDS = ("in-process Spark session (pytest worker)",)
OWN_CPU_ENV = "PROFILE_SUITE_CPU_DIR"  # where each pytest process, with this module as plugin, writes its own CPU
THREAD_GROUPS = (("C2 JIT compiler", "C2 Compiler"), ("C1 JIT compiler", "C1 Compiler"), ("garbage collector", "G1"),
                 ("garbage collector", "GC Thread"), ("Spark tasks", "Executor task"),
                 ("py4j threads (planning what Python asks)", "Thread-"))


@dataclass
class Process:
    pid: str
    parent: str
    cmd: str
    test_module: str
    in_run: bool  # it inherited the run's environment (descendants whose title rewrote it are found by parent)
    cpu: float = 0.0
    threads: dict[str, tuple[str, float]] = field(default_factory=dict)  # a JVM's: thread id -> (name, CPU)


def _cmdline(pid: str) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()


def _environment(pid: str) -> tuple[str, bool]:
    """The test module in the process's ``PYTEST_CURRENT_TEST`` (or ""), and whether it has the run's variable."""
    module, in_run = "", False
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if entry.startswith(b"PYTEST_CURRENT_TEST="):
            module = entry.split(b"=", 1)[1].decode(errors="replace").split("::", 1)[0]
        in_run = in_run or entry.startswith(OWN_CPU_ENV.encode() + b"=")
    return module, in_run


class Sampler(threading.Thread):
    """Samples every process under /proc each ``interval`` seconds until stopped."""

    def __init__(self, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.interval, self.stopped, self.seen = interval, threading.Event(), {}

    def run(self) -> None:
        me = str(os.getpid())
        while not self.stopped.is_set():
            for pid in os.listdir("/proc"):
                if pid.isdigit() and pid != me:
                    self._sample(pid)
            self.stopped.wait(self.interval)

    def _sample(self, pid: str) -> None:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            key = (pid, fields[19])  # pid and start time: a pid can be reused
            process = self.seen.get(key)
            if process is None:
                process = self.seen[key] = Process(pid, fields[1], _cmdline(pid), *_environment(pid))
            elif process.cmd.startswith(("bash ", "/bin/sh ")) or "spark-class" in process.cmd:
                process.cmd = _cmdline(pid)  # spark-class execs the JVM in the same process
            process.cpu = stat_cpu(stat)
            if "java" in process.cmd.split(" ", 1)[0]:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                    process.threads[tid] = (text[text.index("(") + 1:text.rindex(")")], stat_cpu(text))
        except (OSError, IndexError, ValueError):
            pass  # ended meanwhile


def of_the_run(seen: list[Process]) -> list[Process]:
    """The processes of the pytest run: those with its environment variable and their descendants (an Airflow task
    process rewrites its title over its environment), not the machine's others."""
    pids = {process.pid for process in seen if process.in_run}
    while grown := {process.pid for process in seen if process.parent in pids} - pids:
        pids |= grown
    return [process for process in seen if process.pid in pids]


def kind_of(cmd: str) -> str:
    head = cmd.split(" ", 1)[0]
    if head.endswith("java"):
        for kind, pattern in JVM_KINDS:
            if match := pattern.search(cmd):
                return f"{kind}: {match.group(1)}" if match.groups() else kind
        return "other JVM"
    for kind, pattern in PYTHON_KINDS:
        if pattern.search(cmd):
            return kind
    return "other: " + head.rsplit("/", 1)[-1][:30]


_own_cpu: collections.Counter = collections.Counter()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """(As a plugin) count this process's CPU while a test runs, its fixtures' setup and teardown included."""
    began = time.process_time()
    try:
        return (yield)
    finally:
        _own_cpu[item.nodeid.split("::", 1)[0]] += time.process_time() - began


def pytest_sessionfinish(session: pytest.Session) -> None:
    """(As a plugin) write this process's CPU by test module, and the rest of it, for the report."""
    folder = os.environ.get(OWN_CPU_ENV)
    if folder:
        rest = time.process_time() - sum(_own_cpu.values())
        Path(folder, f"{os.getpid()}.json").write_text(json.dumps({**_own_cpu, "": rest}))


def thread_group(name: str) -> str:
    return next((group for group, prefix in THREAD_GROUPS if name.startswith(prefix)), "other JVM threads")


def table(title: str, rows: collections.Counter, total: float, first: int = 25) -> str:
    lines = [f"| {title} | CPU-s | share |", "|---|---|---|"]
    lines += [f"| {name} | {cpu:,.1f} | {100 * cpu / total:.0f} % |" for name, cpu in rows.most_common(first)
              if cpu >= 0.5]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: -n 3, the suite)")
    args = parser.parse_args()
    pytest_args = args.pytest_args or ["-n", "3"]
    with tempfile.TemporaryDirectory(prefix="kafka-zk-audit-suite-cpu-") as own_cpu:
        return report(pytest_args, Path(own_cpu))


def report(pytest_args: list[str], own_cpu: Path) -> int:
    """Run pytest with the sampler beside it and the plugin in it (reports in ``own_cpu``); print the tables."""
    env = {**os.environ, "GX_ANALYTICS_ENABLED": "false", "SPARK_LOCAL_IP": "127.0.0.1",
           "KAFKA_ZK_AUDIT_WITH_CHROMIUM": "1", "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH")])),
           OWN_CPU_ENV: str(own_cpu)}
    sampler = Sampler()
    sampler.start()
    started = time.monotonic()
    print(f"[{time.strftime('%H:%M:%S')}] pytest {' '.join(pytest_args)} (sampling every process's CPU)",
          file=sys.stderr, flush=True)
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "profile_suite_cpu",
                            *pytest_args],
                           cwd=REPO, env=env)
    wall = time.monotonic() - started
    sampler.stopped.set()
    sampler.join()
    processes = of_the_run(list(sampler.seen.values()))
    total = sum(p.cpu for p in processes)
    kinds, modules, threads = collections.Counter(), collections.Counter(), collections.Counter()
    own = collections.Counter()  # the pytest processes' own CPU, by the module they ran
    for written in own_cpu.glob("*.json"):
        own.update({module or "(pytest itself, between tests)": cpu
                    for module, cpu in json.loads(written.read_text()).items()})
    for process in processes:
        kind = kind_of(process.cmd)
        kinds[kind] += process.cpu
        if kind.startswith("pytest"):
            continue  # by module below, from the processes' own reports
        if kind in SHARED_KINDS:  # started by the first module that needed it, it serves many
            modules[f"({kind}, shared)"] += process.cpu
        else:
            modules[process.test_module or "(no test: started outside one)"] += process.cpu
        for name, cpu in process.threads.values():
            threads[(kind.split(":")[0], thread_group(name))] += cpu
    print(f"\npytest exited {code} after {wall:.1f} s; {total:,.0f} CPU-seconds sampled over {len(processes)} "
          f"processes ({total / wall:.2f} cores busy on average of {os.cpu_count()})\n")
    print(table("process kind", kinds, total), "\n")
    modules.update(own)
    print(table("test module (the processes it started, and the pytest process's own CPU while it ran)", modules,
                total), "\n")
    print(table("test module: the pytest process's own CPU while it ran", own, total, first=15), "\n")
    print(table("JVM threads (kind of JVM: threads)", collections.Counter(
        {f"{jvm}: {group}": cpu for (jvm, group), cpu in threads.items()}), total))
    return code


if __name__ == "__main__":
    sys.exit(main())
