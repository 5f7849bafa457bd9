"""Write the catalogue's Great Expectations suites from the check catalogue.

    .venv/bin/python scripts/generate_suites.py [--suites-dir FOLDER]

One suite per entity, one named expectation per check, into ``expectations/`` (or FOLDER, else
``$KAFKA_ZK_AUDIT_EXPECTATIONS``); re-run after changing the catalogue. Expectations of your own in those
files, their notes and extra meta keys are kept; suite files of your own are left alone.
"""

from __future__ import annotations

import argparse
import json

from kafka_zk_audit.contract.catalogue import ENTITIES
from kafka_zk_audit.gate.suites import build_suite_dict, expectations_dir, suite_name


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="write the catalogue's GX suites")
    parser.add_argument("--suites-dir", default=None, help="suites folder (default: the packaged expectations/)")
    folder = expectations_dir(parser.parse_args(argv).suites_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for entity in ENTITIES:
        path = folder / f"{suite_name(entity)}.json"
        try:
            current = json.loads(path.read_text()) if path.exists() else None
        except json.JSONDecodeError as error:
            raise SystemExit(f"{path} is not valid JSON ({error}); fix or remove it, then re-run") from error
        suite = build_suite_dict(entity, keep_from=current if isinstance(current, dict) else None)
        path.write_text(json.dumps(suite, indent=2, sort_keys=True) + "\n")
        kept = len(suite["expectations"]) - sum(1 for e in suite["expectations"] if "check_id" in (e.get("meta") or {}))
        print(f"wrote {path}" + (f" (kept {kept} expectation(s) of your own)" if kept else ""))


if __name__ == "__main__":
    main()
