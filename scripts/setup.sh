#!/usr/bin/env bash
# Set up everything kafka-zk-audit needs, from a fresh machine: system packages, then .venv/ in the
# repo with the pinned set from constraints.txt, full pyspark installed last (see the README, "Installing into your Airflow").
# Re-running is cheap: the venv is rebuilt only when setup.cfg or constraints.txt change.
# Last, the Data Docs assets (jQuery, Bootstrap, Vega... pinned in docs_assets.lock.json) come from the npm
# registry (scripts/fetch_docs_assets.py) so the docs work offline; fetched again only when missing, partial or
# re-pinned.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system.sh
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
stamp=.venv/.kafka-zk-audit-installed
want=$(cat setup.cfg constraints.txt | sha256sum | cut -d' ' -f1)
docs_assets() {
  .venv/bin/python -c 'import sys; from kafka_zk_audit.gate.docs_assets import is_fetched; sys.exit(not is_fetched())' \
    || .venv/bin/python scripts/fetch_docs_assets.py fetch
}
dev_path() {
  # the test and demo tools (plugins/kafka_zk_audit_testing) are not part of the installed package:
  # put plugins/ on the venv's path so tests, the demo and their subprocesses import them
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$PWD/plugins" > "$site/kafka_zk_audit_testing.pth"
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  dev_path
  docs_assets
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
echo "installing Python packages into .venv (first time takes a few minutes)"
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -c constraints.txt -e ".[test]"
# pyspark-client (pulled in by the Spark provider) writes into the same pyspark/ package:
# put the full pyspark back on top of it so in-process Spark (the GX gate) runs one version.
.venv/bin/python -m pip install -q --force-reinstall --no-deps -c constraints.txt pyspark
.venv/bin/python -c "import pyspark, sys; v = pyspark.__version__; sys.exit(0 if v == '4.3.0' else f'pyspark {v} != 4.3.0')"
dev_path
echo "$want" > "$stamp"
docs_assets
