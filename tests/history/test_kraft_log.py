"""The history of a KRaft cluster from its metadata log: intervals bounded by the records that opened and closed them.

The scenario is written record by record (kafka_zk_audit_testing.kraft_logs): the expected offsets and times are the
ones the test wrote, not computed by the code under test.
"""

from __future__ import annotations

import json

import pytest

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.history.kraft_log import replay_log_history, write_kraft_history
from kafka_zk_audit.snapshot.kraft.batches import iter_batches
from kafka_zk_audit_testing.kraft_logs import BATCH_GAP_MS, LEADER_CHANGE, T0, KraftCluster
from tests.snapshot.kraft.real_kraft import EXPECTED, needs_real_kraft

# the real metadata dirs whose log holds nothing yet, by the independent reader's counts (no checkpoint beside them)
EMPTY_LOGS = [row.file.parent for row in EXPECTED if row.records == 0 and row.file.suffix == ".log"]


def _offset_of_next(cluster: KraftCluster) -> int:
    return sum(len(batch.records) for batch in cluster.batches)


def _time_of_next(cluster: KraftCluster, gap_ms: int = BATCH_GAP_MS) -> int:
    return T0 + sum(batch.gap_ms for batch in cluster.batches) + gap_ms


def test_an_isr_shrink_and_a_failover_are_intervals_bounded_by_their_records(tmp_path):
    cluster = KraftCluster()
    shrink_offset, shrink_time = _offset_of_next(cluster), _time_of_next(cluster)
    cluster.change("topic-0", 0, Isr=[1, 2])  # replica 3 leaves the ISR: under-replicated
    cluster.noops(4)
    heal_offset, heal_time = _offset_of_next(cluster), _time_of_next(cluster)
    cluster.change("topic-0", 0, Isr=[1, 2, 3])
    last_offset, last_time = heal_offset + 2, heal_time + 2 * BATCH_GAP_MS
    cluster.noops(2)
    failover_offset, failover_time = _offset_of_next(cluster), _time_of_next(cluster, 30_000)
    cluster.add([(LEADER_CHANGE, 0, {"Version": 0, "LeaderId": 3001, "Voters": [{"VoterId": 3001}],
                                     "GrantingVoters": [{"VoterId": 3001}]})], control=True, gap_ms=30_000)
    cluster.change("topic-1", 1, Leader=-1)  # offline from here to the end
    root = cluster.write(tmp_path / "metadata")
    # a new leader epoch: the failover's batch and everything after it are written in epoch 6
    data = (root / "__cluster_metadata-0").glob("*.log")
    _rewrite_epochs(sorted(data), from_offset=failover_offset, epoch=6)

    tracker, span = replay_log_history(root)
    rows = {(r["check_id"], r["topic"], r["partition"]): r for r in tracker.intervals()}
    shrunk = rows[("interval_under_replicated", "topic-0", 0)]
    assert (shrunk["start_zxid"], shrunk["end_zxid"]) == (shrink_offset, heal_offset)
    assert shrunk["duration_ms"] == heal_time - shrink_time
    gap = rows[("interval_quorum_leader_missing", None, None)]
    assert (gap["start_zxid"], gap["end_zxid"], gap["duration_ms"]) == (last_offset, failover_offset,
                                                                         failover_time - last_time)
    offline = rows[("interval_offline_partition", "topic-1", 1)]
    assert (offline["start_zxid"], offline["end_zxid"]) == (failover_offset + 1, None)
    assert len(rows) == 3 and span["last_zxid"] == failover_offset + 1

    warehouse = Warehouse(str(tmp_path / "wh"))
    summary = write_kraft_history(warehouse, str(root), history_id="20261128T000000Z-h1", cluster="k",
                                  min_interval_ms=0)
    assert json.loads((tmp_path / "wh" / "history" / "20261128T000000Z-h1" / "history.json").read_text()) == summary
    assert summary["checks"] == {"interval_offline_partition": {"listed": 1, "short": 0},
                                 "interval_quorum_leader_missing": {"listed": 1, "short": 0},
                                 "interval_under_replicated": {"listed": 1, "short": 0}}
    # the next history starts after this one's end: only the interval still open is listed again; none is written
    # while the log has nothing new
    assert write_kraft_history(warehouse, str(root), history_id="20261128T000001Z-h2", cluster="k",
                               from_offset=summary["last_zxid"] + 1) is None
    again = write_kraft_history(warehouse, str(root), history_id="20261128T000002Z-h3", cluster="k",
                                from_offset=heal_offset + 1, min_interval_ms=0)
    assert set(again["checks"]) == {"interval_offline_partition", "interval_quorum_leader_missing"}


def _rewrite_epochs(segments, from_offset: int, epoch: int) -> None:
    """Set the partitionLeaderEpoch (bytes 12–16, not covered by the CRC) of every batch from ``from_offset`` on."""
    for path in segments:
        data = bytearray(path.read_bytes())
        for batch in iter_batches(bytes(data), str(path), decode=False):
            if batch.base_offset >= from_offset:
                data[batch.position + 12:batch.position + 16] = epoch.to_bytes(4, "big")
        path.write_bytes(bytes(data))


@needs_real_kraft
@pytest.mark.parametrize("partition", EMPTY_LOGS, ids=lambda path: path.parent.name)
def test_a_real_log_that_holds_no_record_yet_has_an_empty_history(partition, tmp_path):
    assert [f.stat().st_size for f in partition.glob("*.log")] == [0] and not list(partition.glob("*.checkpoint"))
    tracker, span = replay_log_history(partition.parent)
    assert tracker.intervals() == [] and span["records"] == 0 and span["last_zxid"] is None, span

    summary = write_kraft_history(Warehouse(str(tmp_path / "wh")), str(partition.parent),
                                  history_id="20261129T000000Z-empty", cluster="empty")
    assert (summary["txns"], summary["checks"], summary["log_errors"]) == (0, {}, []), summary
    assert (tmp_path / "wh" / "history" / "20261129T000000Z-empty" / "timeline.html").is_file()
    # a later history of the same empty log has nothing new to write
    assert write_kraft_history(Warehouse(str(tmp_path / "wh")), str(partition.parent),
                               history_id="20261129T010000Z-empty", cluster="empty", from_offset=0) is None
