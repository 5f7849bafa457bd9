"""The Great Expectations gate over the audit tables.

Each entity's audit table (``audit_<entity>``) has one boolean column per check of that entity,
True where the invariant is violated. The suite ``<entity>`` in ``expectations/`` holds one named
expectation per check (``expect_column_values_to_be_in_set`` ``[false]``) whose unexpected rows
are listed with the entity's identifying columns, so the Data Docs show which topic, partition,
group or znode fails. Severities follow the catalogue (critical/error → GX ``critical``,
warning → ``warning``, info → ``info``) and the config's overrides; the gate fails only on
failed expectations of a gating severity, while every suite is validated and shown.
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
from kafka_zk_audit.gate.suites import load_suites

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
    """Remove the previous run's checkpoint and validation definitions from the context's stores.

    They name the previous snapshot's batch definitions, which this run replaces; GX then could not
    load the stored checkpoint any more (``Could not find batch definition``). Both are rebuilt on
    every run from ``expectations/`` and the snapshot id; the validation results stay.
    """
    root = Path(context.root_directory)
    for store in ("checkpoints", "validation_definitions"):
        for stored in (root / store).glob("*.json"):
            stored.unlink()


def configure_checkpoint(context: Any, warehouse: Warehouse, snapshot_id: str,
                         severity_overrides: dict[str, str] | None = None,
                         suites_dir: str | Path | None = None) -> Any:
    """One validation definition per entity suite over that snapshot's audit table."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction

    forget_previous_run(context)
    datasource = context.data_sources.add_or_update_spark_filesystem(
        DATASOURCE, base_directory=f"{warehouse.root}/tables"
    )
    definitions = []
    for suite in load_suites(severity_overrides, suites_dir):
        entity = suite.name
        asset_name = f"audit_{entity}"
        if asset_name in {asset.name for asset in datasource.assets}:
            datasource.delete_asset(asset_name)
        asset = datasource.add_directory_parquet_asset(
            asset_name, data_directory=f"{asset_name}/snapshot_id={snapshot_id}"
        )
        batch = asset.add_batch_definition_whole_directory(f"snapshot {snapshot_id}")
        stored_suite = context.suites.add_or_update(suite)
        definitions.append(
            context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=f"{entity} {snapshot_id}", data=batch, suite=stored_suite)
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
                "unexpected_index_column_names": list(INDEX_COLUMNS),
            },
        )
    )
