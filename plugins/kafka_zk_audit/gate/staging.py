"""The gate's batches: a run's audit tables staged as one Parquet file each, the snapshot and cluster columns.

A suite whose every expectation judges rows one by one (a column map, column pair or multicolumn
expectation, no ``mostly`` below 1, nothing about uniqueness across rows) is validated once over the run's
staged table: its unexpected rows carry ``snapshot_id`` and ``cluster``, so the verdict splits them per
snapshot (``verdict.split_by_snapshot``) exactly as one validation per snapshot would have found them. A
suite with any other expectation (row counts, aggregates, uniqueness) is validated per snapshot, over that
snapshot's staged table. The drift table gets its bound columns here (``drift.drift_parameters``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.schemas import INDEX_COLUMNS, KEY
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.gate.suites import LoadedSuite

CLUSTER = "cluster"
# The columns that name an unexpected row in the results and the Data Docs: whose it is, then which entity.
GATE_INDEX_COLUMNS: tuple[str, ...] = (CLUSTER, KEY, *INDEX_COLUMNS)
ROW_WISE_BASES = ("ColumnMapExpectation", "ColumnPairMapExpectation", "MulticolumnMapExpectation")


def _row_wise(expectation: Any) -> bool:
    bases = {cls.__name__ for cls in type(expectation).__mro__}
    mostly = getattr(expectation, "mostly", None)
    return (bool(bases & set(ROW_WISE_BASES)) and "unique" not in expectation.expectation_type
            and (mostly is None or mostly >= 1))


def validated_per_run(loaded: LoadedSuite) -> bool:
    """True when one validation over the run's table judges each snapshot as its own validation would."""
    return all(_row_wise(expectation) for expectation in loaded.suite.expectations)


def staged_name(table: str, snapshot_id: str | None = None) -> str:
    """The staged file of a table, relative to the staging folder: the run's, or one snapshot's."""
    return f"{table}.parquet" if snapshot_id is None else f"{table}/{snapshot_id}.parquet"


def _snapshot_table(warehouse: Warehouse, table: str, snapshot_id: str, cluster: str | None,
                    extra: Mapping[str, Any]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = pq.read_table(warehouse.fs_path(warehouse.table_dir(table, snapshot_id)), filesystem=warehouse.fs,
                         partitioning=None)
    for name, value in ((CLUSTER, cluster), (KEY, snapshot_id), *extra.items()):
        if name in data.column_names:
            continue
        kind = pa.string() if isinstance(value, str) or value is None else pa.int64()
        data = data.append_column(name, pa.array([value] * data.num_rows, type=kind))
    return data


def stage_tables(warehouse: Warehouse, folder: Path, clusters: Mapping[str, str | None],
                 per_run: Sequence[str], per_snapshot: Sequence[str],
                 extra: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None) -> dict[str, int]:
    """Write the staged files into ``folder`` (emptied first): for each table of ``per_run`` one file with the rows
    of every snapshot in ``clusters`` (id -> cluster), for each of ``per_snapshot`` one file per snapshot.
    ``extra[table][snapshot_id]`` adds constant columns to a snapshot's rows. Returns each file's size in bytes."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sizes: dict[str, int] = {}

    def write(name: str, data: Any) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, path)
        sizes[name] = path.stat().st_size

    for table in dict.fromkeys([*per_run, *per_snapshot]):
        parts = {sid: _snapshot_table(warehouse, table, sid, cluster, ((extra or {}).get(table) or {}).get(sid) or {})
                 for sid, cluster in clusters.items()}
        if table in per_run:
            write(staged_name(table), pa.concat_tables(parts.values(), promote_options="permissive"))
        if table in per_snapshot:
            for sid, data in parts.items():
                write(staged_name(table, sid), data)
    return sizes
