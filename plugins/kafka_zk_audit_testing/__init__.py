"""Test and demo tools of kafka-zk-audit; the runtime package ``kafka_zk_audit`` never imports this one.

    zk_server         a real ZooKeeper server (Debian's package) on 127.0.0.1, started and stopped by pid
    simulator/        writes Kafka clusters of every era into ZooKeeper, with planted problems
                      (command line: ``python -m kafka_zk_audit_testing.simulator``)
    malformed_corpus  the malformed-znode cases of ``tests/data/malformed``
    range_assignment  the old consumer's range assignment, for the simulator's owner znodes
    spark_cluster     a Spark standalone master + workers on loopback
    receivers         SMTP and HTTP receivers on loopback for alert tests
    browser           headless Chromium for the Data Docs tests
"""
