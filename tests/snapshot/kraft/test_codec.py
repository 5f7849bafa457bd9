"""The codec on generated and hand-made bytes: compression, varints past one byte, unknown apiKeys, versions and tags,
and every kind of broken framing refused with a message that says where and what to do."""

from __future__ import annotations

import base64
import gzip
import struct

import pytest
import zstandard
from crc32c import crc32c

from kafka_zk_audit.snapshot.kraft.batches import (
    KraftLogError,
    MetadataRecord,
    Undecodable,
    build_batch,
    encode_batch,
    iter_batches,
    read_batch,
)
from kafka_zk_audit.snapshot.kraft.codegen import UNKNOWN_TAGS
from kafka_zk_audit.snapshot.kraft.messages import (
    METADATA_CODECS,
    decode_metadata_value,
    encode_metadata_value,
)
from kafka_zk_audit.snapshot.kraft.records import METADATA_RECORDS
from kafka_zk_audit.snapshot.kraft.schema import default_value

TOPIC_ID = bytes(range(16))
TOPIC = base64.urlsafe_b64encode(TOPIC_ID).decode().rstrip("=")  # Uuid.toString(), computed with the stdlib


def partition_change(partition: int, isr: list[int]) -> tuple[int, int, dict]:
    return 5, 0, {"PartitionId": partition, "TopicId": TOPIC, "Isr": isr, "Leader": isr[0]}


def records_of(data: bytes) -> list:
    return [record for batch in iter_batches(data, "<test>") for record in batch.records]


def test_a_hand_made_partition_change_record_decodes_field_by_field():
    """FORMAT.md §4–5 by hand: frame 1/5/0, PartitionId, TopicId, then tags 0 (Isr [1, 2]) and 1 (Leader 2)."""
    value = (b"\x01\x05\x00" + struct.pack(">i", 3) + TOPIC_ID + b"\x02"
             + b"\x00\x09\x03" + struct.pack(">ii", 1, 2) + b"\x01\x04" + struct.pack(">i", 2))
    api_key, version, fields = decode_metadata_value(value)
    assert (api_key, version) == (5, 0)
    assert fields == {"PartitionId": 3, "TopicId": TOPIC, "Isr": [1, 2], "Leader": 2, "Replicas": None,
                      "RemovingReplicas": None, "AddingReplicas": None, "LeaderRecoveryState": -1,
                      "Directories": None, "EligibleLeaderReplicas": None, "LastKnownElr": None}
    assert encode_metadata_value(5, 0, fields) == value


def test_every_record_version_round_trips_its_defaults():
    for api_key, version in METADATA_CODECS:
        message = METADATA_RECORDS[api_key]
        structs = {struct.name: struct for struct in message.common_structs}
        defaults = {field.name: default_value(field, structs) for field in message.fields}
        for field in message.fields:  # non-nullable strings and arrays must hold a value
            if field.present_at(version) and defaults[field.name] is None and not field.nullable_at(version):
                defaults[field.name] = []
        value = encode_metadata_value(api_key, version, defaults)
        assert decode_metadata_value(value) == (api_key, version, defaults), f"{message.name} v{version}"


def test_long_strings_big_arrays_and_many_records_need_multi_byte_varints():
    replicas = list(range(300))
    config = (4, 0, {"ResourceType": 2, "ResourceName": "t" * 200, "Name": "cleanup.policy", "Value": "x" * 5000})
    partition = (3, 2, {"PartitionId": 70000, "TopicId": TOPIC, "Replicas": replicas, "Isr": replicas,
                        "RemovingReplicas": [], "AddingReplicas": [], "Leader": 299, "LeaderEpoch": -1,
                        "PartitionEpoch": 2 ** 31 - 1, "Directories": [TOPIC] * 300, "EligibleLeaderReplicas": [7]})
    many = [config, partition] + [partition_change(index, [index, index + 1]) for index in range(300)]
    data = build_batch(many, 2 ** 40, 7, 1_700_000_000_000)
    records = records_of(data)
    assert [record.offset for record in records] == list(range(2 ** 40, 2 ** 40 + 302))
    assert records[0].fields["Value"] == "x" * 5000 and records[1].fields["Replicas"] == replicas
    assert records[1].fields["EligibleLeaderReplicas"] == [7] and records[1].fields["LastKnownElr"] is None
    assert records[-1].fields["Isr"] == [299, 300] and records[-1].epoch == 7
    assert encode_batch(read_batch(data, 0, "<test>")) == data


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_decode_to_the_same_records(codec: int):
    records = [partition_change(index, [1, 2, 3]) for index in range(500)]
    plain = records_of(build_batch(records, 100, 3, 1_700_000_000_000))
    data = build_batch(records, 100, 3, 1_700_000_000_000, compression=codec)
    batch = read_batch(data, 0, "<test>")
    assert batch.compression == codec and len(data) < 500 * 20  # really compressed
    assert list(batch.records) == plain
    again = encode_batch(batch)
    assert list(read_batch(again, 0, "<test>").records) == plain


