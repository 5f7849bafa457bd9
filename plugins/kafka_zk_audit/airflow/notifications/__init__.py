"""Airflow notifiers of kafka-zk-audit."""
