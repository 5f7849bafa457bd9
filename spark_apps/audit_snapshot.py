"""spark-submit entry point: audit one snapshot of the warehouse.

    spark-submit audit_snapshot.py --warehouse DIR --snapshot-id ID [--config FILE]

Ships in the package as ``kafka_zk_audit.spark_apps``; the DAG finds it with importlib.resources.
"""

import sys

from kafka_zk_audit.audit.job import main

if __name__ == "__main__":
    sys.exit(main())
