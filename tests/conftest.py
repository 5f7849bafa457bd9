"""Session-wide real parts: one ZooKeeper server and one Spark session for the whole test run, and the shared
whole-DAG runs (tests/system/fleet_run.py, tests/system/scheduled_run.py) every folder's tests may assert on."""

from __future__ import annotations

import ast
import functools
import itertools
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from kazoo.client import KazooClient

from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port
from tests.system.fleet_run import system  # noqa: F401 (the shared system run: a session fixture)
from tests.system.scheduled_run import installed, scheduled  # noqa: F401 (the scheduler's run: session fixtures)
from tests.zk_files import zk_files  # noqa: F401 (ZooKeeper's own files: tests/snapshot/files, tests/history)

REPO = Path(__file__).resolve().parents[1]
_chroot_counter = itertools.count()


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real standalone ZooKeeper on 127.0.0.1 and a free port, stopped at the end."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), port=free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def zk_chroot(zk_server: ZooKeeperServer, request: pytest.FixtureRequest) -> str:
    """A fresh chroot (e.g. ``/t007_test_name``) so tests sharing the server never see each other."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    chroot = f"/t{next(_chroot_counter):03d}_{name}"
    zk_server.ensure_chroot(chroot)
    return chroot


@pytest.fixture
def zk_client(zk_server: ZooKeeperServer, zk_chroot: str) -> Iterator[KazooClient]:
    """A kazoo client rooted at the test's chroot, for writing fixtures."""
    client = KazooClient(hosts=zk_server.hosts + zk_chroot)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="session")
def spark():
    """The one in-process Spark session for check and normalizer function tests."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers (mapInArrow) import the package
    from kafka_zk_audit.audit.session import get_spark, size_spark_to

    # one session hosts every in-process Spark test of the worker, with what their modules keep cached: more room
    # than the default 1 GB driver (a batch audit late in the run once found no memory left for an aggregation)
    # it hosts the worker's many in-process audits: the full tiered JIT (audit.session.LONG_LIVED_DRIVER_JAVA_OPTIONS)
    session = get_spark("kafka-zk-audit-tests", master="local[2]", shuffle_partitions=2, driver_memory="2g",
                        long_lived=True)
    size_spark_to(session, 0)  # the tests' frames are small: the settings the audit uses for a small batch
    yield session
    session.stop()
    # py4j closes its last connections when the interpreter exits, after pytest closed the stream its INFO line
    # would go to ("--- Logging error ---" at the end of the run)
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def chromium_ok() -> str:
    """Debian's headless Chromium (installed when missing); a failure to get one fails the test with its reason."""
    from kafka_zk_audit_testing.browser import ensure_chromium

    try:
        return ensure_chromium()
    except Exception as exc:  # any failure to get a browser fails the test, with its reason
        pytest.fail(str(exc))


HISTORY_CHROOT = "/kafka"


