"""spark-submit entry point: reaudit the stored snapshots of the warehouse.

    spark-submit reaudit_snapshots.py --warehouse DIR --reaudit-id ID [--cluster NAME ...] [--since T] [--until T]
                                      [--config FILE]

Ships in the package as ``kafka_zk_audit.spark_apps``; ``kafka-zk-audit reaudit`` finds it with importlib.resources.
"""

import sys

from kafka_zk_audit.audit.launch import installed_pyspark_first
from kafka_zk_audit.contract.process import end_process

if __name__ == "__main__":
    installed_pyspark_first()  # before PySpark's first import: see kafka_zk_audit.audit.launch
    from kafka_zk_audit.audit.reaudit import main

    # the process ends once the app's work is done: its session and interpreter are not torn down one by one
    end_process(main(sys.argv[1:], stop_session=False))
