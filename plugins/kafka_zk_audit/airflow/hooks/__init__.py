"""Airflow hooks of kafka-zk-audit."""
