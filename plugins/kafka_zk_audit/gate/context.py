"""The Great Expectations gate over the audit tables.

Each entity's audit table (``audit_<entity>``) has one boolean column per check of that entity,
True where the invariant is violated. The suite ``<entity>`` in ``expectations/`` holds one named
expectation per check (``expect_column_values_to_be_in_set`` ``[false]``) whose unexpected rows
are listed with the entity's identifying columns, so the Data Docs show which topic, partition,
group or znode fails. Users add expectations to those suites, or suites of their own on any audit
table (``suites``). Every loaded suite is validated over its audit table and shown in the Data Docs;
the verdict (``verdict``) fails only on failed expectations of a gating severity.

A gate run validates a run's snapshots together: each audit table is staged as one Parquet file with
``snapshot_id`` and ``cluster`` columns (``staging``), each suite is validated once over it and the
verdict splits the unexpected rows per snapshot, so the gate's cost follows the rows, not the number of
clusters. Staged tables up to ``PANDAS_MAX_BYTES`` are validated with GX's pandas datasource (no Spark
session in the gate), larger ones with Spark.
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

from kafka_zk_audit.contract.drift import DRIFT_TABLE
from kafka_zk_audit.contract.settings import AuditConfig, DriftConfig
from kafka_zk_audit.contract.warehouse import Warehouse, read_manifest
from kafka_zk_audit.gate.docs_assets import localize
from kafka_zk_audit.gate.drift import drift_parameters, previous_drift_row
from kafka_zk_audit.gate.staging import GATE_INDEX_COLUMNS, stage_tables, staged_name, validated_per_run
from kafka_zk_audit.gate.suites import LoadedSuite, SuiteFileError, load_suites

DATASOURCE = "kafka_zk_audit_run"
CHECKPOINT = "kafka_zk_audit_gate"
DOCS_SITE = "kafka_zk_audit_docs"
# Staged tables up to this size are validated with pandas: no Spark session in the gate. Larger ones with Spark.
PANDAS_MAX_BYTES = 64 * 1024 * 1024


def local_context_root(warehouse: Warehouse) -> tuple[Path, bool]:
    """Where the GX file context lives: ``<warehouse>/gx`` if local, else a temporary folder."""
    if not warehouse.is_local:
        return Path(tempfile.mkdtemp(prefix="kafka-zk-audit-gx-")), True
    return Path(warehouse.root.removeprefix("file://")) / "gx", False


def _site_folder(context: Any, name: str) -> str | None:
    """The folder a Data Docs site of the context writes to (None when it is not a local folder)."""
    site = (context.variables.data_docs_sites or {}).get(name) or {}
    return (site.get("store_backend") or {}).get("base_directory")


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
    if getattr(context.variables.progress_bars, "globally", True):  # a bar per validation floods the task's log
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        context.variables.save()
    docs_dir = root / "data_docs_site" if remote else Path(warehouse.data_docs_dir.removeprefix("file://"))
    site_config = {
        "class_name": "SiteBuilder",
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
    }
    for name in list(context.get_site_names()):
        # another site, or ours with another folder (a warehouse copied or moved: its context still names the old
        # place, where the pages would go)
        if name != DOCS_SITE or _site_folder(context, name) != str(docs_dir):
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

    They name the previous run's batch definitions, which this run replaces; GX then could not
    load the stored checkpoint any more (``Could not find batch definition``). All are rebuilt on
    every run from the suites folder and the run's snapshots (so a suite file removed from the folder
    leaves the Data Docs too); the validation results stay.
    """
    root = Path(context.root_directory)
    for store in ("checkpoints", "validation_definitions", "expectations"):
        for stored in (root / store).glob("*.json"):
            stored.unlink()


def gate_tables(warehouse: Warehouse) -> list[str]:
    """The tables the gate can validate (``audit_<entity>`` and ``drift``) that the warehouse has."""
    base = warehouse.fs_path(f"{warehouse.root}/tables")
    if not warehouse.fs.exists(base):
        return []
    names = (path.rstrip("/").rsplit("/", 1)[-1] for path in warehouse.fs.ls(base, detail=False))
    return sorted(name for name in names if name.startswith("audit_") or name == DRIFT_TABLE)


def audit_tables_of(warehouse: Warehouse, snapshot_id: str, tables: Sequence[str] | None = None) -> list[str]:
    """Those of ``tables`` (default: ``gate_tables``) that the warehouse holds for a snapshot."""
    return [name for name in (gate_tables(warehouse) if tables is None else tables)
            if warehouse.exists(warehouse.table_dir(name, snapshot_id))]


@dataclass(frozen=True)
class PlannedValidation:
    """One validation of the checkpoint: a suite over the run's staged table (every snapshot of the run), or,
    for a suite that cannot be split by rows, over one snapshot's."""

    loaded: LoadedSuite
    snapshot_ids: tuple[str, ...]
    per_run: bool


