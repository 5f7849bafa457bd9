"""The Great Expectations gate over the audit tables.

Each entity's audit table (``audit_<entity>``) has one boolean column per check of that entity,
True where the invariant is violated. The suite ``<entity>`` in ``expectations/`` holds one named
expectation per check (``expect_column_values_to_be_in_set`` ``[false]``) whose unexpected rows
are listed with the entity's identifying columns, so the Data Docs show which topic, partition,
group or znode fails. Users add expectations to those suites, or suites of their own on any audit
table (``suites``). Every loaded suite is validated over its audit table and shown in the Data Docs;
the verdict (``verdict``) fails only on failed expectations of a gating severity.

The audit job writes small audit tables as one Parquet file each: the gate then validates them with
GX's pandas datasource, so it starts no Spark session (its cost grows with rows, not with a JVM). Tables
in several files, larger than ``PANDAS_MAX_BYTES`` or in a remote warehouse are validated with Spark.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.schemas import INDEX_COLUMNS
from kafka_zk_audit.contract.settings import DriftConfig
from kafka_zk_audit.contract.warehouse import Warehouse, read_manifest
from kafka_zk_audit.gate.docs_assets import localize
from kafka_zk_audit.gate.drift import (
    DRIFT_SUITE,
    DRIFT_TABLE,
    cluster_parameters,
    drift_parameters,
    drift_suite_for_cluster,
)
from kafka_zk_audit.gate.suites import LoadedSuite, SuiteFileError, load_suites

DATASOURCE = "kafka_zk_audit_warehouse"
CHECKPOINT = "kafka_zk_audit_gate"
DOCS_SITE = "kafka_zk_audit_docs"
# Audit tables up to this size, each in one Parquet file of a local warehouse, are validated with pandas:
# no Spark session in the gate. Larger (or remote) ones with Spark.
PANDAS_MAX_BYTES = 64 * 1024 * 1024


def local_context_root(warehouse: Warehouse) -> tuple[Path, bool]:
    """Where the GX file context lives: ``<warehouse>/gx`` if local, else a temporary folder."""
    if not warehouse.is_local:
        return Path(tempfile.mkdtemp(prefix="kafka-zk-audit-gx-")), True
    return Path(warehouse.root.removeprefix("file://")) / "gx", False


def file_data_context(warehouse: Warehouse) -> Iterator[Any]:
    """Yield a File Data Context whose Data Docs site is ``<warehouse>/data_docs``.

    For a remote warehouse the context lives in a temporary folder and the built site is copied
    to ``<warehouse>/data_docs`` after the checkpoint ran (the GX provider runs the code after
    ``yield`` once the checkpoint is done).
    """
    import great_expectations as gx

    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    root, remote = local_context_root(warehouse)
    root.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=str(root))
    docs_dir = root / "data_docs_site" if remote else Path(warehouse.data_docs_dir.removeprefix("file://"))
    site_config = {
        "class_name": "SiteBuilder",
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
    }
    for name in list(context.get_site_names()):
        if name != DOCS_SITE:
            context.delete_data_docs_site(name)
    if DOCS_SITE not in context.get_site_names():
        context.add_data_docs_site(DOCS_SITE, site_config)
    started = time.time() - 1  # file systems with coarse mtimes
    yield context
    localize(docs_dir, changed_since=started)  # GX's pages load jQuery & co. from CDNs: point them at local copies
    if remote:
        warehouse.fs.put(str(docs_dir), warehouse.fs_path(warehouse.data_docs_dir), recursive=True)
        shutil.rmtree(root, ignore_errors=True)


def forget_previous_run(context: Any) -> None:
    """Remove the previous run's checkpoint, validation definitions and suites from the context's stores.

    They name the previous snapshot's batch definitions, which this run replaces; GX then could not
    load the stored checkpoint any more (``Could not find batch definition``). All are rebuilt on
    every run from the suites folder and the snapshot id (so a suite file removed from the folder
    leaves the Data Docs too); the validation results stay.
    """
    root = Path(context.root_directory)
    for store in ("checkpoints", "validation_definitions", "expectations"):
        for stored in (root / store).glob("*.json"):
            stored.unlink()


def audit_tables_of(warehouse: Warehouse, snapshot_id: str) -> list[str]:
    """The tables the gate can validate (``audit_<entity>`` and ``drift``) that the warehouse holds for a snapshot."""
    base = warehouse.fs_path(f"{warehouse.root}/tables")
    if not warehouse.fs.exists(base):
        return []
    names = (path.rstrip("/").rsplit("/", 1)[-1] for path in warehouse.fs.ls(base, detail=False))
    return sorted(name for name in names
                  if (name.startswith("audit_") or name == DRIFT_TABLE)
                  and warehouse.exists(warehouse.table_dir(name, snapshot_id)))


@dataclass(frozen=True)
class PlannedValidation:
    """One validation of the checkpoint: a suite (the drift suite: its copy for the cluster) on a snapshot."""

    snapshot_id: str
    cluster: str | None
    loaded: LoadedSuite
    parameters: dict[str, Any]


def split_ids(snapshot_ids: str | Sequence[str]) -> list[str]:
    """Snapshot ids from a comma-separated string (as templated by the DAG) or a sequence."""
    values = snapshot_ids.split(",") if isinstance(snapshot_ids, str) else list(snapshot_ids)
    return [value.strip() for value in values if value and value.strip() and value.strip() != "None"]


def previous_drift_row(warehouse: Warehouse, snapshot_id: str) -> dict[str, Any] | None:
    """The drift row of the snapshot's baseline (from its audit figures), or None without one."""
    import pyarrow.parquet as pq

    audit_path = f"{warehouse.run_dir(snapshot_id)}/audit.json"
    baseline = warehouse.read_json(audit_path).get("baseline_snapshot_id") if warehouse.exists(audit_path) else None
    if not baseline or not warehouse.exists(warehouse.table_dir(DRIFT_TABLE, baseline)):
        return None
    rows = pq.read_table(warehouse.fs_path(warehouse.table_dir(DRIFT_TABLE, baseline)),
                         filesystem=warehouse.fs).to_pylist()
    return rows[0] if rows else None


