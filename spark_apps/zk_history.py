"""spark-submit entry point: the history of ZooKeeper's own files (transaction logs) between runs.

    spark-submit zk_history.py --warehouse DIR --files DIR [--log-dir DIR] [--cluster NAME] [--chroot /x]
                               [--history-id ID] [--min-interval 1s] [--from-zxid N] [--to-zxid N]

Ships in the package as ``kafka_zk_audit.spark_apps``; ``kafka-zk-audit history`` finds it with importlib.resources.
"""

import sys

from kafka_zk_audit.audit.launch import installed_pyspark_first
from kafka_zk_audit.contract.process import end_process

if __name__ == "__main__":
    installed_pyspark_first()  # before PySpark's first import: see kafka_zk_audit.audit.launch
    from kafka_zk_audit.history.job import main

    # the process ends once the app's work is done: its session and interpreter are not torn down one by one
    end_process(main(sys.argv[1:], stop_session=False))
