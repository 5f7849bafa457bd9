"""Manifest + audit figures + gate verdict → ``runs/<id>/summary.json`` and the alert's content.

Pure message building; delivery is the Airflow notifier's job (``kafka_zk_audit.airflow.notifications``).
"""
