"""spark-submit entry points of kafka-zk-audit (thin: the work is in ``kafka_zk_audit.audit``)."""
