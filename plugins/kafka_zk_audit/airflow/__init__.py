"""The Airflow layer, the only code that imports Airflow: hooks, operators, the alert notifier, the DAG and Airflow's
command line as the CLI starts it (``command_line``).

Each operator gathers its inputs, makes one call into a stage below and pushes to XCom or raises.
"""
