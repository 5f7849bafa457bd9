"""Every real metadata dir of ../shared/real-data/kraft replayed into its image: what each SOURCE.md says it holds.

The oracle is each dataset's SOURCE.md (an independent reader's counts and its description of the files), not this
project's decoder. Every directory with a ``__cluster_metadata-0/`` is replayed, the empty logs of apache__kafka too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_zk_audit.snapshot.kraft.replay import replay_directory

REAL = Path(__file__).resolve().parents[4] / "shared" / "real-data" / "kraft"
APACHE = "apache__kafka/core/data"
# directory -> (topics, partitions, brokers, the last offset), from its SOURCE.md
EXPECTED = {
    # "62 records each: 2 topics, 51 partitions, 3 Config, 1 broker, 1 controller"; the log ends at 149994
    "Balaji-MohanAG__Kirana-store/kafka/data": (2, 51, 1, 149994),
    # "offsets 0-46 … 47-4539 … 1 topic (test-topic)"; a single broker
    "HastarTara__NE_streaming_project/data": (1, 1, 1, 4539),
    # "Log 0-51263 … topic test-topic created 3 times and removed twice": one topic, one partition at the end
    "IndusWargods__local-test-rig/kafka-data": (1, 1, 1, 51263),
    # "Log 0-7706, 2 topics/51 partitions"
    "dkoh12__Systems/kafka/data": (2, 51, 1, 7706),
    # "Log 0-841, 4 restarts, no topics"
    "galgrayzer__kafka-docker-compose/kafka_data/data": (0, 0, 1, 841),
    # "an older single-node dir (data/kafka, 0-6012, 3 topics)"
    "greenlemonT__kafka-temp/data/kafka": (3, 52, 1, 6012),
    # "3-node log 0-30637 … 6 topics / 55 partitions"; "kafka1's log has one extra control batch (offset 30637)"
    "greenlemonT__kafka-temp/data/kafka1": (6, 55, 3, 30637),
    "greenlemonT__kafka-temp/data/kafka2": (6, 55, 3, 30636),
    "greenlemonT__kafka-temp/data/kafka3": (6, 55, 3, 30636),
}
# apache__kafka: "3 identical replicas of a 5505 B log (… 3 RegisterBroker, 2 Topic, 6 Partition …)": its six
# PartitionRecords are the pre-release layout, reported and left out, so no partition; "3 logs of a second cluster
# (registrations only)"; "3 further metadata logs are 0 B".
APACHE_FULL = ("kafka-1168504093769635972", "kafka-15372165916945441544", "kafka-2249262930763353014")
APACHE_REGISTRATIONS = ("kafka-2167572160391180112", "kafka-7155829485418535035", "kafka-7498518511977031704")
APACHE_EMPTY = ("kafka-14285624828986905583", "kafka-14572807231693050008", "kafka-14742817827683959487")

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} (the shared real data) is not here")


def _dirs() -> list[str]:
    return sorted(str(p.parent.relative_to(REAL)) for p in REAL.rglob("__cluster_metadata-0"))


def test_every_real_metadata_dir_is_one_the_test_knows() -> None:
    known = {*EXPECTED, *(f"{APACHE}/{d}" for d in (*APACHE_FULL, *APACHE_REGISTRATIONS, *APACHE_EMPTY))}
    assert set(_dirs()) == known


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_each_real_dir_replays_to_what_its_source_says(folder: str) -> None:
    result = replay_directory(REAL / folder)
    image = result.builder.image
    assert (len(image.topics), len(image.partitions), len(image.brokers), image.last_offset) == EXPECTED[folder]
    assert image.anomalies == [] and result.undecodable == []


def test_the_apache_logs_report_their_pre_release_records_and_keep_the_rest() -> None:
    for name in APACHE_FULL:
        result = replay_directory(REAL / APACHE / name)
        image = result.builder.image
        assert (len(image.topics), len(image.partitions), len(image.brokers)) == (2, 0, 3)
        assert [(u["api_key"], u["version"]) for u in result.undecodable] == [(3, 1)] * 6
    for name in APACHE_REGISTRATIONS:
        image = replay_directory(REAL / APACHE / name).builder.image
        assert (len(image.topics), len(image.brokers)) == (0, 3)
    for name in APACHE_EMPTY:
        result = replay_directory(REAL / APACHE / name)
        assert (result.records, result.builder.image.last_offset) == (0, -1)


def test_the_scram_user_of_galgrayzer_is_in_its_image() -> None:
    # "Only dataset with a UserScramCredentialRecord (user admin, written at offset 812)"
    image = replay_directory(REAL / "galgrayzer__kafka-docker-compose/kafka_data/data").builder.image
    [(name, _mechanism)] = list(image.scram)
    assert name == "admin" and image.scram[(name, _mechanism)][1].created_offset == 812
