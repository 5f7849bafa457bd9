"""ZooKeeper → snapshot: every znode with its data and stat as Parquet, ``_MANIFEST.json`` last.

In: an ensemble's connection settings (``connection``) or its files (``files/``). Out:
``<warehouse>/snapshots/snapshot_id=<id>/``. Two sources, one table: the live walk (kazoo only: ``multiread`` is
the multiRead request, ``walker`` the stat-guided walk and writer, ``parallel`` the opt-in walk over several
connections) and ZooKeeper's snapshot and log files (``files``). ``targets`` plans which source each cluster of a
run reads. No Airflow.
"""
