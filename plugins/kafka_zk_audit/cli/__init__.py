"""``kafka-zk-audit``: one end-to-end run of the DAG from a shell (``main``), through ``airflow dags test``
(``runner``), and the stages one at a time, snapshot, audit, reaudit, readiness (``stages``) and history
(``history``), without Airflow; what they share: exit codes, messages, ``NAME=VALUE`` (``common``) and
spark-submit of the packaged apps (``spark``). Imports point one way: main → stages → history → spark → common."""
