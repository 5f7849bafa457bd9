"""The tree reads as the pipeline: imports point one way, each library stays in its stage, tests mirror the code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
PACKAGE = PLUGINS / "kafka_zk_audit"
TESTS = Path(__file__).resolve().parent

# A stage may import its own modules and the stages of a lower rank only.
# history/ reads the files source of snapshot/ and audits change history with audit/'s parsers: it sits above both.
RANK = {"contract": 0, "snapshot": 1, "audit": 1, "gate": 1, "report": 1, "history": 2, "airflow": 3, "cli": 3,
        "spark_apps": 4, "expectations": 4}
# Where each third-party library may be imported (by stage).
LIBRARY_STAGES = {
    "airflow": {"airflow"},
    "great_expectations_provider": {"airflow"},
    "great_expectations": {"gate"},
    "kazoo": {"snapshot", "airflow", "cli"},
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _stage(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            # relative imports stay inside their own package
            package = path.parent
            for _ in range(node.level - 1):
                package = package.parent
            names.append(".".join(package.relative_to(PLUGINS).parts + tuple(filter(None, [node.module]))))
    return names


def test_the_runtime_package_never_imports_the_testing_package():
    offenders = [f"{p.relative_to(PLUGINS)}: {name}" for p in _modules() for name in _imports(p)
                 if name.split(".")[0] == "kafka_zk_audit_testing"]
    assert offenders == []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_pipeline(path: Path):
    stage = _stage(path)
    if stage is None:
        return
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] != "kafka_zk_audit" or len(parts) < 2:
            continue
        target = parts[1]
        assert target == stage or RANK[target] < RANK[stage], (
            f"{path.relative_to(PLUGINS)} ({stage}) imports {name} ({target}): imports must point down the pipeline"
        )


@pytest.mark.parametrize("library", sorted(LIBRARY_STAGES))
def test_each_library_is_imported_only_by_its_stages(library: str):
    where = {_stage(p) for p in _modules() for name in _imports(p) if name.split(".")[0] == library}
    outside = sorted(map(str, where - LIBRARY_STAGES[library]))
    assert not outside, f"{library} imported in {outside}"


def test_every_folder_opens_with_a_docstring():
    for init in [*PACKAGE.rglob("__init__.py"), PLUGINS / "kafka_zk_audit_testing" / "__init__.py"]:
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(PLUGINS)} has no docstring"


def test_tests_mirror_the_stages():
    code_stages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    code_stages -= {"spark_apps", "expectations"}  # mapped in from the top-level folders
    test_stages = {p.name for p in TESTS.iterdir() if (p / "__init__.py").exists()}
    assert code_stages <= test_stages, f"no tests/<stage>/ for {sorted(code_stages - test_stages)}"


TESTING = PLUGINS / "kafka_zk_audit_testing"
MAX_LINES = 500
# A longer module says why in its docstring, in a sentence that starts with this.
SIZE_REASON = "Kept whole:"


def _package_modules() -> dict[str, Path]:
    """Every module of the runtime and the testing package by dotted name (a package by its own name)."""
    modules = {}
    for path in [*PACKAGE.rglob("*.py"), *TESTING.rglob("*.py")]:
        parts = path.relative_to(PLUGINS).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported_modules(name: str, path: Path, modules: dict[str, Path], typing: bool = False) -> set[str]:
    """The package modules ``name`` imports anywhere: at the top, inside functions (lazy imports run too), and with
    ``typing`` also under ``if TYPE_CHECKING:`` (never run, but a module typed by another depends on it).
    ``from package import name`` counts the submodule when ``name`` is one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    only_typing = set() if typing else {
        id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body for inner in ast.walk(statement)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in only_typing:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules:
                    found.add(base)
    return found - {name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted: every one holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_the_cycle_finder_finds_a_cycle_through_any_number_of_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("package", ["kafka_zk_audit", "kafka_zk_audit_testing"])
def test_no_import_cycle_in_the_packages_lazy_and_type_only_imports_included(package: str):
    """Neither the runtime package nor the test support (its simulator's plants register on the simulator, which
    imports none of them back) has a cycle, counting the imports of functions and of ``if TYPE_CHECKING:``."""
    modules = _package_modules()
    graph = {name: _imported_modules(name, path, modules, typing=True) for name, path in modules.items()}
    cycles = [group for group in import_cycles(graph) if group[0].split(".")[0] == package]
    assert cycles == [], "import cycles (each group imports itself through its members)"


def test_the_cycle_check_sees_type_only_imports(tmp_path: Path):
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import other\n")
    modules = {"pkg.typed": typed, "pkg.other": typed}
    assert _imported_modules("pkg.typed", typed, modules) == set()
    assert _imported_modules("pkg.typed", typed, modules, typing=True) == {"pkg.other"}


def test_no_module_is_longer_than_500_lines_without_a_reason():
    too_long = []
    for path in _package_modules().values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES and SIZE_REASON not in (ast.get_docstring(ast.parse(path.read_text())) or ""):
            too_long.append(f"{path.relative_to(PLUGINS)} ({lines} lines)")
    assert too_long == [], (f"split these by job, or say why in the module docstring ('{SIZE_REASON} ...'): "
                            f"{', '.join(sorted(too_long))}")


def test_the_wheel_lists_every_package_folder():
    import configparser

    setup = configparser.ConfigParser()
    setup.read(PLUGINS.parent / "setup.cfg")
    listed = set(setup["options"]["packages"].split())
    folders = {".".join(p.parent.relative_to(PLUGINS).parts) for p in PACKAGE.rglob("__init__.py")}
    assert folders - {"kafka_zk_audit.spark_apps", "kafka_zk_audit.expectations"} <= listed, (
        f"add to setup.cfg's packages: {sorted(folders - listed)}")


def test_the_in_process_spark_modules_are_one_unit_of_work_and_the_others_their_own() -> None:
    """pytest-xdist sends the modules that use the in-process Spark session (directly, through a fixture of their
    own, or through one imported from another test module) to one worker; the shared runs and other modules apart."""
    from tests.conftest import IN_PROCESS_SPARK, unit_of

    assert unit_of("tests/audit/test_batch.py") == IN_PROCESS_SPARK  # takes ``spark``
    assert unit_of("tests/audit/checks/test_keyed.py") == IN_PROCESS_SPARK  # through an imported fixture
    assert unit_of("tests/audit/checks/test_readiness_checks.py") == IN_PROCESS_SPARK  # through its own fixture
    assert unit_of("tests/airflow/test_audit_gate_operator.py") == "system-run"
    assert unit_of("tests/system/test_install.py") == "scheduler-run"
    assert unit_of("tests/cli/test_readiness.py") == "tests/cli/test_readiness.py"  # its Spark is spark-submit's
    assert unit_of("tests/report/test_fleet.py") == "tests/report/test_fleet.py"


def test_the_modules_scheduled_first_exist_and_are_units_of_their_own() -> None:
    """``LONGEST_FIRST`` (tests/conftest.py) names test modules that are their own unit of work: a renamed or moved
    module would silently go back to the collection's order."""
    from tests.conftest import LONGEST_FIRST, unit_of

    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    for module in LONGEST_FIRST:
        assert (PLUGINS.parent / module).is_file(), module
        assert unit_of(module) == module, module
