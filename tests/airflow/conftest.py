"""Airflow in the test process, for the tests that run an operator in a DAG run built here (``dag.test()``).

Airflow reads its home and metadata DB when it is first imported: this file is imported before the test modules
of tests/airflow, so it points Airflow at a temporary home with a SQLite DB of its own, binds the ORM to it (even
when another folder's tests imported Airflow first) and gives the environment back, so that the Airflow
subprocesses other tests start never see that DB. The DB is migrated once, by the ``airflow_db`` fixture.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HOME = Path(tempfile.mkdtemp(prefix="kafka-zk-audit-airflow-tests-"))
(HOME / "dags").mkdir()
atexit.register(shutil.rmtree, HOME, True)
_IN_PROCESS = {
    "AIRFLOW_HOME": str(HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(HOME / "dags"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{HOME / 'airflow.db'}",
}


def _bind_airflow() -> None:
    """Import Airflow with the temporary home and bind its ORM to the temporary DB; the environment is restored."""
    saved = {name: os.environ.get(name) for name in _IN_PROCESS}
    os.environ.update(_IN_PROCESS)
    try:
        from airflow import settings

        settings.configure_vars()
        settings.configure_orm()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_bind_airflow()


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[Path]:
    """The migrated metadata DB of the in-process Airflow (created once; its home is removed when the tests end)."""
    from airflow.utils.db import initdb

    initdb()
    yield HOME
