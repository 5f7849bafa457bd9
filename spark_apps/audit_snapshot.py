"""spark-submit entry point: audit one snapshot of the warehouse.

    spark-submit spark_apps/audit_snapshot.py --warehouse DIR --snapshot-id ID [--config FILE]
"""

from __future__ import annotations

import argparse
import logging
import sys

from kafka_zk_audit.audit_job import run_audit
from kafka_zk_audit.sparkutil import get_spark
from kafka_zk_audit.warehouse import Warehouse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--snapshot-id", required=True)
    parser.add_argument("--config", default=None, help="audit settings file (default: packaged defaults)")
    parser.add_argument("--no-reread", action="store_true",
                        help="run the checks on the normalizer's frames, not the written tables (benchmark baseline)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spark = get_spark(f"kafka-zk-audit {args.snapshot_id}")
    try:
        run_audit(spark, Warehouse(args.warehouse), args.snapshot_id, args.config or None,
                  reread_tables=not args.no_reread)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
