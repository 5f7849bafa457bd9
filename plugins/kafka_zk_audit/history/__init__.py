"""Audited snapshots → history: what happened between runs, from ZooKeeper's own transaction logs.

In: a cluster's logs (through the files source, ``snapshot.files``) and the audit's parsers (``audit.normalize``,
public helpers only). Out: ``<warehouse>/history/<history_id>/``. ``changes`` (the change table, decoded
column-wise by ``txncolumns``), ``intervals`` (the broken-state intervals and timelines), ``job`` (the history app's
steps) and ``task`` (the DAG's history task: its window and the app's arguments). Spark; no Airflow.
"""
