"""ZooKeeper → snapshot: every znode with its data and stat as Parquet, ``_MANIFEST.json`` last.

In: an ensemble's connection settings (``connection``) or its files (``files/``), and how to walk
(``contract.snapshot_options``). Out: ``<warehouse>/snapshots/snapshot_id=<id>/``. Two sources, one table
(``contract.snapshot_table``): the live walk (kazoo only: ``live`` takes the snapshot, ``walker`` is the stat-guided
walk, its reads sent by ``requests`` (``multiread`` the multiRead request) and resumed by ``faults``, ``parallel`` the
opt-in walk over several connections, ``acls`` Kafka's znode ACLs) and ZooKeeper's snapshot and log files
(``files``). Both fingerprint secrets (``secrets``), take their ids with ``ids`` and write with ``writer``.
``targets`` plans which source each cluster of a run reads. No Airflow.
"""