def plan_validations(warehouse: Warehouse, snapshot_ids: str | Sequence[str], suites: Sequence[LoadedSuite],
                     drift_bounds: Callable[[str | None], DriftConfig] | None = None) -> list[PlannedValidation]:
    """Every (snapshot, suite) the checkpoint validates, in checkpoint order; the drift suite gets a copy per
    cluster with its bounds as suite parameters (``drift_bounds(cluster)``, default the packaged settings)."""
    from kafka_zk_audit.contract.settings import load_config

    bounds_of = drift_bounds or (lambda _cluster: load_config(None).drift)
    planned = []
    for snapshot_id in split_ids(snapshot_ids):
        cluster = read_manifest(warehouse, snapshot_id).get("cluster")
        present = set(audit_tables_of(warehouse, snapshot_id))
        for loaded in suites:
            if loaded.audit_table not in present:
                raise SuiteFileError(
                    f"suite file {loaded.path} runs on {loaded.audit_table}, which snapshot {snapshot_id} does not "
                    f"have ({warehouse.table_dir(loaded.audit_table, snapshot_id)}); tables: "
                    f"{', '.join(sorted(present))}"
                )
            if loaded.name != DRIFT_SUITE:
                planned.append(PlannedValidation(snapshot_id, cluster, loaded, {}))
                continue
            parameters = drift_parameters(previous_drift_row(warehouse, snapshot_id), bounds_of(cluster))
            planned.append(PlannedValidation(snapshot_id, cluster, drift_suite_for_cluster(loaded, cluster),
                                             cluster_parameters(cluster, parameters)))
    return planned


