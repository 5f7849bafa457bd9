"""Snapshot → normalized tables → checks → findings (with history) and audit tables, in one Spark app.

In: one complete snapshot. Out: ``<warehouse>/tables/<table>/``, ``<warehouse>/findings/`` and
``runs/<id>/audit.json``. ``job.main`` is what spark-submit runs; ``normalize/`` has one module per znode
family, ``checks/`` one function per check id (pure DataFrame → DataFrame).
"""
