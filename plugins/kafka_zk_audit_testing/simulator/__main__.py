"""``python -m kafka_zk_audit_testing.simulator``: the simulator's command line (see ``cli``)."""

import sys

from kafka_zk_audit_testing.simulator.cli import main

sys.exit(main())
