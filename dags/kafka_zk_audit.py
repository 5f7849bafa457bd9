"""kafka-zk-audit: the Airflow DAGs ``kafka_zk_audit`` (scheduled) and ``kafka_zk_audit_events``
(when the settings' ``events`` are on), auditing the metadata Kafka keeps in ZooKeeper.

Copy this file into your DAGs folder; the DAGs are built by the installed ``kafka_zk_audit`` package.
"""

from kafka_zk_audit.airflow.dag import build_dag, build_event_dag

dag = build_dag()
events_dag = build_event_dag()  # None when events are off: no second DAG
