"""kafka-zk-audit: audits of the metadata Kafka keeps in ZooKeeper, one folder per stage.

    snapshot/  ZooKeeper ──kazoo──▶ snapshot Parquet + manifest (every znode and its stat); or ZooKeeper's own
               snapshot and log files (files/) ──▶ the same snapshot at any retained zxid
    audit/     snapshot ──Spark──▶ normalized tables ──▶ checks ──▶ findings (with history), audit tables
    gate/      audit tables ──Great Expectations──▶ verdict by severity, Data Docs
    report/    manifest + audit figures + verdict ──▶ summary.json, alert content
    history/   ZooKeeper's transaction logs ──Spark──▶ the change table ──▶ intervals of broken invariants between
               runs, failover and leadership timelines
    airflow/   hooks, operators, notifier and the DAG that chain the stages (the only Airflow code)
    cli/       ``kafka-zk-audit``: one DAG run from a shell
    contract/  what every stage agrees on: check catalogue, table schemas, warehouse layout, settings

Imports point down: ``airflow/`` and ``cli/`` → ``history/`` → ``report/``, ``gate/``, ``audit/``, ``snapshot/`` →
``contract/``.
Test and demo tools (simulator, local ZooKeeper server) live in ``kafka_zk_audit_testing``, which
nothing here imports.
"""

__version__ = "0.2.0"
