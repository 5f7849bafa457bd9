"""The Great Expectations gate over the audit tables.

Each entity's audit table (``audit_<entity>``) has one boolean column per check of that entity,
True where the invariant is violated. The suite ``<entity>`` in ``expectations/`` holds one named
expectation per check (``expect_column_values_to_be_in_set`` ``[false]``) whose unexpected rows
are listed with the entity's identifying columns, so the Data Docs show which topic, partition,
group or znode fails. Users add expectations to those suites, or suites of their own on any audit
table (``suites``). Every loaded suite is validated over its audit table and shown in the Data Docs;
the verdict (``verdict``) fails only on failed expectations of a gating severity.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.schemas import INDEX_COLUMNS
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.gate.docs_assets import localize
from kafka_zk_audit.gate.suites import LoadedSuite, SuiteFileError, load_suites

DATASOURCE = "kafka_zk_audit_warehouse"
CHECKPOINT = "kafka_zk_audit_gate"
DOCS_SITE = "kafka_zk_audit_docs"


def local_context_root(warehouse: Warehouse) -> tuple[Path, bool]:
    """Where the GX file context lives: ``<warehouse>/gx`` if local, else a temporary folder."""
    if "://" in warehouse.root and not warehouse.root.startswith("file://"):
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
    """The audit tables (``audit_<entity>``) the warehouse holds for a snapshot."""
    base = warehouse.fs_path(f"{warehouse.root}/tables")
    if not warehouse.fs.exists(base):
        return []
    names = (path.rstrip("/").rsplit("/", 1)[-1] for path in warehouse.fs.ls(base, detail=False))
    return sorted(name for name in names
                  if name.startswith("audit_") and warehouse.exists(warehouse.table_dir(name, snapshot_id)))


def configure_checkpoint(context: Any, warehouse: Warehouse, snapshot_id: str,
                         severity_overrides: dict[str, str] | None = None,
                         suites_dir: str | Path | None = None,
                         suites: list[LoadedSuite] | None = None) -> Any:
    """One validation definition per loaded suite (``suites``, else ``load_suites``) over its audit table
    of that snapshot; suites on the same table share its batch definition."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction

    if suites is None:
        suites = load_suites(severity_overrides, suites_dir)
    present = set(audit_tables_of(warehouse, snapshot_id))
    for loaded in suites:
        if loaded.audit_table not in present:
            raise SuiteFileError(
                f"suite file {loaded.path} runs on {loaded.audit_table}, which snapshot {snapshot_id} does not have "
                f"({warehouse.table_dir(loaded.audit_table, snapshot_id)}); audit tables: {', '.join(sorted(present))}"
            )
    forget_previous_run(context)
    datasource = context.data_sources.add_or_update_spark_filesystem(
        DATASOURCE, base_directory=f"{warehouse.root}/tables"
    )
    batches: dict[str, Any] = {}
    definitions = []
    for loaded in suites:
        table = loaded.audit_table
        if table not in batches:
            if table in {asset.name for asset in datasource.assets}:
                datasource.delete_asset(table)
            asset = datasource.add_directory_parquet_asset(table, data_directory=f"{table}/snapshot_id={snapshot_id}")
            batches[table] = asset.add_batch_definition_whole_directory(f"snapshot {snapshot_id}")
        stored_suite = context.suites.add_or_update(loaded.suite)
        definitions.append(
            context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=f"{loaded.name} {snapshot_id}", data=batches[table], suite=stored_suite)
            )
        )
    return context.checkpoints.add_or_update(
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
