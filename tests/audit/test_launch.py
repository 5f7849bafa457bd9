"""The spark-submit entries import PySpark from the installed package, not from the zip spark-submit puts first."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kafka_zk_audit.audit.connect import spark_submit_binary

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import importlib.util, sys
zipped = importlib.util.find_spec("pyspark").origin  # where Python would import it from (no import yet)
from kafka_zk_audit.audit.launch import installed_pyspark_first
package = installed_pyspark_first()
import pyspark.sql
print("PROBE", zipped, package, pyspark.__file__, pyspark.sql.__file__, pyspark.__version__)
"""


def test_a_spark_submit_driver_imports_pyspark_from_the_installed_package(tmp_path):
    installed = Path(importlib.util.find_spec("pyspark").origin).parent
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugins"), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}  # as cli.spark launches apps
    run = subprocess.run([spark_submit_binary(), "--master", "local[1]", str(probe)],
                         env=env, capture_output=True, text=True, timeout=300)
    line = next((line for line in run.stdout.splitlines() if line.startswith("PROBE ")), None)
    assert run.returncode == 0 and line, run.stdout + run.stderr
    zipped, package, pyspark_file, sql_file, version = line.split()[1:]
    assert zipped == str(installed / "python/lib/pyspark.zip/pyspark/__init__.py")  # spark-submit's zip came first
    assert package == str(installed)
    assert (pyspark_file, sql_file) == (str(installed / "__init__.py"), str(installed / "sql/__init__.py"))
    import pyspark

    assert version == pyspark.__version__


def _spark_like(root: Path, *, zipped_version: str) -> Path:
    """``root/pyspark``: an installed package (version 4.3.0) with its ``python/lib/pyspark.zip`` of
    ``zipped_version``; each ``__init__`` says where it was imported from."""
    package = root / "pyspark"
    (package / "python/lib").mkdir(parents=True)
    (package / "__init__.py").write_text("FROM = 'package'\n")
    (package / "version.py").write_text("__version__ = '4.3.0'\n")
    with zipfile.ZipFile(package / "python/lib/pyspark.zip", "w") as archive:
        archive.writestr("pyspark/__init__.py", "FROM = 'zip'\n")
        archive.writestr("pyspark/version.py", f"__version__ = '{zipped_version}'\n")
    return package


@pytest.mark.parametrize(("zipped_version", "imported_from"), [("4.3.0", "package"), ("4.2.1", "zip")])
def test_only_a_zip_of_the_same_version_is_passed_over(tmp_path, zipped_version, imported_from):
    package = _spark_like(tmp_path, zipped_version=zipped_version)
    code = ("from kafka_zk_audit.audit.launch import installed_pyspark_first; found = installed_pyspark_first(); "
            "import pyspark; print(found, pyspark.FROM)")
    path = [str(package / "python/lib/pyspark.zip"), str(REPO / "plugins")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path / "pyspark" / "python").stdout.split()
    assert out == [str(package) if imported_from == "package" else "None", imported_from]


@pytest.mark.parametrize("entry", sorted(p.name for p in (REPO / "spark_apps").glob("*.py") if p.name != "__init__.py"))
def test_each_spark_submit_entry_calls_it_before_pyspark_is_imported(entry):
    """The entry's module-level imports leave PySpark unimported, and its ``__main__`` block starts with the call."""
    path = REPO / "spark_apps" / entry
    code = (f"import runpy, sys; runpy.run_path({str(path)!r}, run_name='imported'); "
            "print(sorted(name for name in sys.modules if name.split('.')[0] == 'pyspark'))")
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugins")}
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"
    [main] = [node for node in ast.parse(path.read_text()).body if isinstance(node, ast.If)]
    first = main.body[0]
    assert isinstance(first, ast.Expr) and ast.unparse(first.value) == "installed_pyspark_first()", ast.unparse(main)
