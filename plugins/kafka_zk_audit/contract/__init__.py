"""What every stage agrees on, each concept defined once: the check catalogue (``catalogue``: one spec per check) and
the remedies, table schemas (``schemas``, the snapshot table's columns in ``snapshot_table``), the snapshot options
(``snapshot_options``), the readiness conditions and migration phases (``readiness``), the drift row (``drift``),
the warehouse layout, its locks and retention, which data is secret (``secrets``) and the audit settings
(``settings/``).

No Airflow, kazoo, Spark session or Great Expectations here; every other stage imports from this one.
"""
