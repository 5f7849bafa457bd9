"""The real KRaft metadata dirs of ``../shared/real-data/kraft`` and the counts an independent reader found in them.

Every row below is transcribed from the "Validation (an independent reader)" table of the dataset's ``SOURCE.md``
(batches, records, offsets, leader epochs, record types and control records, as written there). They are the
oracle: nothing here is computed by the code under test.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared"
REAL_KRAFT = SHARED / "real-data" / "kraft"
SCHEMAS = SHARED / "kafka-metadata" / "schemas"
needs_real_kraft = pytest.mark.skipif(not REAL_KRAFT.is_dir(), reason=f"{REAL_KRAFT} is absent (it sits beside the "
                                      "repo clone in CI and on the developers' machines)")


@dataclass(frozen=True)
class Expected:
    path: str  # under real-data/kraft
    batches: int
    records: int
    offsets: tuple[int, int] | None  # first–last
    epochs: tuple[int, int] | None  # lowest–highest leader epoch
    metadata: dict[str, int]  # "NoOp" → count, as SOURCE.md names them
    control: dict[str, int]

    @property
    def file(self) -> Path:
        return REAL_KRAFT / self.path


def _counts(text: str) -> dict[str, int]:
    """``"NoOp: 21582; PartitionChange: 51"`` (SOURCE.md's spelling) → {"NoOp": 21582, "PartitionChange": 51}."""
    pairs = (item.split(":") for item in text.replace(",", ";").split(";") if item.strip())
    return {name.strip(): int(count) for name, count in pairs}


def _row(path: str, batches: int, records: int, offsets: str, epochs: str, metadata: str, control: str) -> Expected:
    def span(text: str) -> tuple[int, int] | None:
        if text == "—":
            return None
        low, _, high = text.partition("–")
        return int(low), int(high or low)
    return Expected(path, batches, records, span(offsets), span(epochs), _counts(metadata), _counts(control))


KIRANA = "Balaji-MohanAG__Kirana-store/kafka/data/"
HASTAR = "HastarTara__NE_streaming_project/data/"
INDUS = "IndusWargods__local-test-rig/kafka-data/"
APACHE = "apache__kafka/core/data/"
DKOH = "dkoh12__Systems/kafka/data/"
GALGRAYZER = "galgrayzer__kafka-docker-compose/kafka_data/data/"
GREENLEMON = "greenlemonT__kafka-temp/data/"
M0 = "__cluster_metadata-0/"
HEADER_FOOTER = "SnapshotHeader: 1, SnapshotFooter: 1"
KIRANA_SNAPSHOT = ("Partition: 51; Config: 3; Topic: 2; FeatureLevel: 1; ZkMigrationState: 1; RegisterBroker: 1; "
                   "RegisterController: 1")
INDUS_SNAPSHOT = "FeatureLevel: 6; RegisterBroker: 1; RegisterController: 1; Topic: 1; Partition: 1; Config: 1"
APACHE_94 = ("NoOp: 37; PartitionChange: 24; BrokerRegistrationChange: 13; Partition: 6; RegisterBroker: 3; Config: 3; "
             "Topic: 2; BeginTransaction: 1; FeatureLevel: 1; ZkMigrationState: 1; EndTransaction: 1; "
             "RegisterController: 1")
APACHE_26 = ("NoOp: 13; RegisterBroker: 3; BrokerRegistrationChange: 3; BeginTransaction: 1; FeatureLevel: 1; "
             "ZkMigrationState: 1; EndTransaction: 1; RegisterController: 1")
GREEN_3NODE = ("NoOp: 26698; PartitionChange: 3664; BrokerRegistrationChange: 111; Partition: 55; RegisterBroker: 39; "
               "Topic: 6; Config: 3; FeatureLevel: 1; ZkMigrationState: 1; ProducerIds: 1")
GREEN_SNAPSHOT = ("Partition: 55; Topic: 6; RegisterBroker: 3; Config: 3; FeatureLevel: 1; ZkMigrationState: 1; "
                  "ProducerIds: 1")

EXPECTED = [
    # Balaji-MohanAG__Kirana-store/SOURCE.md
    _row(KIRANA + M0 + "00000000000000128356-0000000020.checkpoint", 3, 62, "0–61", "20", KIRANA_SNAPSHOT,
         HEADER_FOOTER),
    _row(KIRANA + M0 + "00000000000000128356.log", 21586, 21639, "128356–149994", "21",
         "NoOp: 21582; PartitionChange: 51; BrokerRegistrationChange: 3; RegisterController: 1; RegisterBroker: 1",
         "LeaderChange: 1"),
    _row(KIRANA + M0 + "00000000000000135517-0000000021.checkpoint", 3, 62, "0–61", "21", KIRANA_SNAPSHOT,
         HEADER_FOOTER),
    _row(KIRANA + M0 + "00000000000000142667-0000000021.checkpoint", 3, 62, "0–61", "21", KIRANA_SNAPSHOT,
         HEADER_FOOTER),
    _row(KIRANA + M0 + "00000000000000149809-0000000021.checkpoint", 3, 62, "0–61", "21", KIRANA_SNAPSHOT,
         HEADER_FOOTER),
    _row(KIRANA + "bootstrap.checkpoint", 3, 3, "0–2", "0", "FeatureLevel: 1", HEADER_FOOTER),
    # HastarTara__NE_streaming_project/SOURCE.md
    _row(HASTAR + M0 + "00000000000000000000.log", 44, 47, "0–46", "1",
         "NoOp: 38; BrokerRegistrationChange: 2; BeginTransaction: 1; FeatureLevel: 1; ZkMigrationState: 1; "
         "EndTransaction: 1; RegisterController: 1; RegisterBroker: 1", "LeaderChange: 1"),
    _row(HASTAR + M0 + "00000000000000000047.log", 4489, 4493, "47–4539", "2–3",
         "NoOp: 4479; BrokerRegistrationChange: 4; RegisterController: 2; RegisterBroker: 2; PartitionChange: 2; "
         "Topic: 1; Partition: 1", "LeaderChange: 2"),
    _row(HASTAR + "bootstrap.checkpoint", 3, 3, "0–2", "0", "FeatureLevel: 1", HEADER_FOOTER),
    # IndusWargods__local-test-rig/SOURCE.md
    _row(INDUS + M0 + "00000000000000000000.log", 51244, 51264, "0–51263", "1–4",
         "NoOp: 51223; BrokerRegistrationChange: 7; FeatureLevel: 6; Partition: 5; RegisterController: 4; "
         "RegisterBroker: 4; Topic: 3; PartitionChange: 3; RemoveTopic: 2; BeginTransaction: 1; Config: 1; "
         "EndTransaction: 1", "LeaderChange: 4"),
    *[_row(INDUS + M0 + f"{end:020d}-0000000004.checkpoint", 3, 13, "0–12", "4", INDUS_SNAPSHOT, HEADER_FOOTER)
      for end in (10744, 17908, 25077, 32233, 39383, 46533)],
    _row(INDUS + "bootstrap.checkpoint", 3, 8, "0–7", "0", "FeatureLevel: 6", HEADER_FOOTER),
    # apache__kafka/SOURCE.md
    *[_row(APACHE + f"kafka-{node}/" + M0 + "00000000000000000000.log", 45, 94, "0–93", "1", APACHE_94,
           "LeaderChange: 1") for node in ("1168504093769635972", "15372165916945441544", "2249262930763353014")],
    *[_row(APACHE + f"kafka-{node}/" + M0 + "00000000000000000000.log", 0, 0, "—", "—", "", "")
      for node in ("14285624828986905583", "14572807231693050008", "14742817827683959487")],
    *[_row(APACHE + f"kafka-{node}/" + M0 + "00000000000000000000.log", 23, 26, "0–25", "1–2", APACHE_26,
           "LeaderChange: 2") for node in ("2167572160391180112", "7155829485418535035")],
    _row(APACHE + "kafka-7498518511977031704/" + M0 + "00000000000000000000.log", 21, 24, "0–23", "1",
         "NoOp: 12; RegisterBroker: 3; BrokerRegistrationChange: 3; BeginTransaction: 1; FeatureLevel: 1; "
         "ZkMigrationState: 1; EndTransaction: 1; RegisterController: 1", "LeaderChange: 1"),
    # dkoh12__Systems/SOURCE.md
    _row(DKOH + M0 + "00000000000000000000.log", 7596, 7707, "0–7706", "1",
         "NoOp: 7587; Partition: 51; PartitionChange: 51; FeatureLevel: 4; Config: 4; BrokerRegistrationChange: 3; "
         "Topic: 2; BeginTransaction: 1; EndTransaction: 1; RegisterController: 1; RegisterBroker: 1",
         "LeaderChange: 1"),
    _row(DKOH + M0 + "00000000000000007209-0000000001.checkpoint", 3, 65, "0–64", "1",
         "Partition: 51; FeatureLevel: 4; Config: 4; Topic: 2; RegisterBroker: 1; RegisterController: 1",
         HEADER_FOOTER),
    _row(DKOH + "bootstrap.checkpoint", 3, 6, "0–5", "0", "FeatureLevel: 4", HEADER_FOOTER),
    # galgrayzer__kafka-docker-compose/SOURCE.md
    _row(GALGRAYZER + M0 + "00000000000000000000.log", 837, 842, "0–841", "1–4",
         "NoOp: 813; BrokerRegistrationChange: 11; RegisterController: 4; RegisterBroker: 4; FeatureLevel: 3; "
         "BeginTransaction: 1; EndTransaction: 1; UserScramCredential: 1", "LeaderChange: 4"),
    _row(GALGRAYZER + "bootstrap.checkpoint", 3, 5, "0–4", "0", "FeatureLevel: 3", HEADER_FOOTER),
    # greenlemonT__kafka-temp/SOURCE.md
    _row(GREENLEMON + "kafka/" + M0 + "00000000000000000000.log", 5545, 6013, "0–6012", "1–4",
         "NoOp: 5526; PartitionChange: 410; Partition: 52; BrokerRegistrationChange: 9; RegisterBroker: 4; Topic: 3; "
         "Config: 3; FeatureLevel: 1; ZkMigrationState: 1", "LeaderChange: 4"),
    _row(GREENLEMON + "kafka1/" + M0 + "00000000000000000000.log", 26880, 30638, "0–30637", "3–190", GREEN_3NODE,
         "LeaderChange: 59"),
    _row(GREENLEMON + "kafka1/" + M0 + "00000000000000028869-0000000189.checkpoint", 3, 72, "0–71", "189",
         GREEN_SNAPSHOT, HEADER_FOOTER),
    _row(GREENLEMON + "kafka2/" + M0 + "00000000000000000000.log", 26879, 30637, "0–30636", "3–189", GREEN_3NODE,
         "LeaderChange: 58"),
    _row(GREENLEMON + "kafka2/" + M0 + "00000000000000028869-0000000189.checkpoint", 3, 72, "0–71", "189",
         GREEN_SNAPSHOT, HEADER_FOOTER),
    _row(GREENLEMON + "kafka3/" + M0 + "00000000000000000000.log", 26879, 30637, "0–30636", "3–189", GREEN_3NODE,
         "LeaderChange: 58"),
    _row(GREENLEMON + "kafka3/" + M0 + "00000000000000028870-0000000189.checkpoint", 3, 72, "0–71", "189",
         GREEN_SNAPSHOT, HEADER_FOOTER),
    *[_row(GREENLEMON + f"{node}/bootstrap.checkpoint", 3, 3, "0–2", "0", "FeatureLevel: 1", HEADER_FOOTER)
      for node in ("kafka", "kafka1", "kafka2", "kafka3")],
]

# SOURCES.md, "Validation against real logs": the dataset totals of batches and records.
TOTALS = {
    "greenlemonT__kafka-temp": (86204, 98153),
    "apache__kafka": (202, 358),
    "HastarTara__NE_streaming_project": (4536, 4543),
    "Balaji-MohanAG__Kirana-store": (21601, 21890),
    "galgrayzer__kafka-docker-compose": (840, 847),
    "dkoh12__Systems": (7602, 7778),
    "IndusWargods__local-test-rig": (51265, 51350),
}
# apache__kafka/SOURCE.md and SOURCES.md: the 18 PartitionRecord v1 written by a pre-release (Oct/Nov 2023) trunk
# build, 6 in each of the three replicas of the 94-record log ("Partition: 6" there).
PRE_RELEASE_PARTITION_RECORDS = {
    APACHE + f"kafka-{node}/" + M0 + "00000000000000000000.log": 6
    for node in ("1168504093769635972", "15372165916945441544", "2249262930763353014")
}
