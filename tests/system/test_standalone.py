"""The same audit on a Spark standalone master as on ``local``.

Run 1 of the shared system run (tests/system/fleet_run.py) audited the fleet on a standalone master with two workers
on loopback; the same snapshots audited in-process on ``local[2]`` (the session's Spark) must give every table row
for row, and the same audit.json and readiness.json."""

from __future__ import annotations

import shutil

import pytest

from kafka_zk_audit.audit.job import run_audit
from kafka_zk_audit.contract.warehouse import Warehouse
from tests.audit.test_batch import written
from tests.system.fleet_run import AUDITED, SystemRun

pytestmark = pytest.mark.spark


def test_the_standalone_audit_writes_what_a_local_audit_writes(system: SystemRun, spark, tmp_path):
    first = system.runs[0]
    ids = [first.snapshot_id(name) for name in AUDITED]
    local = tmp_path / "local"
    local.mkdir()
    for entry in system.after_first.iterdir():  # the snapshots and the warehouse's keys, none of the audit's output
        if entry.name == "snapshots":
            shutil.copytree(entry, local / entry.name)
        elif entry.is_file():
            shutil.copy2(entry, local / entry.name)
    run_audit(spark, Warehouse(str(local)), ids, str(system.settings))
    for name, sid in zip(AUDITED, ids, strict=True):
        on_cluster, alone = written(system.after_first, sid), written(local, sid)
        assert sorted(on_cluster) == sorted(alone), name
        for table in on_cluster:
            assert on_cluster[table] == alone[table], (name, table)
