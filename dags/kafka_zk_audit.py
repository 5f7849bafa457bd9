"""kafka-zk-audit: the Airflow DAG ``kafka_zk_audit``, auditing the metadata Kafka keeps in ZooKeeper.

Copy this file into your DAGs folder; the DAG itself is built by the installed ``kafka_zk_audit`` package.
"""

from kafka_zk_audit.airflow.dag import build_dag

dag = build_dag()
