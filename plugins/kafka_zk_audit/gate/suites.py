"""The Great Expectations suites the gate runs: the catalogue's, one per entity, and the user's own.

Each entity's audit table (``audit_<entity>``) has one boolean column per check of that entity, True where
the invariant is violated; its suite ``<entity>.json`` holds ``expect_column_values_to_be_in_set [false]``
for each, with the catalogue's severity (critical/error → GX ``critical``, warning → ``warning``, info →
``info``). ``scripts/generate_suites.py`` (``make suites``) writes them from the catalogue.

Users extend the gate without Python: any other expectation may sit beside the catalogue's in those files,
and any other ``*.json`` suite in the folder runs on the audit table named in its ``meta.audit_table``
(default ``audit_<suite name>``). A catalogue expectation gates by its check's severity in the catalogue or
the settings' ``severity_overrides``; a user expectation by its ``meta.severity`` (critical/error/warning/info),
else GX's own ``severity``, else ``error`` (``verdict`` decides).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.catalogue import BY_ID, CHECKS, ENTITIES, SEVERITIES

EXPECTATIONS_ENV = "KAFKA_ZK_AUDIT_EXPECTATIONS"
GX_SEVERITY = {"critical": "critical", "error": "critical", "warning": "warning", "info": "info"}
CATALOGUE_EXPECTATION = "expect_column_values_to_be_in_set"
AUDIT_TABLE_NAME = re.compile(r"audit_[A-Za-z0-9_]+|drift")
SUITE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
REGENERATE_HINT = (
    "regenerate the catalogue expectations with `make suites` (for another folder: "
    "`python scripts/generate_suites.py --suites-dir <folder>`; expectations of your own in the file are kept)"
)


class SuiteFileError(ValueError):
    """A suite file the gate cannot run as it stands; the message names the file and what to do."""


@dataclass(frozen=True)
class LoadedSuite:
    """One suite file as the gate runs it: the GX suite, its audit table and what the verdict needs to know."""

    path: Path
    suite: Any  # great_expectations.ExpectationSuite
    audit_table: str
    entity: str | None  # the catalogue entity, None for a user suite
    expectations: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return self.suite.name

    def describe(self) -> dict[str, Any]:
        """JSON-ready: suite, audit table, file and, per expectation in suite order, its type, kwargs,
        column, catalogue check id (None for user expectations), ``meta.severity`` and explicit GX severity."""
        return {"suite": self.name, "audit_table": self.audit_table, "file": self.path.name,
                "expectations": [dict(expectation) for expectation in self.expectations]}


def expectations_dir(suites_dir: str | Path | None = None) -> Path:
    """The suites folder: the argument, else ``$KAFKA_ZK_AUDIT_EXPECTATIONS``, else the packaged suites
    (the repo's ``expectations/``, shipped as ``kafka_zk_audit.expectations``)."""
    chosen = suites_dir or os.environ.get(EXPECTATIONS_ENV)
    return Path(chosen) if chosen else Path(str(resources.files("kafka_zk_audit.expectations")))


def suite_name(entity: str) -> str:
    return entity


def catalogue_expectation(check_id: str) -> dict[str, Any]:
    """The expectation of one catalogue check, as a suite file stores it."""
    import great_expectations.expectations as gxe

    check = BY_ID[check_id]
    data = gxe.ExpectColumnValuesToBeInSet(
        column=check.check_id,
        value_set=[False],
        severity=GX_SEVERITY[check.severity],
        description=f"{check.check_id} ({check.severity}): {check.meaning}",
        meta={"check_id": check.check_id, "severity": check.severity},
    ).configuration.to_json_dict()
    data.pop("id", None)
    return data


def build_suite_dict(entity: str, keep_from: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The suite of one entity, as GX stores it (``expectations/<entity>.json``).

    ``keep_from`` is the file's current content: its expectations that are not the catalogue's are kept
    after the catalogue's, and so are its ``notes`` and extra ``meta`` keys.
    """
    import great_expectations as gx

    check_ids = [check.check_id for check in CHECKS if check.entity == entity]
    kept = [
        expectation for expectation in (keep_from or {}).get("expectations") or []
        if isinstance(expectation, dict) and _catalogue_check_of(expectation, entity) is None
    ]
    meta = {key: value for key, value in ((keep_from or {}).get("meta") or {}).items()
            if key != "great_expectations_version"}
    meta.update({"entity": entity, "audit_table": f"audit_{entity}", "generated_by": "scripts/generate_suites.py"})
    data = gx.ExpectationSuite(name=suite_name(entity), meta=meta, notes=(keep_from or {}).get("notes")).to_json_dict()
    data.pop("id", None)
    data["expectations"] = [catalogue_expectation(check_id) for check_id in check_ids] + kept
    return data


def load_suites(severity_overrides: Mapping[str, str] | None = None,
                suites_dir: str | Path | None = None) -> list[LoadedSuite]:
    """Every ``*.json`` suite of the folder, catalogue suites first (in catalogue order), then the others by name.

    Raises ``SuiteFileError`` naming the file when a catalogue suite is missing, a catalogue check's
    expectation was dropped or changed, or GX cannot load a file (bad JSON, unknown expectation type,
    invalid arguments or severity) -- GX itself would drop such expectations and pass silently.
    Severity overrides from the settings are applied to the catalogue expectations.
    """
    folder = expectations_dir(suites_dir)
    if not folder.is_dir():
        raise SuiteFileError(f"suites folder {folder} does not exist")
    files = {path.stem: path for path in sorted(folder.glob("*.json")) if not path.name.startswith(".")}
    missing = [entity for entity in ENTITIES if suite_name(entity) not in files]
    if missing:
        names = ", ".join(f"{suite_name(entity)}.json" for entity in missing)
        raise SuiteFileError(f"suites folder {folder} lacks the catalogue suite(s) {names}; {REGENERATE_HINT}")
    catalogue_files = [(files[suite_name(entity)], entity) for entity in ENTITIES]
    user_files = [(path, None) for stem, path in files.items() if stem not in {suite_name(e) for e in ENTITIES}]
    suites = [_load_suite_file(path, entity, severity_overrides or {}) for path, entity in catalogue_files + user_files]
    seen: dict[str, Path] = {}
    for loaded in suites:
        if loaded.name in seen:
            raise SuiteFileError(f"{loaded.path} and {seen[loaded.name]} both name their suite {loaded.name!r}; "
                                 "suite names must be unique")
        seen[loaded.name] = loaded.path
    return suites


def _catalogue_check_of(expectation: Mapping[str, Any], entity: str | None) -> str | None:
    """The catalogue check an expectation of ``entity``'s suite stands for, by ``meta.check_id`` or column."""
    if entity is None or expectation.get("type") != CATALOGUE_EXPECTATION:
        return None
    meta = expectation.get("meta") if isinstance(expectation.get("meta"), dict) else {}
    kwargs = expectation.get("kwargs") if isinstance(expectation.get("kwargs"), dict) else {}
    for candidate in (meta.get("check_id"), kwargs.get("column")):
        if isinstance(candidate, str) and candidate in BY_ID and BY_ID[candidate].entity == entity:
            return candidate
    return None


def _read_suite_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SuiteFileError(f"suite file {path} cannot be read as JSON: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("expectations"), list):
        raise SuiteFileError(f"suite file {path} is not a Great Expectations suite: expected a JSON object "
                             "with an 'expectations' list (see expectations/brokers.json)")
    if not isinstance(data.get("meta", {}), dict | None):
        raise SuiteFileError(f"suite file {path}: 'meta' must be an object")
    return data


def _label(index: int, expectation: Any) -> str:
    kind = expectation.get("type") if isinstance(expectation, dict) else None
    return f"expectation #{index + 1} ({kind or 'no type'})"


def _check_expectation(index: int, raw: Any) -> str | None:
    """Why GX cannot load one expectation of a file, or None when it can."""
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    if not isinstance(raw, dict):
        return f"{_label(index, raw)} is not a JSON object"
    meta = raw.get("meta")
    if meta is not None and not isinstance(meta, dict):
        return f"{_label(index, raw)}: 'meta' must be an object"
    severity = (meta or {}).get("severity")
    if severity is not None and severity not in SEVERITIES:
        return f"{_label(index, raw)}: meta.severity is {severity!r}; use one of {', '.join(SEVERITIES)}"
    try:
        ExpectationConfiguration(**_without_ids(raw)).to_domain_obj()
    except Exception as error:  # noqa: BLE001 - GX raises many kinds; each one means "cannot load"
        message = getattr(error, "message", None) or str(error)
        return f"{_label(index, raw)}: GX cannot load it: {' '.join(message.split())}"
    return None


def _without_ids(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy without GX's store ids: the gate adds the suites to its context afresh every run."""
    return {key: value for key, value in data.items() if key != "id"}


def _json_ready(value: Any) -> Any:
    from great_expectations.util import convert_to_json_serializable

    return json.loads(json.dumps(convert_to_json_serializable(value)))


def _missing_catalogue_checks(entity: str, expectations: Iterable[Mapping[str, Any]]) -> list[str]:
    """One message per catalogue check of ``entity`` whose expectation is not in the file as generated."""
    by_column: dict[str, Mapping[str, Any]] = {}
    by_meta: dict[str, Mapping[str, Any]] = {}
    for expectation in expectations:
        kwargs, meta = expectation.get("kwargs") or {}, expectation.get("meta") or {}
        if expectation.get("type") == CATALOGUE_EXPECTATION and isinstance(kwargs.get("column"), str):
            by_column.setdefault(kwargs["column"], expectation)
        if isinstance(meta.get("check_id"), str):
            by_meta.setdefault(meta["check_id"], expectation)
    problems = []
    for check in (check for check in CHECKS if check.entity == entity):
        found = by_column.get(check.check_id)
        if found is None and check.check_id in by_meta:
            renamed = by_meta[check.check_id]
            column = (renamed.get("kwargs") or {}).get("column")
            problems.append(f"the expectation of check {check.check_id} ({check.severity}) is now "
                            f"{renamed.get('type')} on column {column!r}; the audit table's column is "
                            f"{check.check_id!r}")
        elif found is None:
            problems.append(f"check {check.check_id} ({check.severity}) has no expectation "
                            f"({CATALOGUE_EXPECTATION} on column {check.check_id!r}): it was dropped or renamed")
        elif (found.get("kwargs") or {}).get("value_set") != [False]:
            problems.append(f"the expectation of check {check.check_id} ({check.severity}) has value_set "
                            f"{(found.get('kwargs') or {}).get('value_set')!r}; it must be [false] "
                            "(True marks a violation)")
    return problems


def _load_suite_file(path: Path, entity: str | None, overrides: Mapping[str, str]) -> LoadedSuite:
    """Load and check one suite file; see ``load_suites``."""
    import great_expectations as gx

    data = _read_suite_file(path)
    problems = [problem for index, raw in enumerate(data["expectations"])
                if (problem := _check_expectation(index, raw))]
    if problems:
        raise SuiteFileError(f"suite file {path}: " + "; ".join(problems))
    meta = dict(data.get("meta") or {})
    name = data.get("name") or path.stem
    if not isinstance(name, str) or not SUITE_NAME.fullmatch(name):
        raise SuiteFileError(f"suite file {path}: the suite name {name!r} must be letters, digits, '_', '.' or '-'")
    if entity is not None:
        if name != suite_name(entity):
            raise SuiteFileError(f"suite file {path} names its suite {name!r}; the catalogue suite of "
                                 f"{entity} must be named {suite_name(entity)!r}")
        audit_table = f"audit_{entity}"
        if meta.get("audit_table", audit_table) != audit_table:
            raise SuiteFileError(f"suite file {path}: the catalogue suite of {entity} runs on {audit_table}, "
                                 f"not {meta['audit_table']!r}; put expectations on other tables in a suite "
                                 "file of their own")
        problems = _missing_catalogue_checks(entity, data["expectations"])
        if problems:
            raise SuiteFileError(f"suite file {path}: " + "; ".join(problems) + f"; {REGENERATE_HINT}")
    else:
        audit_table = meta.get("audit_table") or f"audit_{name}"
        if not isinstance(audit_table, str) or not AUDIT_TABLE_NAME.fullmatch(audit_table):
            raise SuiteFileError(f"suite file {path}: meta.audit_table is {audit_table!r}; name an audit table "
                                 "such as 'audit_brokers' (audit_<entity>)")
        if not data["expectations"]:
            raise SuiteFileError(f"suite file {path} has no expectations")
    meta["audit_table"] = audit_table

    expectations = []
    for raw in data["expectations"]:
        expectation = _without_ids(raw)
        check_id = _catalogue_check_of(expectation, entity)
        if check_id:  # the catalogue's severity, or the settings' override: never a stale file's
            severity = overrides.get(check_id) or BY_ID[check_id].severity
            expectation["meta"] = {**(expectation.get("meta") or {}), "severity": severity}
            expectation["severity"] = GX_SEVERITY[severity]
        elif (expectation.get("meta") or {}).get("severity") and "severity" not in expectation:
            expectation["severity"] = GX_SEVERITY[expectation["meta"]["severity"]]  # GX's own field agrees
        expectations.append(expectation)
    try:
        suite = gx.ExpectationSuite(name=name, expectations=expectations, meta=meta, notes=data.get("notes"),
                                    suite_parameters=data.get("suite_parameters"))
    except Exception as error:  # noqa: BLE001 - GX raises many kinds; each one means "cannot load"
        raise SuiteFileError(f"suite file {path}: GX cannot load it: {error}") from error
    if len(suite.expectations) != len(expectations):
        raise SuiteFileError(f"suite file {path} has {len(expectations)} expectations but GX loaded "
                             f"{len(suite.expectations)}")
    described = []
    for raw, loaded in zip(expectations, suite.expectations, strict=True):
        check_id = _catalogue_check_of(raw, entity)
        kwargs = _json_ready(loaded.configuration.kwargs)
        described.append({
            "type": loaded.expectation_type,
            "kwargs": kwargs,
            "column": kwargs.get("column"),
            "check_id": check_id,
            "severity": (raw.get("meta") or {}).get("severity"),
            "gx_severity": raw.get("severity"),
        })
    return LoadedSuite(path=path, suite=suite, audit_table=audit_table, entity=entity, expectations=tuple(described))
