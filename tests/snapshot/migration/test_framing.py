"""The test encoder's log is framed as the real KRaft logs of ``../shared/real-data/kraft/`` are: the batch header
read field by field with ``struct`` (DefaultRecordBatch v2, independently of the codec), offsets contiguous from
segment to batch, and the codec's decoder gives back every record the encoder wrote (the round trip)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafka_zk_audit.snapshot.kraft.metadata_dir import plan_replay
from kafka_zk_audit.snapshot.migration.tree import ZkNode
from kafka_zk_audit_testing.migration_log import write_migration_log

REAL_KRAFT = Path(__file__).resolve().parents[3].parent / "shared" / "real-data" / "kraft"
HEADER = struct.Struct(">qiibIhiqqqhii")  # baseOffset … recordsCount: 61 bytes


def _headers(segment: Path) -> list[dict[str, int]]:
    data, position, out = segment.read_bytes(), 0, []
    while position + HEADER.size <= len(data):
        (base, length, epoch, magic, _crc, attributes, last_delta, _first_ts, _max_ts, producer, producer_epoch,
         sequence, count) = HEADER.unpack_from(data, position)
        out.append({"base": base, "length": length, "epoch": epoch, "magic": magic, "attributes": attributes,
                    "last_delta": last_delta, "producer": producer, "producer_epoch": producer_epoch,
                    "sequence": sequence, "count": count})
        position += 12 + length
    assert position == len(data), f"{segment}: a batch overruns the file"
    return out


def _framing(headers: list[dict[str, int]]) -> set[tuple[int, int, int, int, int]]:
    """What every batch of a KRaft log shares: magic, the control bit (no compression, not transactional),
    producer id/epoch and base sequence (none: -1)."""
    return {(h["magic"], h["attributes"] & ~0x20, h["producer"], h["producer_epoch"], h["sequence"])
            for h in headers}


def _tree() -> dict[str, ZkNode]:
    topic = b'{"version":3,"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":{"0":[1,2]}}'
    return {"/brokers/ids/1": ZkNode(b"{}"), "/brokers/ids/2": ZkNode(b"{}"), "/brokers/topics/t": ZkNode(topic),
            "/brokers/topics/t/partitions/0/state": ZkNode(b'{"leader":1,"leader_epoch":0,"isr":[1,2]}', 2)}


@pytest.mark.skipif(not REAL_KRAFT.is_dir(), reason=f"{REAL_KRAFT} is absent")
def test_the_encoder_frames_batches_as_the_real_logs_do(tmp_path: Path):
    real = sorted(REAL_KRAFT.rglob("__cluster_metadata-0/*.log"))
    assert real
    real_framing = set().union(*(_framing(_headers(segment)) for segment in real))
    write_migration_log(_tree(), tmp_path, "3.9")
    segments = sorted((tmp_path / "__cluster_metadata-0").glob("*.log"))
    assert [s.name for s in segments] == ["00000000000000000000.log"]
    headers = _headers(segments[0])
    assert _framing(headers) <= real_framing
    assert any(h["attributes"] & 0x20 for h in headers)  # the LeaderChange control batch
    for before, after in zip(headers, headers[1:], strict=False):
        assert after["base"] == before["base"] + before["last_delta"] + 1
        assert before["count"] == before["last_delta"] + 1


@pytest.mark.parametrize("release", ["3.4", "3.5.2", "3.6.2", "3.9"])
def test_the_decoder_reads_back_every_record_the_encoder_wrote(tmp_path: Path, release: str):
    log = write_migration_log(_tree(), tmp_path, release)
    records = list(plan_replay(tmp_path).log_records())
    assert [r.offset for r in records] == list(range(len(records)))
    names = [r.name for r in records]
    assert names.count("TopicRecord") == 1 and names.count("PartitionRecord") == 1
    assert ("BeginTransactionRecord" in names) == (release >= "3.6")
    assert records[log.load_end_offset].name in ({"EndTransactionRecord"} if release >= "3.6" else
                                                 {"ZkMigrationStateRecord"} if release >= "3.5" else
                                                 {"PartitionRecord", "TopicRecord"})
    partition = next(r for r in records if r.name == "PartitionRecord")
    assert partition.version == 0 and partition.fields["PartitionEpoch"] == 2 and partition.fields["Replicas"] == [1, 2]
