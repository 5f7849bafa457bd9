"""spark-submit entry point: reaudit the stored snapshots of the warehouse.

    spark-submit reaudit_snapshots.py --warehouse DIR --reaudit-id ID [--cluster NAME ...] [--since T] [--until T]
                                      [--config FILE]

Ships in the package as ``kafka_zk_audit.spark_apps``; ``kafka-zk-audit reaudit`` finds it with importlib.resources.
"""

import sys

from kafka_zk_audit.audit.reaudit import main

if __name__ == "__main__":
    sys.exit(main())
