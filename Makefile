# kafka-zk-audit: `make demo` and `make test` do all set-up on a fresh machine.
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export GX_ANALYTICS_ENABLED := false
export SPARK_LOCAL_IP := 127.0.0.1
# Python's default, whatever the shell says: each module compiled once into its __pycache__ (gitignored), not again in
# every process. `make test` starts about 160 Python processes; with PYTHONDONTWRITEBYTECODE set, each compiled the
# checkout's modules it imports from source, and each pytest worker rewrote the asserts of the 144 files pytest
# rewrites (its collection 9.4 -> 5.8 s). pip compiles the venv's packages at install either way. (engineering-notes.md)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup demo test lint unit coverage bench bench-load suites docs clean

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

# three pytest-xdist workers, fed module by module, the modules of each shared whole-DAG run together and the modules
# of the in-process Spark session together (tests/conftest.py): the workers start with the two whole-DAG runs and the
# one JVM of the in-process Spark tests, then share the rest. PYTEST_ARGS adds options, e.g. PYTEST_ARGS="-k fleet";
# PYTEST_XDIST="-n 0": one process.
PYTEST_XDIST ?= -n 3

# the Data Docs test opens the site in Debian's headless Chromium: install it with the rest
test: export KAFKA_ZK_AUDIT_WITH_CHROMIUM := 1
test: setup lint
	$(PY) -m pytest -ra --durations=15 $(PYTEST_XDIST) $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest -ra -m "not dag" $(PYTEST_XDIST) $(PYTEST_ARGS)

# line coverage of plugins/ over the whole suite, subprocesses included ([tool.coverage.*] in pyproject.toml):
# the total, then the modules below 80 %
coverage: export KAFKA_ZK_AUDIT_WITH_CHROMIUM := 1
coverage: setup
	rm -f .coverage .coverage.*
	$(PY) -m coverage run -m pytest -ra $(PYTEST_XDIST) $(PYTEST_ARGS)
	$(PY) -m coverage combine -q
	$(PY) -m coverage report --skip-covered --fail-under=0 | awk 'NR <= 2 || $$NF + 0 < 80 || /^TOTAL/'

lint: setup
	$(VENV)/bin/ruff check .

# every speed figure and its target in one run, written into docs/performance.md (with the date, the commit and the
# machine) and its summary into the README (BENCH_ARGS=--quick: small trees, to check the benchmark); the keyed audit
# over 1, 10 and 100 clusters against one
# and the DAG run over 100 clusters against one (BENCH_FLEET_ARGS="--dag 0" skips it); then ZooKeeper's files:
# offline rebuild vs live walk at 1M znodes, and the change table of the history app; the event-driven audits'
# watches (idle CPU of 100 clusters, a burst's debounce, the alert latency under a real scheduler and triggerer).
# After bench_all, the audit's fixed cost against a bare spark-submit app, its own block of docs/performance.md and its
# rows of the README (BENCH_FLOOR_ARGS=--quick: one round of each; --large: the audit app on 1M znodes too)
BENCH_FLEET_ARGS ?= --dag 100
bench: setup
	$(PY) bench/bench_all.py --write-docs $(BENCH_ARGS)
	$(PY) bench/bench_audit_floor.py --write-docs $(BENCH_FLOOR_ARGS)
	$(PY) bench/bench_fleet.py $(BENCH_FLEET_ARGS)
	$(PY) bench/bench_offline.py
	$(PY) bench/bench_history.py
	$(PY) bench/bench_events.py
	$(PY) bench/bench_kraft.py
	$(PY) bench/bench_migration_diff.py

# what a Kafka-like client sees while a 1,000,000-znode snapshot runs (BENCH_LOAD_ARGS=--quick: 100,000)
bench-load: setup
	$(PY) bench/bench_load.py $(BENCH_LOAD_ARGS)

suites: setup
	$(PY) scripts/generate_suites.py

# docs/checks.md from the check catalogue and the remedies (tests/contract/test_docs.py fails when it is stale)
docs: setup
	$(PY) scripts/generate_docs.py

clean:
	rm -rf warehouse .zookeeper .airflow