def _batch_around(records_bytes: bytes, count: int, attributes: int) -> bytes:
    """A batch header assembled here from FORMAT.md §2, around already encoded (and compressed) records."""
    tail = struct.pack(">hiqqqhii", attributes, count - 1, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, count)
    tail += records_bytes
    return struct.pack(">qiib", 0, len(tail) + 9, 5, 2) + struct.pack(">I", crc32c(tail)) + tail


@pytest.mark.parametrize("compress, codec", [(gzip.compress, 1), (zstandard.ZstdCompressor().compress, 4)],
                         ids=["stdlib-gzip", "zstandard"])
def test_batches_compressed_by_another_library_decode(compress, codec: int):
    records = [partition_change(index, [4, 5]) for index in range(50)]
    uncompressed = build_batch(records, 0, 5, 1_700_000_000_000)
    expected = records_of(uncompressed)
    data = _batch_around(compress(uncompressed[61:]), 50, codec)
    assert list(read_batch(data, 0, "<test>").records) == expected


def test_a_snappy_java_xerial_stream_of_several_blocks_decodes():
    import cramjam

    records = [partition_change(index, [4, 5]) for index in range(3000)]  # > 32 KiB: several xerial blocks
    raw = build_batch(records, 0, 5, 1_700_000_000_000)[61:]
    stream = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for start in range(0, len(raw), 10_000):
        block = bytes(cramjam.snappy.compress_raw(raw[start:start + 10_000]))
        stream += struct.pack(">i", len(block)) + block
    assert len(records_of(_batch_around(stream, 3000, 2))) == 3000


def test_an_unknown_api_key_or_version_is_undecodable_not_an_error_and_written_back():
    unknown_key = b"\x01\x1d\x00\x00"  # apiKey 29 (unreleased), v0, an empty body
    unknown_version = encode_metadata_value(5, 2, {"PartitionId": 1, "TopicId": TOPIC})[:2] + b"\x07" + b"\x00" * 21
    data = build_batch([partition_change(0, [1]), unknown_key, unknown_version, partition_change(1, [2])], 10, 1, 5)
    records = records_of(data)
    assert [type(record) for record in records] == [MetadataRecord, Undecodable, Undecodable, MetadataRecord]
    assert (records[1].offset, records[1].api_key, records[1].version) == (11, 29, 0)
    assert "apiKey 29" in records[1].reason and records[1].file == "<test>"
    assert (records[2].offset, records[2].api_key, records[2].version) == (12, 5, 7)
    assert "PartitionChangeRecord version 7" in records[2].reason
    assert encode_batch(read_batch(data, 0, "<test>")) == data


def test_a_body_with_bytes_left_over_or_missing_is_undecodable():
    good = encode_metadata_value(2, 0, {"Name": "orders", "TopicId": TOPIC})
    for value in (good + b"\x00", good[:-3]):
        record = records_of(build_batch([value], 0, 1, 5))[0]
        assert isinstance(record, Undecodable) and record.api_key == 2
        assert "TopicRecord v0" in record.reason


def test_unknown_tagged_fields_are_skipped_kept_and_written_back():
    value = b"\x01\x14\x00" + b"\x02" + b"\x05\x02\xab\xcd" + b"\x09\x00"  # NoOpRecord with tags 5 and 9
    api_key, version, fields = decode_metadata_value(value)
    assert (api_key, version, fields) == (20, 0, {UNKNOWN_TAGS: [(5, b"\xab\xcd"), (9, b"")]})
    assert encode_metadata_value(20, 0, fields) == value
    # a known tag and an unknown one interleave in tag order
    change = encode_metadata_value(5, 0, {"PartitionId": 1, "TopicId": TOPIC, "Leader": 3,
                                          "Replicas": [1], UNKNOWN_TAGS: [(1000, b"\x01")]})
    decoded = decode_metadata_value(change)[2]
    assert decoded["Leader"] == 3 and decoded["Replicas"] == [1] and decoded[UNKNOWN_TAGS] == [(1000, b"\x01")]
    assert encode_metadata_value(5, 0, decoded) == change


def test_a_null_where_the_schema_forbids_it_is_undecodable():
    value = b"\x01\x02\x00" + b"\x00" + TOPIC_ID + b"\x00"  # TopicRecord whose Name is null
    assert decode_metadata_value(value)[2] == "TopicRecord v0: non-nullable field Name was serialized as null"


# -- broken framing --------------------------------------------------------------------------------------------


