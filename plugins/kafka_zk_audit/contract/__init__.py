"""What every stage agrees on: check catalogue, table schemas, warehouse layout and audit settings.

No Airflow, kazoo, Spark session or Great Expectations here; every other stage imports from this one.
"""
