"""Airflow operators of kafka-zk-audit: thin layers over the library modules."""
