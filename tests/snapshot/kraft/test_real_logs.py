"""Every real metadata log and checkpoint decodes completely, agrees with the independent reader's counts
(``real_kraft``, transcribed from each SOURCE.md), and encodes back to the very bytes Kafka wrote."""

from __future__ import annotations

from collections import Counter

import pytest

from kafka_zk_audit.snapshot.kraft.batches import MetadataRecord, Undecodable, encode_batch, iter_batches
from kafka_zk_audit.snapshot.kraft.records import CONTROL_RECORDS, METADATA_RECORDS
from kafka_zk_audit.snapshot.kraft.segments import read_log

from .real_kraft import EXPECTED, PRE_RELEASE_PARTITION_RECORDS, REAL_KRAFT, TOTALS, Expected, needs_real_kraft

pytestmark = needs_real_kraft

# SOURCE.md's short names ("NoOp", "ZkMigrationState", "LeaderChange") → Kafka's record names
SHORT_NAMES = {message.name.removesuffix("Record"): message.name for message in METADATA_RECORDS.values()}
SHORT_CONTROL = {message.name.removesuffix("Record").removesuffix("Message"): message.name
                 for message in CONTROL_RECORDS.values()}


def _decoded(expected: Expected) -> list:
    return list(iter_batches(expected.file.read_bytes(), str(expected.file)))


def test_the_oracle_lists_every_log_and_checkpoint_of_the_real_data():
    on_disk = {str(path.relative_to(REAL_KRAFT)) for pattern in ("*.log", "*.checkpoint")
               for path in REAL_KRAFT.rglob(pattern)}
    assert on_disk == {expected.path for expected in EXPECTED}


@pytest.mark.parametrize("expected", EXPECTED, ids=lambda expected: expected.path)
def test_each_file_decodes_to_the_independent_readers_counts(expected: Expected):
    batches = _decoded(expected)
    records = [record for batch in batches for record in batch.records]
    assert len(batches) == expected.batches
    assert len(records) == expected.records
    assert sum(batch.record_count for batch in batches) == expected.records
    if expected.records:
        assert (records[0].offset, records[-1].offset) == expected.offsets
        assert [record.offset for record in records] == list(range(expected.offsets[0], expected.offsets[1] + 1))
        epochs = {batch.epoch for batch in batches}
        assert (min(epochs), max(epochs)) == expected.epochs
    metadata = Counter(record.api_key for record in records if not record.control)
    assert metadata == Counter({METADATA_RECORDS_BY_NAME[SHORT_NAMES[name]]: count
                                for name, count in expected.metadata.items()})
    control = Counter(record.name for record in records if record.control)
    assert control == Counter({SHORT_CONTROL[name]: count for name, count in expected.control.items()})
    assert batches[-1].end == expected.file.stat().st_size if batches else expected.file.stat().st_size == 0


METADATA_RECORDS_BY_NAME = {message.name: api_key for api_key, message in METADATA_RECORDS.items()}


@pytest.mark.parametrize("expected", EXPECTED, ids=lambda expected: expected.path)
def test_every_record_decodes_but_the_pre_release_partition_records(expected: Expected):
    records = list(read_log(expected.file))
    undecodable = [record for record in records if isinstance(record, Undecodable)]
    assert len(undecodable) == PRE_RELEASE_PARTITION_RECORDS.get(expected.path, 0)
    for record in undecodable:
        assert (record.api_key, record.version, record.file) == (3, 1, str(expected.file))
        assert "PartitionRecord v1" in record.reason
    # the Partition records SOURCE.md counts in those logs are exactly the undecodable ones
    partitions = [record for record in records if record.api_key == 3 and not record.control]
    if expected.path in PRE_RELEASE_PARTITION_RECORDS:
        assert partitions == undecodable
    assert all(isinstance(record, MetadataRecord) for record in records if record not in undecodable)


