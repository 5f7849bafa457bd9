"""Provider metadata: makes the ``zookeeper`` connection type known to Airflow's UI."""

from __future__ import annotations

from kafka_zk_audit import __version__


def get_provider_info() -> dict:
    return {
        "package-name": "kafka-zk-audit",
        "name": "kafka-zk-audit",
        "description": "Governance audits of the metadata Kafka keeps in ZooKeeper.",
        "versions": [__version__],
        "hooks": [{"integration-name": "ZooKeeper", "python-modules": ["kafka_zk_audit.airflow.hooks.zookeeper"]}],
        "connection-types": [
            {"connection-type": "zookeeper", "hook-class-name": "kafka_zk_audit.airflow.hooks.zookeeper.ZooKeeperHook"}
        ],
    }