def _log(count: int = 3) -> bytes:
    return b"".join(build_batch([partition_change(index, [1, 2])], 40 + index, 2, 1000 + index)
                    for index in range(count))


def test_a_bad_crc_names_the_file_byte_and_offset():
    data = bytearray(_log())
    second = len(_log(1))
    data[second + 70] ^= 0xFF
    with pytest.raises(KraftLogError, match=r"x.log: byte \d+ \(offset 41\): CRC-32C mismatch") as caught:
        list(iter_batches(bytes(data), "x.log"))
    assert caught.value.position == second and caught.value.offset == 41 and "--at-offset" in str(caught.value)


@pytest.mark.parametrize("cut", [5, 30, 61, 70])
def test_a_truncated_tail_says_how_kafka_handles_it(cut: int):
    whole = _log()
    last = len(_log(2))
    data = whole[:last + cut]
    with pytest.raises(KraftLogError, match="truncated") as caught:
        list(iter_batches(data, "x.log"))
    assert caught.value.position == last
    assert caught.value.offset == (42 if cut >= 8 else None)
    assert "Kafka truncates such a tail on restart" in str(caught.value)
    assert [batch.base_offset for batch in iter_batches(data, "x.log", stop_offset=41)] == [40, 41]


def test_bad_magic_is_refused():
    data = bytearray(_log(1))
    data[16] = 1
    with pytest.raises(KraftLogError, match="magic 1"):
        list(iter_batches(bytes(data), "x.log"))


def _with_crc(batch: bytearray) -> bytes:
    batch[17:21] = struct.pack(">I", crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_record_that_does_not_end_where_its_length_says_is_refused():
    batch = bytearray(build_batch([partition_change(0, [1])], 0, 1, 5))
    batch[61] += 2  # the first record's length (a zigzag varint): one more byte than it has
    with pytest.raises(KraftLogError, match="runs past the end of the batch|its length says"):
        list(iter_batches(_with_crc(batch), "x.log"))


def test_bytes_after_the_last_record_are_refused():
    batch = bytearray(build_batch([partition_change(0, [1])], 0, 1, 5)) + b"\x00"
    batch[8:12] = struct.pack(">i", len(batch) - 12)
    with pytest.raises(KraftLogError, match="1 byte\\(s\\) after the batch's last record"):
        list(iter_batches(_with_crc(batch), "x.log"))


def test_a_corrupt_compressed_stream_is_refused():
    batch = bytearray(build_batch([partition_change(0, [1])] * 20, 0, 1, 5, compression=4))
    batch[70:80] = b"\xff" * 10
    with pytest.raises(KraftLogError, match="compressed records cannot be read"):
        list(iter_batches(_with_crc(batch), "x.log"))


def test_the_kraft_version_and_voters_control_records_round_trip(tmp_path):
    """No real log has them (no dynamic quorum in the data): written and read back through a checkpoint."""
    from kafka_zk_audit.snapshot.kraft.segments import Checkpoint, write_checkpoint

    voters = {"Version": 0, "Voters": [{"VoterId": 1, "VoterDirectoryId": TOPIC,
                                        "Endpoints": [{"Name": "CONTROLLER", "Host": "c1", "Port": 9093}],
                                        "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1}}]}
    path = write_checkpoint(tmp_path, [(12, 0, {"Name": "kraft.version", "FeatureLevel": 1})], 10, 3, timestamp=9,
                            control_records=[(5, 0, {"Version": 0, "KRaftVersion": 1}), (6, 0, voters)])
    checkpoint = Checkpoint.at(path)
    assert checkpoint.validate().fields == {"Version": 0, "LastContainedLogTimestamp": 9}
    records = list(checkpoint.records())
    assert [(r.control, r.api_key, r.name) for r in records] == [
        (True, 3, "SnapshotHeaderRecord"), (True, 5, "KRaftVersionRecord"), (True, 6, "VotersRecord"),
        (False, 12, "FeatureLevelRecord"), (True, 4, "SnapshotFooterRecord")]
    assert records[2].fields == voters and [r.offset for r in records] == [0, 1, 2, 3, 4]
    assert {batch.epoch for batch in checkpoint.batches()} == {3}


def test_an_unknown_control_record_type_is_undecodable_and_written_back():
    batch = bytearray(build_batch([(2, 0, {"Version": 0, "LeaderId": 1, "Voters": [], "GrantingVoters": []})],
                                  0, 1, 5, control=True))
    key_at = batch.index(b"\x08\x00\x00\x00\x02")  # key length 4 (zigzag 8), then version 0, type 2
    batch[key_at + 4] = 9
    data = _with_crc(batch)
    record = records_of(data)[0]
    assert isinstance(record, Undecodable) and record.control and record.api_key == 9
    assert "control record type 9 is unknown" in record.reason
    assert encode_batch(read_batch(data, 0, "<test>")) == data
