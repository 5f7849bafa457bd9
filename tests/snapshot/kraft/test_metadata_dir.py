"""Planning a rebuild from a metadata dir: the newest usable checkpoint, the log records after it, a target by offset
or time, a corrupt checkpoint passed over, and the files' gaps and limits named; telling KRaft from ZooKeeper dirs."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_zk_audit.snapshot.kraft.batches import KraftLogError, MetadataRecord, build_batch
from kafka_zk_audit.snapshot.kraft.kind import detect_kind, hint
from kafka_zk_audit.snapshot.kraft.metadata_dir import MetadataDirError, open_metadata_dir, plan_replay
from kafka_zk_audit.snapshot.kraft.segments import read_log, write_checkpoint, write_segment

from .real_kraft import REAL_KRAFT, REPO, SHARED, needs_real_kraft

KIRANA = REAL_KRAFT / "Balaji-MohanAG__Kirana-store" / "kafka" / "data"
INDUS = REAL_KRAFT / "IndusWargods__local-test-rig" / "kafka-data"
HASTAR = REAL_KRAFT / "HastarTara__NE_streaming_project" / "data"
INDUS_CHECKPOINTS = (10744, 17908, 25077, 32233, 39383, 46533)  # IndusWargods SOURCE.md


def offsets(plan) -> list[int]:
    return [record.offset for record in plan.log_records()]


@needs_real_kraft
def test_the_newest_checkpoint_and_the_log_after_it():
    plan = plan_replay(KIRANA)
    assert plan.checkpoint.path.name == "00000000000000149809-0000000021.checkpoint"
    assert len(list(plan.snapshot_records())) == 62  # SOURCE.md: 62 records each
    assert offsets(plan) == list(range(149809, 149995))  # the log ends at 149994 (SOURCE.md)
    assert plan.warnings == []
    manifest = plan.manifest()
    assert manifest["meta_properties"] == {"node.id": "1", "directory.id": "OiosDok6tmN__4GVEcpQ1w", "version": "1",
                                           "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk"}
    assert manifest["quorum_state"]["leaderEpoch"] == 21 and manifest["log_start_offset"] == 128356
    assert manifest["checkpoint"]["end_offset"] == 149809 and manifest["checkpoint"]["epoch"] == 21
    log = next(entry for entry in manifest["files"] if entry["kind"] == "log")
    assert log["epochs"] == [21] and log["last_offset"] == 149994 and manifest["last_offset"] == 149994


@needs_real_kraft
@pytest.mark.parametrize("target, checkpoint", [(128355, 128356), (128356, 128356), (135515, 128356),
                                                (135516, 135517), (140000, 135517), (149994, 149809)])
def test_at_offset_takes_the_newest_checkpoint_at_or_before_it(target: int, checkpoint: int):
    """Kirana's log starts at 128356: the state before it exists only in the checkpoints."""
    plan = plan_replay(KIRANA, at_offset=target)
    assert plan.checkpoint.end_offset == checkpoint
    assert offsets(plan) == list(range(checkpoint, target + 1))


@needs_real_kraft
@pytest.mark.parametrize("target", [0, 100, 128354])
def test_an_offset_before_every_retained_state_is_refused(target: int):
    with pytest.raises(MetadataDirError, match=r"the log starts at offset 128356.*audit an offset of 128355 or later"):
        plan_replay(KIRANA, at_offset=target)


@needs_real_kraft
def test_an_offset_beyond_the_files_is_refused():
    with pytest.raises(MetadataDirError, match="beyond the files: the log ends at offset 149994"):
        plan_replay(KIRANA, at_offset=149995)


@needs_real_kraft
@pytest.mark.parametrize("target", [0, 10742, 10743, 17907, 17908, 30000, 46532, 46533, 51263])
def test_six_checkpoints_each_chosen_in_its_own_range(target: int):
    plan = plan_replay(INDUS / "__cluster_metadata-0", at_offset=target)
    usable = [end for end in INDUS_CHECKPOINTS if end <= target + 1]
    assert (plan.checkpoint.end_offset if plan.checkpoint else None) == (usable[-1] if usable else None)
    start = usable[-1] if usable else 0
    assert offsets(plan) == list(range(start, target + 1))


