"""The Airflow layer, the only code that imports Airflow: hooks, operators, the alert notifier and the DAG.

Each operator gathers its inputs, makes one call into a stage below and pushes to XCom or raises.
"""