@pytest.fixture(scope="session")
def history_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A private ZooKeeper's data dir after kafka_zk_audit_testing.history_scenario's writes under /kafka (the server
    stopped), and the scenario: the oracle of the history tests (tests/cli, the fleet's files cluster)."""
    from kafka_zk_audit_testing.history_scenario import run_scenario

    server = ZooKeeperServer(tmp_path_factory.mktemp("history-zk"), port=free_port()).start()
    try:
        server.ensure_chroot(HISTORY_CHROOT)
        sim, scenario = run_scenario(server.hosts + HISTORY_CHROOT)
        sim.close()
    finally:
        server.stop()
    return server.data_dir / "data", scenario


@pytest.fixture(scope="session")
def zookeeper_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ZooKeeper's dataDir after a small Kafka cluster was written into it, with several snapshots and logs
    (snapCount 10), the server stopped: the files the files sources fetch (tests/snapshot/files, tests/airflow)."""
    from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator

    server = ZooKeeperServer(tmp_path_factory.mktemp("zk-files"), port=free_port(), extra_config=("snapCount=10",))
    server.start()
    try:
        sim = Simulator(hosts=server.hosts)
        try:
            sim.write(ClusterSpec(era="2.x", brokers=3, racks=1, topics=6, partitions=6, replication_factor=2,
                                  groups=2, consumers_per_group=2, threads_per_consumer=1, seed=3))
        finally:
            sim.close()
    finally:
        server.stop()
    data_dir = server.data_dir / "data"
    files = sorted(p.name for p in (data_dir / "version-2").iterdir())
    assert sum(n.startswith("snapshot.") for n in files) >= 3 and sum(n.startswith("log.") for n in files) >= 3, files
    return data_dir


# Under pytest-xdist (``make test`` runs ``-n 3``) the tests are sent to the workers module by module, so a module's
# fixtures are built once (as with ``--dist loadscope``), and the modules that assert on one shared whole-DAG run go
# together, so each run is made once. (``--dist loadgroup`` would do it with marks, but pytest-xdist 3.8 cannot set
# the group on pytest 9's node ids.) The tests of a shared run are all marked ``dag``.
SHARED_RUNS = {"system": "system-run", "scheduled": "scheduler-run", "installed": "scheduler-run"}
# The modules that use the in-process Spark session (the ``spark`` fixture) go together too: to one worker, so one
# JVM hosts them all and warms up once. Spread over three workers, three JVMs each compiled the same planner code, on
# two cores: those modules took 805 CPU-s and 422 s against 485 CPU-s and 351 s in one session (-n 3 against -n 0);
# the whole suite, one after the other in the same hour: the in-process JVMs 475 -> 338 CPU-s, 1,504 -> 1,316
# machine CPU-s, 12 min 24 s -> 10 min 45 s.
IN_PROCESS_SPARK = "in-process-spark"
UNITS = ("system-run", "scheduler-run", IN_PROCESS_SPARK)  # the first three units of work: one per worker
# Then the modules whose module fixtures run a Spark app, a whole command or a JVM of their own, the longest first
# (their share of a run on three workers, slowest first), and after them the short ones in the collection's order:
# a worker that frees up takes the longest work left, so the run ends on short modules, not on one started last.
LONGEST_FIRST = (
    "tests/audit/test_reaudit.py",  # the reaudit app over three snapshots in two batches
    "tests/cli/test_readiness.py",  # readiness: snapshot and spark-submit audit through the console script
    "tests/cli/test_subcommands.py",  # snapshot and spark-submit audit through the console script
    "tests/cli/test_history.py",  # the history app through the console script
    "tests/report/test_pages.py",
    "tests/airflow/test_dag.py",
    "tests/airflow/test_audit_spark_submit_operator.py",
    "tests/airflow/test_metadata_change_trigger.py",
    "tests/snapshot/test_parallel.py",
    "tests/snapshot/test_walker.py",
    "tests/snapshot/kraft/test_real_logs.py",
    "tests/snapshot/test_faults.py",
    "tests/snapshot/files/test_cli.py",
)


@functools.cache
def _tree(path: Path) -> ast.Module | None:
    """A test file's syntax tree (None when there is no such file), parsed once: the xdist controller has no
    collection, so the units of work are read from the sources."""
    return ast.parse(path.read_text()) if path.is_file() else None


class _Definitions(NamedTuple):
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef]
    imports: list[ast.ImportFrom]


@functools.cache
def _definitions(tree: ast.Module) -> _Definitions:
    """A module's functions and ``from`` imports, at any depth: one walk of its tree."""
    nodes = list(ast.walk(tree))
    return _Definitions([node for node in nodes if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))],
                        [node for node in nodes if isinstance(node, ast.ImportFrom)])