class ParameterizedCheckpoint:
    """A stored checkpoint that runs with the drift suites' parameters (the GX provider passes none) and a run
    name, so that the Data Docs name each validation by its run (GX shows ``__none__`` without one)."""

    def __init__(self, checkpoint: Any, parameters: dict[str, Any], run_name: str | None = None) -> None:
        self.checkpoint = checkpoint
        self.parameters = parameters
        self.run_name = run_name

    def run(self, batch_parameters: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        from great_expectations.core.run_identifier import RunIdentifier

        run_id = kwargs.get("run_id") or (RunIdentifier(run_name=self.run_name) if self.run_name else None)
        return self.checkpoint.run(batch_parameters=batch_parameters,
                                   expectation_parameters={**self.parameters, **(kwargs.get("expectation_parameters")
                                                                                or {})}, run_id=run_id)


def run_name(snapshot_ids: Sequence[str]) -> str:
    """The name of a gate run in the Data Docs: its snapshot, or the first of its snapshots and how many."""
    ids = sorted(snapshot_ids)
    if not ids:
        return "kafka-zk-audit"
    return ids[0] if len(ids) == 1 else f"{ids[0]} +{len(ids) - 1} snapshots"


def pandas_batch_files(warehouse: Warehouse,
                       planned: Sequence[PlannedValidation]) -> dict[tuple[str, str], str] | None:
    """(audit table, snapshot) -> its Parquet file relative to ``<warehouse>/tables`` when every planned table is
    one small file of a local warehouse (the audit job writes small tables so), else None: validate with Spark."""
    if not warehouse.is_local:
        return None
    files: dict[tuple[str, str], str] = {}
    for item in planned:
        key = (item.loaded.audit_table, item.snapshot_id)
        if key in files:
            continue
        directory = warehouse.table_dir(*key)
        parts = [entry for entry in warehouse.fs.ls(warehouse.fs_path(directory), detail=True)
                 if entry["name"].endswith(".parquet") and not entry["name"].rsplit("/", 1)[-1].startswith(("_", "."))]
        if len(parts) != 1 or parts[0]["size"] > PANDAS_MAX_BYTES:
            return None
        files[key] = f"{key[0]}/snapshot_id={key[1]}/{parts[0]['name'].rsplit('/', 1)[-1]}"
    return files


def warehouse_datasource(context: Any, warehouse: Warehouse, use_pandas: bool) -> Any:
    """The context's datasource over ``<warehouse>/tables``: pandas or Spark (replacing one of the other kind)."""
    base_directory = f"{warehouse.root}/tables"
    wanted = "pandas_filesystem" if use_pandas else "spark_filesystem"
    existing = context.data_sources.all().get(DATASOURCE)
    if existing is not None and existing.type != wanted:
        context.data_sources.delete(DATASOURCE)
    if use_pandas:
        return context.data_sources.add_or_update_pandas_filesystem(
            DATASOURCE, base_directory=base_directory.removeprefix("file://")
        )
    return context.data_sources.add_or_update_spark_filesystem(DATASOURCE, base_directory=base_directory)


def configure_checkpoint(context: Any, warehouse: Warehouse, snapshot_id: str | Sequence[str],
                         severity_overrides: dict[str, str] | None = None,
                         suites_dir: str | Path | None = None,
                         suites: list[LoadedSuite] | None = None,
                         planned: Sequence[PlannedValidation] | None = None) -> Any:
    """One validation definition per planned (snapshot, suite) over that snapshot's table; suites on the same
    table of a snapshot share its batch definition. ``snapshot_id`` may name several snapshots (a fleet run)."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction

    if planned is None:
        if suites is None:
            suites = load_suites(severity_overrides, suites_dir)
        planned = plan_validations(warehouse, snapshot_id, suites)
    forget_previous_run(context)
    files = pandas_batch_files(warehouse, planned)
    datasource = warehouse_datasource(context, warehouse, use_pandas=files is not None)
    for asset in list(datasource.assets):
        datasource.delete_asset(asset.name)
    batches: dict[tuple[str, str], Any] = {}
    stored_suites: dict[str, Any] = {}
    definitions = []
    parameters: dict[str, Any] = {}
    for item in planned:
        table, key = item.loaded.audit_table, (item.loaded.audit_table, item.snapshot_id)
        if key not in batches:
            asset_name = f"{table} {item.cluster}" if item.cluster else table
            batch_name = f"snapshot {item.snapshot_id}"
            if files is not None:
                asset = datasource.add_parquet_asset(asset_name, dtype_backend="numpy_nullable")
                batches[key] = asset.add_batch_definition_path(batch_name, path=files[key])
            else:
                asset = datasource.add_directory_parquet_asset(
                    asset_name, data_directory=f"{table}/snapshot_id={item.snapshot_id}"
                )
                batches[key] = asset.add_batch_definition_whole_directory(batch_name)
        if item.loaded.name not in stored_suites:
            stored_suites[item.loaded.name] = context.suites.add_or_update(item.loaded.suite)
        name = f"{item.cluster} {item.loaded.name} {item.snapshot_id}" if item.cluster else \
            f"{item.loaded.name} {item.snapshot_id}"
        definitions.append(context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=batches[key], suite=stored_suites[item.loaded.name])
        ))
        parameters.update(item.parameters)
    checkpoint = context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=CHECKPOINT,
            validation_definitions=definitions,
            actions=[UpdateDataDocsAction(name="update_data_docs", site_names=[DOCS_SITE])],
            result_format={
                "result_format": "COMPLETE",
                "partial_unexpected_count": 50,
                # every audit table has these columns (table-level expectations simply list no rows)
                "unexpected_index_column_names": list(INDEX_COLUMNS),
            },
        )
    )
    return ParameterizedCheckpoint(checkpoint, parameters, run_name(sorted({item.snapshot_id for item in planned})))
