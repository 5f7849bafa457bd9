"""ZooKeeper access: the Airflow-free connection settings and the multiRead request."""
