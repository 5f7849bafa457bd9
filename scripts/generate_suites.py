"""Write the Great Expectations suites in expectations/ from the check catalogue.

    .venv/bin/python scripts/generate_suites.py

One suite per entity, one named expectation per check; re-run after changing the catalogue.
"""

from __future__ import annotations

import json

from kafka_zk_audit.contract.catalogue import ENTITIES
from kafka_zk_audit.gate.suites import build_suite_dict, expectations_dir, suite_name


def main() -> None:
    folder = expectations_dir()
    folder.mkdir(exist_ok=True)
    for entity in ENTITIES:
        path = folder / f"{suite_name(entity)}.json"
        path.write_text(json.dumps(build_suite_dict(entity), indent=2, sort_keys=True) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