@dataclass(frozen=True)
class GatePlan:
    """What one gate run validates: the run's snapshots (id -> cluster), its validations in checkpoint order and
    each snapshot's drift bounds."""

    clusters: dict[str, str | None]
    validations: list[PlannedValidation]
    drift_bounds: dict[str, dict[str, int]]

    def described(self) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
        """(snapshots, described suite) per validation, as ``verdict.build_fleet_verdict`` takes them."""
        return [(item.snapshot_ids, item.loaded.describe()) for item in self.validations]


def settings_by_cluster(cfg: AuditConfig) -> Callable[[str | None], tuple[dict[str, str], tuple[str, ...]]]:
    """The verdict's ``settings_of``: a cluster's severity overrides and gating severities (its own overrides merged
    over the file's)."""

    def settings_of(cluster: str | None) -> tuple[dict[str, str], tuple[str, ...]]:
        cluster_cfg = cfg.for_cluster(cluster) if cluster else cfg
        return dict(cluster_cfg.severity_overrides), tuple(cluster_cfg.gate.gating_severities)

    return settings_of


def split_ids(snapshot_ids: str | Sequence[str]) -> list[str]:
    """Snapshot ids from a comma-separated string (as templated by the DAG) or a sequence."""
    values = snapshot_ids.split(",") if isinstance(snapshot_ids, str) else list(snapshot_ids)
    return [value.strip() for value in values if value and value.strip() and value.strip() != "None"]


def plan_gate(warehouse: Warehouse, snapshot_ids: str | Sequence[str], suites: Sequence[LoadedSuite],
              drift_bounds: Callable[[str | None], DriftConfig] | None = None) -> GatePlan:
    """Every validation of the checkpoint: one per suite for the whole run when its expectations judge rows one by
    one (``staging.validated_per_run``), else one per snapshot. The drift bounds come from each snapshot's baseline
    and ``drift_bounds(cluster)`` (default: the packaged settings)."""
    from kafka_zk_audit.contract.settings import load_config

    bounds_of = drift_bounds or (lambda _cluster: load_config(None).drift)
    ids = split_ids(snapshot_ids)
    clusters = {sid: read_manifest(warehouse, sid).get("cluster") for sid in ids}
    tables = gate_tables(warehouse)  # listed once for the run
    needed = sorted({loaded.audit_table for loaded in suites})
    for sid in ids:
        present = set(audit_tables_of(warehouse, sid, [name for name in needed if name in tables]))
        for loaded in suites:
            if loaded.audit_table not in present:
                present = set(audit_tables_of(warehouse, sid, tables))  # for the message: every table it has
                raise SuiteFileError(
                    f"suite file {loaded.path} runs on {loaded.audit_table}, which snapshot {sid} does not "
                    f"have ({warehouse.table_dir(loaded.audit_table, sid)}); tables: {', '.join(sorted(present))}"
                )
    validations = []
    for loaded in suites:
        if validated_per_run(loaded):
            validations.append(PlannedValidation(loaded, tuple(ids), per_run=True))
        else:
            validations.extend(PlannedValidation(loaded, (sid,), per_run=False) for sid in ids)
    bounds = {}
    if any(loaded.audit_table == DRIFT_TABLE for loaded in suites):
        bounds = {sid: drift_parameters(previous_drift_row(warehouse, sid), bounds_of(clusters[sid])) for sid in ids}
    return GatePlan(clusters, validations, bounds)


