"""The cluster simulator: writes a realistic Kafka cluster into a real ZooKeeper.

``Simulator(hosts).write(ClusterSpec(...))`` writes a healthy cluster of one Kafka era in that
era's encodings, with every ephemeral node held by its owner's session; ``plant(check_id)`` adds
one problem of the check catalogue, ``advance()`` lets time pass, ``recreate_topic()`` deletes and
recreates a topic, ``close()`` ends every session. The command line is ``python -m kafka_zk_audit_testing.simulator``.
"""

from kafka_zk_audit_testing.simulator.cluster import Simulator
from kafka_zk_audit_testing.simulator.planting import Planted
from kafka_zk_audit_testing.simulator.plants import PLANTERS
from kafka_zk_audit_testing.simulator.spec import ERAS, ClusterSpec, Era
from kafka_zk_audit_testing.simulator.writer import WriteCounts

__all__ = ["ERAS", "PLANTERS", "ClusterSpec", "Era", "Planted", "Simulator", "WriteCounts"]
