"""The gate's verdict: which failed expectations gate the run, by severity (pure; no GX, no Airflow).

Great Expectations' own pass/fail ignores an expectation's severity; the audit fails only on failed
expectations whose severity is one of the settings' ``gate.gating_severities``. The checkpoint result
(``describe_dict``, as the GX provider pushes it to XCom) names neither the suite nor an expectation's
``meta`` or severity, so the verdict pairs it with the loaded suites' description (``LoadedSuite.describe``,
one per validation, in checkpoint order): validation results by position, expectations by type and kwargs.

Severity: a catalogue expectation's is the settings' override, else the catalogue's; a user expectation's
is its ``meta.severity``, else GX's ``severity`` (critical/warning/info), else ``error``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafka_zk_audit.contract.catalogue import BY_ID, SEVERITIES
from kafka_zk_audit.contract.schemas import KEY

DEFAULT_SEVERITY = "error"
FROM_GX_SEVERITY = {"critical": "critical", "warning": "warning", "info": "info"}
NOT_EVALUATED = "GX could not evaluate it (a missing column or a bad argument?); its error is in the Data Docs"


def expectation_severity(expectation: Mapping[str, Any], severity_overrides: Mapping[str, str]) -> str:
    """The gate's severity of one described expectation (see the module docstring)."""
    check_id = expectation.get("check_id")
    if check_id in BY_ID:
        return severity_overrides.get(check_id) or BY_ID[check_id].severity
    if expectation.get("severity") in SEVERITIES:
        return expectation["severity"]
    return FROM_GX_SEVERITY.get(str(expectation.get("gx_severity") or "").lower(), DEFAULT_SEVERITY)


def _comparable(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (kwargs or {}).items() if key != "batch_id"}