class NamedRunCheckpoint:
    """A stored checkpoint that runs with a run name, so that the Data Docs name each validation by its run (GX
    shows ``__none__`` without one), and then builds the run's Data Docs once.

    The checkpoint has no ``UpdateDataDocsAction``: that action builds the site once per validation result, and each
    build renders the index again from every result the context has stored, so a run cost its validations times the
    results of all earlier runs. :func:`build_run_docs` renders the run's pages and the index once.
    """

    def __init__(self, checkpoint: Any, run_name: str | None, context: Any) -> None:
        self.checkpoint = checkpoint
        self.run_name = run_name
        self.context = context

    def run(self, batch_parameters: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        from great_expectations.core.run_identifier import RunIdentifier

        run_id = kwargs.get("run_id") or (RunIdentifier(run_name=self.run_name) if self.run_name else None)
        result = self.checkpoint.run(batch_parameters=batch_parameters,
                                     expectation_parameters=kwargs.get("expectation_parameters"), run_id=run_id)
        build_run_docs(self.context, result)
        return result


def build_run_docs(context: Any, checkpoint_result: Any) -> None:
    """Build the Data Docs site ``DOCS_SITE`` for one checkpoint run: a page per validation result of the run, a
    page per suite it validated, then the index (which lists every stored result), as GX's ``UpdateDataDocsAction``
    leaves the site."""
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

    results = checkpoint_result.run_results
    suites = dict.fromkeys(result.suite_name for result in results.values())  # each once, in checkpoint order
    resources = [*results, *(ExpectationSuiteIdentifier(name=name) for name in suites)]
    context.build_data_docs(site_names=[DOCS_SITE], resource_identifiers=resources)


def run_name(snapshot_ids: Sequence[str]) -> str:
    """The name of a gate run in the Data Docs: its snapshot, or the first of its snapshots and how many."""
    ids = sorted(snapshot_ids)
    if not ids:
        return "kafka-zk-audit"
    return ids[0] if len(ids) == 1 else f"{ids[0]} +{len(ids) - 1} snapshots"


def staging_dir(context: Any) -> Path:
    """Where the run's staged tables live: beside the File Data Context (replaced by every run)."""
    return Path(context.root_directory) / "staged"


def stage_plan(context: Any, warehouse: Warehouse, plan: GatePlan) -> tuple[Path, dict[str, int]]:
    """Stage the tables the plan validates; returns the folder and each staged file's size."""
    per_run = sorted({item.loaded.audit_table for item in plan.validations if item.per_run})
    per_snapshot = sorted({item.loaded.audit_table for item in plan.validations if not item.per_run})
    folder = staging_dir(context)
    sizes = stage_tables(warehouse, folder, plan.clusters, per_run, per_snapshot,
                         extra={DRIFT_TABLE: plan.drift_bounds} if plan.drift_bounds else None)
    return folder, sizes


def staged_datasource(context: Any, folder: Path, use_pandas: bool) -> Any:
    """The context's datasource over the staged tables: pandas or Spark (replacing one of the other kind)."""
    wanted = "pandas_filesystem" if use_pandas else "spark_filesystem"
    existing = context.data_sources.all().get(DATASOURCE)
    if existing is not None and existing.type != wanted:
        context.data_sources.delete(DATASOURCE)
    if use_pandas:
        return context.data_sources.add_or_update_pandas_filesystem(DATASOURCE, base_directory=str(folder))
    return context.data_sources.add_or_update_spark_filesystem(DATASOURCE, base_directory=str(folder))


def configure_checkpoint(context: Any, warehouse: Warehouse, snapshot_id: str | Sequence[str],
                         severity_overrides: dict[str, str] | None = None,
                         suites_dir: str | Path | None = None,
                         suites: list[LoadedSuite] | None = None,
                         plan: GatePlan | None = None) -> Any:
    """Stage the run's audit tables and store one validation definition per planned validation: a suite over the
    run's table (asset ``<table>``), or over one snapshot's (asset ``<table> <cluster>``). ``snapshot_id`` may
    name several snapshots (a fleet run). The returned checkpoint's ``run`` also builds the run's Data Docs."""
    import great_expectations as gx

    if plan is None:
        if suites is None:
            suites = load_suites(severity_overrides, suites_dir)
        plan = plan_gate(warehouse, snapshot_id, suites)
    forget_previous_run(context)
    folder, sizes = stage_plan(context, warehouse, plan)
    datasource = staged_datasource(context, folder, use_pandas=max(sizes.values(), default=0) <= PANDAS_MAX_BYTES)
    for asset in list(datasource.assets):
        datasource.delete_asset(asset.name)
    name = run_name(list(plan.clusters))
    batches: dict[str, Any] = {}
    stored_suites: dict[str, Any] = {}
    definitions = []
    for item in plan.validations:
        table = item.loaded.audit_table
        sid = None if item.per_run else item.snapshot_ids[0]
        label = "" if sid is None else f" {plan.clusters[sid] or sid}"
        path = staged_name(table, sid)
        if path not in batches:
            asset = datasource.add_parquet_asset(f"{table}{label}", **({"dtype_backend": "numpy_nullable"}
                                                                       if datasource.type == "pandas_filesystem"
                                                                       else {}))
            batches[path] = asset.add_batch_definition_path(f"run {name}" if sid is None else f"snapshot {sid}",
                                                            path=path)
        if item.loaded.name not in stored_suites:
            stored_suites[item.loaded.name] = context.suites.add_or_update(item.loaded.suite)
        definitions.append(context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=f"{item.loaded.name}{label}", data=batches[path],
                                    suite=stored_suites[item.loaded.name])
        ))
    checkpoint = context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=CHECKPOINT,
            validation_definitions=definitions,
            actions=[],  # the run's Data Docs are built once, after it (NamedRunCheckpoint.run)
            result_format={
                "result_format": "COMPLETE",
                "partial_unexpected_count": 50,
                # every staged table has these columns (table-level expectations simply list no rows)
                "unexpected_index_column_names": list(GATE_INDEX_COLUMNS),
            },
        )
    )
    return NamedRunCheckpoint(checkpoint, name, context)