@needs_real_kraft
def test_at_time_stops_at_the_last_record_stamped_at_or_before_it():
    everything = [record for record in read_log(INDUS / "__cluster_metadata-0" / "00000000000000000000.log")]
    for record in (everything[20000], everything[20001], everything[-1]):
        moment = datetime.fromtimestamp(record.timestamp / 1000, UTC)
        expected = max(r.offset for r in everything[:next(i for i, r in enumerate(everything)
                                                             if r.timestamp > record.timestamp)]
                       ) if record is not everything[-1] else everything[-1].offset
        plan = plan_replay(INDUS, at_time=moment)
        assert plan.target_offset == expected
        assert plan.checkpoint.end_offset == max(end for end in INDUS_CHECKPOINTS if end <= expected + 1)
        assert offsets(plan)[-1] == expected
    naive = datetime.fromtimestamp(everything[20000].timestamp / 1000, UTC).replace(tzinfo=None)
    assert plan_replay(INDUS, at_time=naive).target_offset >= 20000  # naive times are UTC
    with pytest.raises(MetadataDirError, match="before the oldest state the files hold"):
        plan_replay(INDUS, at_time=datetime(2020, 1, 1, tzinfo=UTC))


@needs_real_kraft
def test_at_time_before_the_log_uses_a_checkpoints_last_contained_timestamp():
    """Kirana: a moment before its first log record but after checkpoint 128356's last contained record."""
    header = next(read_log(KIRANA / "__cluster_metadata-0" / "00000000000000128356-0000000020.checkpoint"))
    first = next(read_log(KIRANA / "__cluster_metadata-0" / "00000000000000128356.log"))
    assert header.fields["LastContainedLogTimestamp"] < first.timestamp
    moment = datetime.fromtimestamp(header.fields["LastContainedLogTimestamp"] / 1000, UTC)
    plan = plan_replay(KIRANA, at_time=moment)
    assert plan.checkpoint.end_offset == 128356 and offsets(plan) == []


def _copy(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / source.name))


@needs_real_kraft
def test_a_corrupt_newest_checkpoint_falls_back_to_the_previous_one(tmp_path: Path):
    copy = _copy(KIRANA, tmp_path)
    newest = copy / "__cluster_metadata-0" / "00000000000000149809-0000000021.checkpoint"
    data = bytearray(newest.read_bytes())
    data[200] ^= 0x55
    newest.write_bytes(bytes(data))
    plan = plan_replay(copy)
    assert plan.checkpoint.end_offset == 142667
    assert any("00000000000000149809-0000000021.checkpoint is unusable (CRC-32C mismatch" in w for w in plan.warnings)
    assert offsets(plan) == list(range(142667, 149995))


@needs_real_kraft
def test_an_unfinished_checkpoint_is_passed_over(tmp_path: Path):
    copy = _copy(INDUS, tmp_path)
    partition = copy / "__cluster_metadata-0"
    newest = partition / "00000000000000046533-0000000004.checkpoint"
    batches = list(read_log(newest))
    assert batches[-1].name == "SnapshotFooterRecord"
    newest.write_bytes(newest.read_bytes()[:-(61 + 8)])  # the footer batch gone (61-byte header + its record)
    with pytest.raises(KraftLogError):
        list(read_log(newest))  # the last batch is now cut: reading it fails
    (partition / "00000000000000039383-0000000004.checkpoint").write_bytes(b"")  # an empty one
    plan = plan_replay(copy)
    assert plan.checkpoint.end_offset == 32233 and len(plan.warnings) == 3


@needs_real_kraft
def test_without_any_usable_checkpoint_a_log_from_zero_is_replayed_whole(tmp_path: Path):
    copy = _copy(INDUS, tmp_path)
    for checkpoint in (copy / "__cluster_metadata-0").glob("*.checkpoint"):
        checkpoint.write_bytes(b"\x00" * 100)
    plan = plan_replay(copy)
    assert plan.checkpoint is None and plan.warnings[-1] == "no usable checkpoint: the log is replayed from its start"
    assert len(offsets(plan)) == 51264


@needs_real_kraft
def test_without_any_usable_checkpoint_a_log_that_starts_late_is_refused(tmp_path: Path):
    copy = _copy(KIRANA, tmp_path)
    for checkpoint in (copy / "__cluster_metadata-0").glob("*.checkpoint"):
        checkpoint.unlink()
    with pytest.raises(MetadataDirError, match="the log starts at offset 128356, so offsets 0–128355"):
        plan_replay(copy)


@needs_real_kraft
def test_a_missing_first_segment_is_named(tmp_path: Path):
    copy = _copy(HASTAR, tmp_path)
    (copy / "__cluster_metadata-0" / "00000000000000000000.log").unlink()
    with pytest.raises(MetadataDirError, match="the log starts at offset 47, so offsets 0–46"):
        plan_replay(copy)


@needs_real_kraft
def test_two_segments_are_read_as_one_log():
    plan = plan_replay(HASTAR)
    assert plan.checkpoint is None and offsets(plan) == list(range(0, 4540))  # HastarTara SOURCE.md: 0–4539
    assert [entry["records"] for entry in plan.manifest()["files"]] == [47, 4493]


