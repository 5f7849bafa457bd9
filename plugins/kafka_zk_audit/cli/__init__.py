"""``kafka-zk-audit``: one end-to-end run of the DAG from a shell (``main``), through ``airflow dags test``
(``runner``), and the stages one at a time, snapshot, audit and reaudit, without Airflow (``stages``)."""