def _arguments(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {arg.arg for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}


@functools.cache
def _parameters(module: str) -> frozenset[str]:
    """The parameter names of the functions of a test module: its tests' and fixtures' fixtures (read once per
    module: the collection asks for each of its tests, the xdist controller for each test id)."""
    tree = _tree(REPO / module)
    if tree is None:
        return frozenset()
    return frozenset(name for node in _definitions(tree).functions for name in _arguments(node))


def shared_run_of(module: str) -> str | None:
    """The shared run a test module asserts on: the run of a session fixture (``SHARED_RUNS``) that one of its tests
    or fixtures takes as a parameter."""
    runs = sorted({SHARED_RUNS[name] for name in _parameters(module) if name in SHARED_RUNS})
    return runs[0] if runs else None


@functools.cache
def _fixtures(tree: ast.Module) -> dict[str, set[str]]:
    """The fixtures a module defines, with the fixtures each takes (read once per file: a conftest's for every module
    below it)."""
    return {node.name: _arguments(node) for node in _definitions(tree).functions
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)}


@functools.cache
def spark_fixtures(module: str, _importers: frozenset[str] = frozenset()) -> frozenset[str]:
    """The fixtures a test module sees that use the in-process session: ``spark``, and those of its own, of the
    conftest files above it and of the test modules it imports from that take it, directly or through another."""
    path = REPO / module
    tree = _tree(path)
    if tree is None or module in _importers:  # test modules may import from each other
        return frozenset({"spark"})
    found = {"spark"}
    for node in _definitions(tree).imports:  # fixtures imported from other test modules
        if (node.module or "").startswith("tests."):
            source = node.module.replace(".", "/") + ".py"
            found |= {alias.name for alias in node.names} & spark_fixtures(source, _importers | {module})
    fixtures = _fixtures(tree)
    for conftest in (folder / "conftest.py" for folder in path.parents if REPO in folder.parents):
        if conftest != path and (conftest_tree := _tree(conftest)) is not None:
            fixtures = {**_fixtures(conftest_tree), **fixtures}
    while grown := {name for name, params in fixtures.items() if params & found} - found:
        found |= grown
    return frozenset(found)


@functools.cache
def unit_of(module: str) -> str:
    """The xdist unit of work a module belongs to: its shared run, the in-process Spark modules' unit, or itself."""
    return shared_run_of(module) or (IN_PROCESS_SPARK if _parameters(module) & spark_fixtures(module) else module)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the shared runs' modules first, then the in-process Spark modules: each of three xdist workers starts with one;
    # then the longest other modules
    order = {name: rank for rank, name in enumerate((*UNITS, *LONGEST_FIRST))}
    items.sort(key=lambda item: order.get(unit_of(item.nodeid.split("::", 1)[0]), len(order)))
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if "spark" in getattr(item, "fixturenames", ()) and unit_of(module) not in (*SHARED_RUNS.values(),
                                                                                   IN_PROCESS_SPARK):
            raise pytest.UsageError(f"{module} uses the in-process Spark session through a fixture this file does "
                                    "not see: take it (or a fixture that uses it) as a parameter in the module, so "
                                    "that pytest-xdist sends it to the worker of the in-process Spark modules "
                                    "(tests/conftest.py)")
        shared = sorted({SHARED_RUNS[name] for name in getattr(item, "fixturenames", ()) if name in SHARED_RUNS})
        if not shared:
            continue
        item.add_marker(pytest.mark.dag)  # `make unit` (-m "not dag") leaves them out
        if shared_run_of(module) != shared[0]:
            raise pytest.UsageError(f"{module} asserts on the shared {shared[0]} through a fixture of another file: "
                                    "take that run's fixture as a parameter of a test or fixture in the module, so "
                                    "that pytest-xdist sends it where that run is made (tests/conftest.py)")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Modules (the shared runs' modules together, the in-process Spark modules together) as the units of work of
    the xdist workers."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the collection's order: the shared runs first, one per worker

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid.split("::", 1)[0])

    return UnitScheduling(config, log)