@needs_real_kraft
def test_a_truncated_tail_fails_the_latest_state_but_not_an_earlier_one(tmp_path: Path):
    copy = _copy(INDUS, tmp_path)
    log = copy / "__cluster_metadata-0" / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()[:-10])
    with pytest.raises(KraftLogError, match="truncated"):
        offsets(plan_replay(copy))
    assert offsets(plan_replay(copy, at_offset=51000))[-1] == 51000


def test_a_generated_dir_with_a_gap_between_segments_is_refused(tmp_path: Path):
    partition = tmp_path / "__cluster_metadata-0"
    change = (5, 0, {"PartitionId": 0, "TopicId": "AAAAAAAAAAAAAAAAAAAAAQ", "Leader": 1})
    write_segment(partition, [build_batch([change] * 10, 0, 1, 1000)])
    write_segment(partition, [build_batch([change] * 10, 20, 1, 2000)])
    with pytest.raises(MetadataDirError, match="offsets 10–19 are missing"):
        offsets(plan_replay(tmp_path))


def test_a_generated_dir_replays_from_its_checkpoint(tmp_path: Path):
    partition = tmp_path / "__cluster_metadata-0"
    topic = (2, 0, {"Name": "orders", "TopicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    noop = (20, 0, {})
    write_segment(partition, [build_batch([topic], 0, 1, 1000)] +
                  [build_batch([noop] * 5, offset, 1, 1000 + offset) for offset in range(1, 100, 5)])
    write_checkpoint(partition, [topic], 50, 1, timestamp=5000, last_contained_timestamp=1049)
    (tmp_path / "meta.properties").write_text("#comment\nnode.id=7\ncluster.id=abc\n")
    for ignored in ("00000000000000000090-0000000001.checkpoint.part", "00000000000000000080-0000000001.checkpoint"
                    ".deleted", "00000000000000000100.snapshot", "00000000000000000000.index",
                    "leader-epoch-checkpoint"):
        (partition / ignored).write_bytes(b"\xff" * 30)
    directory = open_metadata_dir(partition)
    assert directory.root == tmp_path and directory.meta_properties == {"node.id": "7", "cluster.id": "abc"}
    assert [c.end_offset for c in directory.checkpoints] == [50] and len(directory.skipped) == 5
    plan = plan_replay(tmp_path)
    snapshot = list(plan.snapshot_records())
    assert [r.name for r in snapshot] == ["SnapshotHeaderRecord", "TopicRecord", "SnapshotFooterRecord"]
    assert isinstance(snapshot[1], MetadataRecord) and snapshot[1].fields["Name"] == "orders"
    assert offsets(plan) == list(range(50, 101))
    # the batch at 46 (records 46–50) is stamped 1046 ms, the next (51–55) 1051 ms
    at_time = plan_replay(tmp_path, at_time=datetime.fromtimestamp(1.049, UTC))
    assert at_time.target_offset == 50 and offsets(at_time) == [50]


def test_kind_detection_tells_kraft_from_zookeeper(tmp_path: Path):
    zookeeper = REPO / "tests" / "data" / "zookeeper" / "txn_in_flight"
    assert detect_kind(zookeeper) == "zookeeper" and detect_kind(zookeeper / "version-2") == "zookeeper"
    assert detect_kind(zookeeper / "version-2" / "log.13") == "zookeeper"
    assert detect_kind(tmp_path) is None and detect_kind(tmp_path / "absent") is None
    write_segment(tmp_path / "somewhere", [build_batch([(20, 0, {})], 0, 1, 1)])
    assert detect_kind(tmp_path / "somewhere") == "kraft"
    assert "--from-kraft" in hint("kraft") and "--from-files" in hint("zookeeper") and "neither" in hint(None)
    with pytest.raises(MetadataDirError, match="read it with --from-files"):
        open_metadata_dir(zookeeper)


@needs_real_kraft
def test_kind_detection_on_the_real_dirs():
    for dataset in REAL_KRAFT.iterdir():
        for partition in dataset.rglob("__cluster_metadata-0"):
            assert detect_kind(partition) == "kraft" and detect_kind(partition.parent) == "kraft"
    for version_2 in (SHARED / "real-data" / "zk").rglob("version-2"):
        assert detect_kind(version_2) == "zookeeper" and detect_kind(version_2.parent) == "zookeeper"


@needs_real_kraft
def test_the_log_before_the_checkpoint_is_skipped_unread(tmp_path: Path):
    """A corrupt batch below the newest checkpoint's end offset does not matter for the latest state (Kafka does
    not read it either), but does for a target below it."""
    copy = _copy(INDUS, tmp_path)
    log = copy / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF  # about offset 25000
    log.write_bytes(bytes(data))
    plan = plan_replay(copy)
    assert offsets(plan) == list(range(46533, 51264))
    assert plan.manifest()["files"][-1]["records"] == 51264 - 46533
    with pytest.raises(KraftLogError, match="CRC-32C mismatch"):
        offsets(plan_replay(copy, at_offset=30000))
