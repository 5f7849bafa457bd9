"""``kafka-zk-audit``: one end-to-end run of the DAG from a shell (``main``),
through ``airflow dags test`` (``runner``)."""
