"""The check catalogue in Spark: one pure function per check id, and ``run_checks`` that runs them.

Every check function takes DataFrames (and, where needed, the snapshot's parameters: clock and limits) and returns
rows in the CHECK_OUTPUT shape: one row per violation, with the subject, the znode that shows it and a sentence of
evidence. History checks also take the previous snapshot's tables and return nothing when there is no previous
snapshot.

Nothing here lists the checks: the contract's catalogue (``contract/catalogue.py``) is the registry. A check's
function is the one named like its id in one of the family modules below, and ``run_check`` calls it with the
inputs its ``Check`` spec names (tables, baseline tables, parameters), by parameter name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame

from kafka_zk_audit.audit.checks import (
    admin,
    brokers_topics,
    consumers,
    controller,
    kraft,
    migration,
    partitions,
    znodes,
)
from kafka_zk_audit.audit.checks.common import family_functions
from kafka_zk_audit.audit.checks.engine import Rule, Sources, evaluate
from kafka_zk_audit.audit.params import Params
from kafka_zk_audit.audit.unions import only_columns, union_all
from kafka_zk_audit.contract.catalogue import BY_ID, SNAPSHOT_CHECK_IDS
from kafka_zk_audit.contract.schemas import CHECK_OUTPUT, TABLES, keyed

# The modules that define the check functions, one family of checks each.
FAMILIES = (partitions, controller, migration, brokers_topics, admin, consumers, znodes, kraft)
# Each check id's function (derived from the catalogue: a check without one fails here, at import). The paired
# checks (the migration diff's) have none: the audit merges the diff's rows for the paired snapshots (audit.job).
CHECK_FUNCTIONS: Mapping[str, Callable[..., DataFrame]] = family_functions(SNAPSHOT_CHECK_IDS, FAMILIES)


@dataclass(frozen=True)
class CheckInputs:
    """Everything a check may need, keyed by snapshot: the tables, their baselines' tables (keyed by the snapshot
    they are the baseline of; None when no snapshot has one) and each snapshot's parameters (audit.params)."""

    tables: Mapping[str, DataFrame]
    previous: Mapping[str, DataFrame] | None
    params: Params

    def before(self, table: str) -> DataFrame | None:
        """The previous snapshot's table, or None without a baseline (or without that table)."""
        return None if self.previous is None else self.previous.get(table)


def run_check(check_id: str, inputs: CheckInputs) -> DataFrame:
    """The rows of one check for these inputs: its function called with the inputs its spec names."""
    check = BY_ID[check_id]
    arguments: dict[str, object] = {table: inputs.tables[table] for table in check.tables}
    arguments.update({f"previous_{table}": inputs.before(table) for table in check.baselines})
    if check.params:
        arguments["params"] = inputs.params
    return CHECK_FUNCTIONS[check_id](**arguments)


def _sources(inputs: CheckInputs) -> Sources:
    """The engine's inputs: every table, ``previous_<table>`` of every table (None without a baseline) and
    ``params``."""
    named: dict[str, object] = dict(inputs.tables)
    named.update({f"previous_{table}": inputs.before(table) for table in TABLES})
    named["params"] = inputs.params
    return Sources(named)


def run_checks(
    tables: Mapping[str, DataFrame],
    previous: Mapping[str, DataFrame] | None,
    params: Params,
    check_ids: tuple[str, ...] = SNAPSHOT_CHECK_IDS,
) -> DataFrame:
    """Every snapshot check (or the given ids) over every snapshot of the tables, as one keyed CHECK_OUTPUT
    DataFrame."""
    missing = [name for name in TABLES if name not in tables]
    if missing:
        raise ValueError(f"run_checks needs every normalized table; missing: {', '.join(missing)}")
    inputs = CheckInputs(tables=tables, previous=previous, params=params)
    columns = keyed(CHECK_OUTPUT).names
    rules = [CHECK_FUNCTIONS[check_id] for check_id in check_ids if isinstance(CHECK_FUNCTIONS[check_id], Rule)]
    outputs = [only_columns(run_check(check_id, inputs), columns) for check_id in check_ids
               if not isinstance(CHECK_FUNCTIONS[check_id], Rule)]
    if rules:
        outputs.append(evaluate(rules, _sources(inputs)))
    return union_all(outputs)
