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
