"""The Great Expectations suites: one per entity, one named expectation per check of the catalogue.

Each entity's audit table (``audit_<entity>``) has one boolean column per check of that entity, True where
the invariant is violated; its suite holds ``expect_column_values_to_be_in_set [false]`` for each, with the
catalogue's severity (critical/error → GX ``critical``, warning → ``warning``, info → ``info``).
``scripts/generate_suites.py`` writes them from the catalogue into ``expectations/``.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.catalogue import CHECKS, ENTITIES

EXPECTATIONS_ENV = "KAFKA_ZK_AUDIT_EXPECTATIONS"
GX_SEVERITY = {"critical": "critical", "error": "critical", "warning": "warning", "info": "info"}


def expectations_dir(suites_dir: str | Path | None = None) -> Path:
    """The suites folder: the argument, else ``$KAFKA_ZK_AUDIT_EXPECTATIONS``, else the packaged suites
    (the repo's ``expectations/``, shipped as ``kafka_zk_audit.expectations``)."""
    chosen = suites_dir or os.environ.get(EXPECTATIONS_ENV)
    return Path(chosen) if chosen else Path(str(resources.files("kafka_zk_audit.expectations")))


def suite_name(entity: str) -> str:
    return entity


def build_suite_dict(entity: str) -> dict[str, Any]:
    """The suite of one entity, as GX stores it (used to generate ``expectations/*.json``)."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    suite = gx.ExpectationSuite(
        name=suite_name(entity),
        meta={"entity": entity, "audit_table": f"audit_{entity}", "generated_by": "scripts/generate_suites.py"},
        expectations=[
            gxe.ExpectColumnValuesToBeInSet(
                column=check.check_id,
                value_set=[False],
                severity=GX_SEVERITY[check.severity],
                description=f"{check.check_id} ({check.severity}): {check.meaning}",
                meta={"check_id": check.check_id, "severity": check.severity},
            )
            for check in CHECKS
            if check.entity == entity
        ],
    )
    data = suite.to_json_dict()
    data.pop("id", None)
    for expectation in data["expectations"]:
        expectation.pop("id", None)
    return data


def load_suites(severity_overrides: dict[str, str] | None = None, suites_dir: str | Path | None = None) -> list:
    """Read every suite file and check it lost nothing on the way (GX drops unknown types)."""
    import great_expectations as gx

    overrides = severity_overrides or {}
    suites = []
    for entity in ENTITIES:
        path = expectations_dir(suites_dir) / f"{suite_name(entity)}.json"
        if not path.exists():
            raise FileNotFoundError(f"suite {path} is missing; regenerate with: python scripts/generate_suites.py")
        data = json.loads(path.read_text())
        expected = len(data.get("expectations", []))
        for expectation in data["expectations"]:
            check_id = expectation.get("meta", {}).get("check_id")
            if check_id in overrides:
                expectation["severity"] = GX_SEVERITY[overrides[check_id]]
                expectation["meta"]["severity"] = overrides[check_id]
        suite = gx.ExpectationSuite(**data)
        if len(suite.expectations) != expected:
            raise RuntimeError(f"suite {path} has {expected} expectations but {len(suite.expectations)} loaded")
        suites.append(suite)
    return suites