def _pair(results: Sequence[Mapping[str, Any]],
          described: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    """For each expectation result, its description: same type and kwargs, else the next of the same type."""
    unused = list(range(len(described)))
    paired: list[Mapping[str, Any] | None] = []
    for result in results:
        kind, kwargs = result.get("expectation_type"), _comparable(result.get("kwargs"))
        same_type = [i for i in unused if described[i].get("type") == kind]
        exact = [i for i in same_type if _comparable(described[i].get("kwargs")) == kwargs]
        # suite parameters are substituted in the result: the column then tells expectations of a type apart
        same_column = [i for i in same_type if described[i].get("column") == kwargs.get("column")]
        chosen = (exact or same_column or same_type or [None])[0]
        if chosen is not None:
            unused.remove(chosen)
        paired.append(described[chosen] if chosen is not None else None)
    return paired


def _fallback_description(result: Mapping[str, Any]) -> dict[str, Any]:
    """Without the suites' description: a catalogue check is recognised by its column, as the suites name it."""
    column = (result.get("kwargs") or {}).get("column")
    catalogue = result.get("expectation_type") == "expect_column_values_to_be_in_set" and column in BY_ID
    return {"type": result.get("expectation_type"), "column": column, "check_id": column if catalogue else None}


def _audit_table(validation: Mapping[str, Any]) -> str | None:
    """The audit table from the batch id GX puts in every result's kwargs (``<datasource>-<asset>``, the asset
    ``<table>`` or ``<table> <cluster>``)."""
    for result in validation.get("expectations") or []:
        batch_id = (result.get("kwargs") or {}).get("batch_id")
        if isinstance(batch_id, str) and "-" in batch_id:
            return batch_id.split("-", 1)[1].split(" ", 1)[0]
    return None


def failure_label(failed: Mapping[str, Any]) -> str:
    """One line for logs and alerts, e.g. ``partitions: leader_not_in_isr, 3 unexpected rows`` or
    ``brokers: expect_table_row_count_to_be_between, observed 2``."""
    name = failed.get("check_id") or failed.get("expectation_type") or "expectation"
    if not failed.get("check_id") and failed.get("column"):
        name += f"({failed['column']})"
    if failed.get("exception"):
        detail = str(failed["exception"])
    elif failed.get("unexpected_count") is not None:
        detail = f"{failed['unexpected_count']} unexpected rows"
    elif "observed_value" in failed:
        detail = f"observed {failed['observed_value']}"
    else:
        detail = "failed"
    return f"{failed.get('suite') or '?'}: {name}, {detail}"


def _short(value: Any, limit: int = 120) -> Any:
    """Scalars as they are; anything else (lists of values, partial rows) as text of at most ``limit`` chars."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _exception_message(result: Mapping[str, Any]) -> str | None:
    info = result.get("exception_info") or {}
    if not info.get("raised_exception"):
        return None
    return _short(" ".join(str(info.get("exception_message") or "exception").split()), 200)


def failed_expectations(
    result: Mapping[str, Any],
    suites: Sequence[Mapping[str, Any]] | None,
    severity_overrides: Mapping[str, str],
    gating: Iterable[str],
) -> list[dict[str, Any]]:
    """One entry per failed expectation of a checkpoint result (``describe_dict``), with its suite, audit table,
    expectation type, column, catalogue check id (None for user expectations), severity and whether it gates."""
    gating = set(gating)
    validations = result.get("validation_results") or []
    described_suites = list(suites or [])
    if len(described_suites) != len(validations):
        described_suites = []  # not this checkpoint's suites: recognise catalogue checks by column only
    failed = []
    for index, validation in enumerate(validations):
        suite = described_suites[index] if described_suites else {}
        results = validation.get("expectations") or []
        paired = _pair(results, suite.get("expectations") or []) if suite else [None] * len(results)
        for outcome, described in zip(results, paired, strict=True):
            if outcome.get("success"):
                continue
            described = described or _fallback_description(outcome)
            check_id = described.get("check_id")
            severity = expectation_severity(described, severity_overrides)
            details = outcome.get("result") or {}
            entry: dict[str, Any] = {
                "suite": suite.get("suite") or (BY_ID[check_id].entity if check_id in BY_ID else None),
                "audit_table": suite.get("audit_table") or _audit_table(validation),
                "expectation_type": outcome.get("expectation_type"),
                "column": (outcome.get("kwargs") or {}).get("column") or (outcome.get("kwargs") or {}).get("column_A"),
                "check_id": check_id,
                "severity": severity,
                "unexpected_count": details.get("unexpected_count"),
                "gating": severity in gating,
            }
            if "observed_value" in details:
                entry["observed_value"] = _short(details["observed_value"])
            if exception := _exception_message(outcome):
                entry["exception"] = exception
            elif not details:  # GX hides a metric's error from describe_dict: only the result is empty
                entry["exception"] = NOT_EVALUATED
            entry["label"] = failure_label(entry)
            failed.append(entry)
    return failed


def build_verdict(
    result: Mapping[str, Any],
    suites: Sequence[Mapping[str, Any]] | None,
    severity_overrides: Mapping[str, str],
    gating: Iterable[str],
    data_docs: str,
) -> dict[str, Any]:
    """The verdict the gate task pushes to XCom and ``summary.json`` carries under ``gate``.

    ``suites`` is ``[loaded.describe() for loaded in load_suites(...)]`` in checkpoint order.
    """
    failed = failed_expectations(result, suites, severity_overrides, gating)
    gating_failed = [f for f in failed if f["gating"]]
    validated = bool(result.get("validation_results"))
    verdict = {
        "success": validated and not gating_failed,
        "failed_expectations": len(gating_failed),
        "non_gating_failed_expectations": len(failed) - len(gating_failed),
        "failed": failed,
        "evaluated_expectations": sum(
            (v.get("statistics") or {}).get("evaluated_expectations", 0) for v in result.get("validation_results", [])
        ),
        "data_docs": data_docs,
    }
    if not validated:  # nothing validated proves nothing
        verdict["error"] = "the checkpoint returned no validation results"
    return verdict


def split_by_snapshot(validation: Mapping[str, Any], snapshot_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A validation over a run's staged table as one validation per snapshot: an expectation fails for a snapshot
    when any of its unexpected rows is that snapshot's (their ``snapshot_id`` in ``unexpected_index_list``). A failed
    result without its rows (an error) fails for every snapshot: nothing says it passed."""
    if len(snapshot_ids) == 1:
        return {snapshot_ids[0]: dict(validation)}
    split: dict[str, dict[str, Any]] = {}
    for snapshot_id in snapshot_ids:
        outcomes = []
        for outcome in validation.get("expectations") or []:
            details = outcome.get("result") or {}
            if outcome.get("success") or _exception_message(outcome) or "unexpected_index_list" not in details:
                outcomes.append(outcome)
                continue
            rows = [row for row in details["unexpected_index_list"] or [] if row.get(KEY) == snapshot_id]
            part = {**details, "unexpected_count": len(rows), "unexpected_index_list": rows,
                    "partial_unexpected_index_list": rows[:len(details.get("partial_unexpected_index_list") or [])]}
            outcomes.append({**outcome, "success": not rows, "result": part})
        passed = sum(1 for outcome in outcomes if outcome.get("success"))
        split[snapshot_id] = {
            **validation,
            "success": passed == len(outcomes),
            "expectations": outcomes,
            "statistics": {"evaluated_expectations": len(outcomes), "successful_expectations": passed,
                           "unsuccessful_expectations": len(outcomes) - passed,
                           "success_percent": 100.0 * passed / len(outcomes) if outcomes else None},
        }
    return split


def build_fleet_verdict(
    result: Mapping[str, Any],
    plan: Sequence[tuple[Sequence[str], Mapping[str, Any]]],
    clusters: Mapping[str, str | None],
    settings_of: Callable[[str | None], tuple[Mapping[str, str], Iterable[str]]],
    data_docs: str,
) -> dict[str, Any]:
    """The verdict of a checkpoint over a run's snapshots: one ``build_verdict`` per snapshot, and overall.

    ``plan`` is one (snapshots, described suite) per validation, in checkpoint order: a validation of several
    snapshots is split by ``split_by_snapshot``. ``clusters`` maps the run's snapshots to their clusters, in
    order; ``settings_of(cluster)`` gives that cluster's severity overrides and gating severities.
    """
    validations = list(result.get("validation_results") or [])
    if len(validations) != len(plan):  # cannot tell which result is whose: judge nothing as passed
        return {"success": False, "failed_expectations": None, "non_gating_failed_expectations": 0, "failed": [],
                "snapshots": {}, "data_docs": data_docs,
                "error": f"the checkpoint returned {len(validations)} validation results for {len(plan)} planned"}
    per_snapshot: dict[str, dict[str, list[Any]]] = {sid: {"results": [], "suites": []} for sid in clusters}
    for (snapshot_ids, suite), validation in zip(plan, validations, strict=True):
        for snapshot_id, part in split_by_snapshot(validation, list(snapshot_ids)).items():
            per_snapshot[snapshot_id]["results"].append(part)
            per_snapshot[snapshot_id]["suites"].append(suite)
    snapshots = {}
    for snapshot_id, part in per_snapshot.items():
        if not part["results"]:
            continue
        cluster = clusters[snapshot_id]
        overrides, gating = settings_of(cluster)
        verdict = build_verdict({"validation_results": part["results"]}, part["suites"], overrides, gating, data_docs)
        verdict["cluster"] = cluster
        for failed in verdict["failed"]:
            failed["cluster"] = cluster
        snapshots[snapshot_id] = verdict
    failed = [f for verdict in snapshots.values() for f in verdict["failed"]]
    errors = [f"{sid}: {v['error']}" for sid, v in snapshots.items() if v.get("error")]
    fleet = {
        "success": bool(snapshots) and all(v["success"] for v in snapshots.values()),
        "failed_expectations": sum(v["failed_expectations"] for v in snapshots.values()),
        "non_gating_failed_expectations": sum(v["non_gating_failed_expectations"] for v in snapshots.values()),
        "failed": failed,
        "evaluated_expectations": sum(v["evaluated_expectations"] for v in snapshots.values()),
        "snapshots": snapshots,
        "data_docs": data_docs,
    }
    if errors or not snapshots:
        fleet["error"] = "; ".join(errors) or "nothing was validated"
    return fleet
