"""What a spark-submit entry of this package does before its first import of PySpark.

spark-submit puts Spark's ``python/lib/pyspark.zip`` first on the driver's ``sys.path``. Python compiles every module
it imports from that zip on each launch (the zip holds no bytecode): about 0.4 s of a launch for ``pyspark.sql``,
against 0.1 s from an installed package's cached bytecode. When the zip is the one inside the installed ``pyspark``
package (a pip-installed Spark, as this project runs it: the same files), :func:`installed_pyspark_first` imports
PySpark from the package instead. A Spark whose zip lies elsewhere (``SPARK_HOME`` of a separate install) keeps its
own.
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

_VERSION = "pyspark/version.py"


def _installed_package_of(zip_path: Path) -> Path | None:
    """The installed ``pyspark`` package folder whose ``python/lib/pyspark.zip`` is ``zip_path``, when the zip holds
    the same PySpark version (read from both ``version.py``), else None."""
    package = zip_path.parent.parent.parent
    if package.name != "pyspark" or zip_path.parent.parent.name != "python" or not (package / "__init__.py").is_file():
        return None
    try:
        with zipfile.ZipFile(zip_path) as archive:
            zipped = archive.read(_VERSION)
        return package if zipped == (package / "version.py").read_bytes() else None
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def installed_pyspark_first() -> Path | None:
    """Import ``pyspark`` from the installed package that ships the zip spark-submit put on ``sys.path`` (see the
    module's text); returns its folder, or None when PySpark is already imported or comes from elsewhere."""
    if "pyspark" in sys.modules:
        return None
    zips = [Path(entry) for entry in sys.path if entry.endswith("pyspark.zip")]
    package = next((found for found in map(_installed_package_of, zips) if found is not None), None)
    if package is None:
        return None
    spec = importlib.util.spec_from_file_location("pyspark", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pyspark"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["pyspark"]
        raise
    return package