def test_the_pre_release_records_are_eighteen_with_their_offsets():
    found = {}
    for path in PRE_RELEASE_PARTITION_RECORDS:
        found[path] = [record.offset for record in read_log(REAL_KRAFT / path) if isinstance(record, Undecodable)]
    assert sum(len(offsets) for offsets in found.values()) == 18
    # three replicas of one log: the same six offsets in each
    assert len({tuple(offsets) for offsets in found.values()}) == 1


@pytest.mark.parametrize("expected", EXPECTED, ids=lambda expected: expected.path)
def test_decoding_then_encoding_every_batch_gives_its_bytes_back(expected: Expected):
    data = expected.file.read_bytes()
    for batch in _decoded(expected):
        assert encode_batch(batch) == data[batch.position:batch.end], f"batch at offset {batch.base_offset}"


def test_the_dataset_totals_match_sources_md():
    totals = Counter()
    for expected in EXPECTED:
        batches = _decoded(expected)
        dataset = expected.path.split("/")[0]
        totals[dataset, "batches"] += len(batches)
        totals[dataset, "records"] += sum(len(batch.records) for batch in batches)
    assert {dataset: (totals[dataset, "batches"], totals[dataset, "records"]) for dataset in TOTALS} == TOTALS


def test_the_records_hold_what_source_md_says():
    """A few values the SOURCE.md prose names: Kirana's quorum at epoch 21, galgrayzer's SCRAM user, the 4.2 log's
    three TopicRecords of one name with three ids, the bootstrap metadata.version levels."""
    galgrayzer = [r for e in EXPECTED if e.path.startswith("galgrayzer") and e.path.endswith(".log")
                  for r in read_log(e.file)]
    scram = [record for record in galgrayzer if record.name == "UserScramCredentialRecord"]
    assert [(record.offset, record.fields["Name"]) for record in scram] == [(812, "admin")]
    indus = [r for e in EXPECTED if e.path.startswith("IndusWargods") and e.path.endswith(".log")
             for r in read_log(e.file)]
    topics = [record.fields for record in indus if record.name == "TopicRecord"]
    assert [topic["Name"] for topic in topics] == ["test-topic"] * 3 and len({t["TopicId"] for t in topics}) == 3
    assert all(len(topic["TopicId"]) == 22 for topic in topics)
    levels = {r.fields["Name"]: r.fields["FeatureLevel"] for e in EXPECTED if e.path.endswith("bootstrap.checkpoint")
              and e.path.startswith("IndusWargods") for r in read_log(e.file) if r.name == "FeatureLevelRecord"}
    assert levels["metadata.version"] == 29 and {"share.version", "streams.version"} <= set(levels)


# each SOURCE.md's "Text files": the directory.id in meta.properties, which Kafka prints with Uuid.toString()
DIRECTORY_IDS = {
    "Balaji-MohanAG__Kirana-store/kafka/data": "OiosDok6tmN__4GVEcpQ1w",
    "HastarTara__NE_streaming_project/data": "HThRFm0vwikoA1KdMUgzaw",
    "IndusWargods__local-test-rig/kafka-data": "Teb3PFb009qvAZgMDEFH4g",
    "dkoh12__Systems/kafka/data": "Ba9Unil2UlGyFgj6AQ2ihw",
    "galgrayzer__kafka-docker-compose/kafka_data/data": "pwdcADYp-d0y2r9vfKSVVQ",
}


@pytest.mark.parametrize("folder, directory_id", DIRECTORY_IDS.items(), ids=list(DIRECTORY_IDS))
def test_uuids_read_as_kafka_prints_them(folder: str, directory_id: str):
    """The broker registers its log dir's uuid (RegisterBrokerRecord v3 LogDirs): the same text as meta.properties."""
    log_dirs = [record.fields["LogDirs"] for path in (REAL_KRAFT / folder).rglob("*.*")
                if path.suffix in (".log", ".checkpoint") for record in read_log(path)
                if isinstance(record, MetadataRecord) and record.name == "RegisterBrokerRecord"]
    assert log_dirs and all(dirs == [directory_id] for dirs in log_dirs)
