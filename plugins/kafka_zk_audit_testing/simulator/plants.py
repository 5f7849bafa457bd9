"""Plant one problem of the check catalogue into a simulated cluster, on a subject of its own.

Every plant of a topic writes a new topic ``planted-<check_id>`` that is healthy apart from the
problem (assignment, states whose leader is alive and in the isr, ``/config/topics/<t>``); every
plant of a group writes a group ``planted-<check_id>`` on its own topic; every plant of a broker
uses new broker ids (1001 up, never reused). So plants coexist without touching each other.

``Planted.path`` is the path of the audit's finding: the state znode for a state problem; the topic
znode for an assignment problem (unknown or duplicate replica, inconsistent RF) and for a missing
state or config; the owner node's path, existing or not, for owner problems (``…/owners/<t>/0`` for
a multiply owned partition 0, the first of its claims); the queue's parent for a backlog.

``implied`` lists the other checks a plant cannot help triggering on the same subject:

* leader_not_in_isr (partition 0: the preferred replica leads, the isr holds the other replicas):
  under_replicated.
* leader_not_alive (partition 0: the leader, first replica and isr member is an unregistered
  broker): replica_on_unknown_broker.
* reassignment_invalid (an entry whose target names an unregistered broker): reassignment_stuck,
  once the znode is older than its SLA.
* owner_not_registered (partition 1's owner node names a consumer whose ids node is gone):
  owner_assignment_mismatch, since no registered thread can be the range assignment's owner.
* controller_epoch_regressed (/controller_epoch lowered by one): partition_epoch_ahead_of_controller
  on other subjects, only when a partition state already carries the current epoch (after
  ``advance()`` or ``recreate_topic()``).

Everything else implies nothing. This assumes owner_assignment_mismatch compares existing
``owners/<t>/<p>`` nodes with the range assignment (a missing owner is partition_unowned, a
pykafka-style ``<broker>-<p>`` node is left to partition_multiply_owned), and that leader -1 counts
as "no leader" for the leader checks (``offline_partition`` keeps a full isr).

Global znodes make some plants exclusive:

* ``controller_missing``, ``controller_not_alive`` and ``controller_session_mismatch`` all rewrite
  /controller: one at a time. A later one replaces the earlier (whose problem is then gone and
  which leaves ``Simulator.planted``). While one is planted, ``advance()`` does not move the
  controller.
* ``reassignment_stuck`` and ``reassignment_invalid`` add entries to the one
  /admin/reassign_partitions znode; they combine, and its ctime is that of the first.
* ``controller_epoch_regressed`` lowers /controller_epoch for the whole cluster;
  ``partition_epoch_ahead_of_controller`` keeps its state one epoch ahead of /controller_epoch
  through ``advance()``.

History plants (``leader_epoch_regressed``, ``offset_regressed``, ``controller_epoch_regressed``)
lower a value that the caller's previous snapshot must already hold, so they act on the base
cluster: the first topic's partition with a leader epoch above 0, the first group's first offset,
and /controller_epoch. Snapshot before ``plant()`` and after.

The plants themselves are ``partition_plants``, ``cluster_plants`` and ``group_plants``, which register on the
simulator (``registry.PLANTERS``) as this module imports them; what they stand on (healthy topics and states) is
``planting``. The simulator looks its plants up in the registry and imports none of these modules.
"""

from __future__ import annotations

from kafka_zk_audit.contract.catalogue import CHECK_IDS, KRAFT_CHECK_IDS
from kafka_zk_audit_testing.simulator import cluster_plants, group_plants, partition_plants
from kafka_zk_audit_testing.simulator.registry import PLANTERS

PLANT_MODULES = (partition_plants, cluster_plants, group_plants)  # imported to register their planters


# The health checks of a ZK -> KRaft migration in flight need the cluster in a migration phase, not a plant on a
# healthy cluster: the phases of migration_phases (waiting, initial load, dual writes, reverted) make those.
MIGRATION_HEALTH_CHECKS = frozenset(check_id for check_id in CHECK_IDS if check_id.startswith("migration_"))
# The KRaft checks judge a KRaft metadata log, which a ZooKeeper tree cannot hold: kafka_zk_audit_testing.kraft_logs
# plants them in generated logs.
KRAFT_CHECKS = frozenset(KRAFT_CHECK_IDS)
missing = set(CHECK_IDS) - set(PLANTERS) - MIGRATION_HEALTH_CHECKS - KRAFT_CHECKS
if missing:  # pragma: no cover - a catalogue change without a plant
    raise RuntimeError(f"no plant for: {', '.join(sorted(missing))}")
