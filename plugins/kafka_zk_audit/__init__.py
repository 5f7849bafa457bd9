"""kafka-zk-audit: governance audits of the metadata Kafka keeps in ZooKeeper."""

__version__ = "0.1.0"
