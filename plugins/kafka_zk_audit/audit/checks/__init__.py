"""The check catalogue in Spark: one declared check per check id, and ``run_checks`` that evaluates them.

A check is a declaration (``engine.check``): the frame it reads (a normalized table or a view derived once per
audit), the facts joined onto its rows, and its ``Finds``: predicate, detail sentence and subject. ``run_checks``
hands every check to the engine, which evaluates the checks of one frame as conditional columns of one select
and returns rows in the CHECK_OUTPUT shape: one per violation, with the subject, the znode that shows it and a
sentence of evidence. History checks read the baseline's tables (``previous_<table>``) and find nothing without a
baseline.

Nothing here lists the checks: the contract's catalogue (``contract/catalogue.py``) is the registry. A check is the
one named like its id in one of the family modules below; called as a function, it takes the inputs its
``Check`` spec names (tables, baseline tables, parameters) and evaluates itself alone.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping

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
from kafka_zk_audit.contract.catalogue import SNAPSHOT_CHECK_IDS
from kafka_zk_audit.contract.schemas import TABLES

# The modules that define the check functions, one family of checks each.
FAMILIES = (partitions, controller, migration, brokers_topics, admin, consumers, znodes, kraft)
# Each check id's function (derived from the catalogue: a check without one fails here, at import). The paired
# checks (the migration diff's) have none: the audit merges the diff's rows for the paired snapshots (audit.job).
CHECK_FUNCTIONS: Mapping[str, Rule] = family_functions(SNAPSHOT_CHECK_IDS, FAMILIES)  # type: ignore[assignment]


def run_checks(
    tables: Mapping[str, DataFrame],
    previous: Mapping[str, DataFrame] | None,
    params: Params,
    check_ids: tuple[str, ...] = SNAPSHOT_CHECK_IDS,
    empty: Iterable[str] = (),
) -> DataFrame:
    """Every snapshot check (or the given ids) over every snapshot of the tables, as one keyed CHECK_OUTPUT
    DataFrame: the engine evaluates the checks of each frame in one select (``engine.evaluate``); the checks of
    the tables named in ``empty`` (no row in any snapshot) find nothing and are not planned.

    ``previous`` holds the baseline snapshots' tables, keyed by the snapshot they are the baseline of (None when no
    snapshot has one); the checks take them as ``previous_<table>``."""
    missing = [name for name in TABLES if name not in tables]
    if missing:
        raise ValueError(f"run_checks needs every normalized table; missing: {', '.join(missing)}")
    named: dict[str, object] = {f"previous_{table}": None if previous is None else previous.get(table)
                                for table in TABLES}
    named["params"] = params
    # the tables looked up, not copied: a lazy mapping (keyed_io.LazyFrames) builds only the frames a check reads
    return evaluate([CHECK_FUNCTIONS[check_id] for check_id in check_ids], Sources(ChainMap(named, tables), empty))
