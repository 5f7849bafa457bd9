"""ZooKeeper → KRaft migration readiness in Spark: ``run_readiness`` gives the READINESS rows of any number of
snapshots, each at its own target Kafka version.

One declared check (``engine.check``) per readiness check id, in the family modules: ``topics`` (R02-R06, the
topics the migration copies), ``configs`` (R07-R12, dynamic configs, ACLs, tokens and quotas) and ``cluster`` (R01,
R13-R20 and the R14 node ids). Each reads keyed normalized tables (and, where no table carries the fact, the raw
snapshot frame, the snapshot ids, the registered broker ids or the manifests' znode ACLs) and finds keyed
CHECK_OUTPUT rows: one per snapshot and subject where Kafka's migration code would stall, crash or lose data
(``contract/readiness.py`` and ``notes/kraft-migration-readiness.md`` cite it). Called as a function with those
inputs (its parameters' names), a check evaluates itself alone; ``run_readiness`` evaluates every wanted check in
one ``engine.evaluate``: one select per frame they read, their views and facts built once. Every join, aggregation
and window includes the snapshot key, so the rows of snapshots computed together are those of each computed alone.

Nothing here lists the conditions: ``contract/readiness.py`` is their registry. A condition's check is the one
named like its check id in a family module, given the inputs its parameters name (``_sources``). The level of a
condition at a snapshot's target is looked up in the plan by (target, check).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks.common import family_functions
from kafka_zk_audit.audit.checks.engine import Rule, Sources, evaluate
from kafka_zk_audit.audit.checks.readiness import cluster, configs, topics
from kafka_zk_audit.audit.checks.readiness.cluster import registered_broker_ids, snapshot_keys
from kafka_zk_audit.audit.keyed_io import rows_frame
from kafka_zk_audit.contract.readiness import BY_CHECK_ID, READINESS_CHECK_IDS, parse_target
from kafka_zk_audit.contract.schemas import KEY, READINESS, keyed

# The columns of a check's rows that a readiness row keeps (with the snapshot key).
CHECK_COLUMNS = ("check_id", "topic", "partition", "group_id", "broker_id", "path", "detail")
# The modules that define the readiness functions, one family of conditions each.
FAMILIES = (topics, configs, cluster)


def _declared(functions: Mapping[str, Callable[..., DataFrame]]) -> dict[str, Rule]:
    """The functions, each a declared check (``engine.check``); TypeError for one that is not."""
    plain = [check_id for check_id, function in functions.items() if not isinstance(function, Rule)]
    if plain:
        raise TypeError(f"readiness checks {', '.join(plain)} are not declared checks (engine.check)")
    return {check_id: function for check_id, function in functions.items() if isinstance(function, Rule)}


# Each readiness check id's declared check (derived from the contract's conditions: one without a check fails here).
READINESS_FUNCTIONS: Mapping[str, Rule] = _declared(family_functions(READINESS_CHECK_IDS, FAMILIES))
# What a readiness function may take besides a normalized table (by parameter name; see ``_sources``).
SNAPSHOT_INPUTS = ("snapshot", "snapshot_ids", "broker_ids", "spark", "znode_acls")


class ReadinessTarget(NamedTuple):
    """What ``run_readiness`` needs of a snapshot besides its rows: its manifest (``znode_acls`` for R20) and the
    Kafka version it plans the migration with ("3.4".."3.9", optional patch)."""

    manifest: Mapping[str, Any]
    target_version: str


def _sources(tables: Mapping[str, DataFrame], snapshot: DataFrame,
             snapshots: Mapping[str, ReadinessTarget | tuple[Any, str]], rules: Sequence[Rule],
             empty: Iterable[str] = ()) -> Sources:
    """The engine's inputs of one run_readiness call, by name: every normalized table, the raw snapshot frame
    (``snapshot``), the session (``spark``), each snapshot's manifest znode ACLs (``znode_acls``), and, when a rule
    reads them, one row per snapshot of the call (``snapshot_ids``) and the registered broker ids
    (``broker_ids``); ``empty``: the tables known to hold no row."""
    spark = snapshot.sparkSession
    named: dict[str, Any] = {
        "snapshot": snapshot, "spark": spark,
        "znode_acls": {sid: (target[0] or {}).get("znode_acls") for sid, target in snapshots.items()}}
    lazy: dict[str, Callable[[], DataFrame]] = {
        "snapshot_ids": lambda: snapshot_keys(spark, snapshots),
        "broker_ids": lambda: registered_broker_ids(snapshot, tables["brokers"]),
    }
    inputs = ChainMap(named, tables)  # the tables looked up, not copied (keyed_io.LazyFrames)
    for rule in rules:
        unknown = [name for name in rule.needs if name not in inputs and name not in lazy]
        if unknown:
            raise TypeError(f"{rule.check_id} takes {', '.join(unknown)}, which is no table nor snapshot input")
    needs = {name for rule in rules for name in rule.needs}
    named.update({name: provide() for name, provide in lazy.items() if name in needs})
    return Sources(inputs, empty)


def level_rows(targets: Mapping[str, str]) -> list[tuple[str, str, str, str, str]]:
    """(snapshot_id, check_id, condition_id, level, remedy) of every condition that is a problem at each snapshot's
    target version (``targets``: snapshot id -> target); ValueError for a target that is no migrating release."""
    rows = []
    for snapshot_id, target_version in sorted(targets.items()):
        target = parse_target(target_version)
        for check_id in READINESS_CHECK_IDS:
            condition = BY_CHECK_ID[check_id]
            level = condition.level_at(target)
            if level is not None:
                rows.append((str(snapshot_id), check_id, condition.condition_id, level, condition.remedy))
    return rows


def run_readiness(
    tables: Mapping[str, DataFrame], snapshot: DataFrame, snapshots: Mapping[str, ReadinessTarget | tuple[Any, str]],
    empty: Iterable[str] = (),
) -> DataFrame:
    """Every readiness condition of the given snapshots, each at its own target version, as ``keyed(READINESS)``
    rows in one frame (level and remedy filled in).

    ``tables`` and ``snapshot`` are keyed frames (they may hold other snapshots too: only those of ``snapshots``
    give rows); ``snapshots`` maps each snapshot id to its ``ReadinessTarget`` (manifest, target version), or the
    plain (manifest, target version) pair. A condition that is no problem at a snapshot's target gives no row
    for that snapshot, and one that is no problem at any target is not computed; nor is one on a table named in
    ``empty`` (no row in any snapshot).
    """
    spark = snapshot.sparkSession
    targets = {sid: str(target[1]) for sid, target in snapshots.items()}
    levels = level_rows(targets)  # the level table: joined, so one plan serves every target
    wanted = {check_id for _, check_id, *_ in levels}
    rules = [READINESS_FUNCTIONS[check_id] for check_id in READINESS_CHECK_IDS if check_id in wanted]
    if not rules:
        return rows_frame(spark, [], keyed(READINESS))
    found = evaluate(rules, _sources(tables, snapshot, snapshots, rules, empty))
    # the level table as a lookup by (target version, check) in the plan: no join, no broadcast job
    by_target = {(targets[sid], check_id): (condition_id, level, remedy)
                 for sid, check_id, condition_id, level, remedy in levels}
    lookup = F.create_map(*[item for (target, check_id), (condition_id, level, remedy) in by_target.items()
                            for item in (
        F.lit(f"{target}\x00{check_id}"),
        F.struct(F.lit(condition_id).alias("condition_id"), F.lit(level).alias("level"), F.lit(remedy).alias("remedy")),
    )])
    target_of = F.create_map(*[item for sid, target in targets.items() for item in (F.lit(sid), F.lit(target))])
    key = F.concat(F.element_at(target_of, F.col(KEY)), F.lit("\x00"), F.col("check_id"))
    leveled = found.withColumn("_level", F.element_at(lookup, key))
    # a readiness row keeps the check's CHECK_COLUMNS (not whether it is explained) and its condition's level
    values = {name: F.col(name) for name in CHECK_COLUMNS}
    values.update({name: F.col(f"_level.{name}") for name in ("condition_id", "level", "remedy")})
    return leveled.where(F.col("_level").isNotNull()).select(
        KEY, *[values[field.name].cast(field.dataType).alias(field.name) for field in READINESS.fields])
