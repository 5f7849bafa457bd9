"""kafka-zk-audit: the Airflow DAG ``kafka_zk_audit`` auditing the metadata Kafka keeps in ZooKeeper.

The DAG is built by the ``kafka_zk_audit`` package; see its ``dag`` module and the README.
"""

from kafka_zk_audit.dag import build_dag

dag = build_dag()
