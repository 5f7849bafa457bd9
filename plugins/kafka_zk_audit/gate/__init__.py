"""Audit tables → Great Expectations checkpoint → verdict by severity, and the Data Docs site.

In: ``audit_<entity>`` tables and the suites (``suites``). Out: validation results under ``<warehouse>/gx``,
``<warehouse>/data_docs`` (``docs_assets`` makes it work offline) and the verdict (``verdict``). No Airflow.
"""
