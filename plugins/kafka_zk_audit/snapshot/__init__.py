"""ZooKeeper → snapshot: every znode with its data and stat as Parquet, ``_MANIFEST.json`` last.

In: an ensemble's connection settings (``connection``). Out: ``<warehouse>/snapshots/snapshot_id=<id>/``.
kazoo only (``multiread`` is the multiRead request, ``walker`` the stat-guided walk and writer,
``parallel`` the opt-in walk over several connections); no Airflow.
"""
