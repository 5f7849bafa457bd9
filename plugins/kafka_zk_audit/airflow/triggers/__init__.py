"""Triggers that run in Airflow's triggerer: the watch of a cluster's Kafka metadata (event-driven audits)."""
