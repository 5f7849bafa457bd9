"""The replay of decoded records into the metadata image, rule by rule as Kafka's MetadataDelta applies them.

The expected states are written out by hand from Kafka's rules (PartitionRegistration.merge, the transaction
markers, RemoveTopicRecord), not computed by the code under test.
"""

from __future__ import annotations

import json
from typing import Any

from kafka_zk_audit.snapshot.kraft.batches import MetadataRecord, Undecodable
from kafka_zk_audit.snapshot.kraft.image import ImageBuilder
from kafka_zk_audit.snapshot.kraft.render import znodes

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
OTHER_ID = "AAAAAAAAAAAAAAAAAAAAAg"
_KEYS = {"FeatureLevelRecord": 12, "TopicRecord": 2, "PartitionRecord": 3, "PartitionChangeRecord": 5,
         "RegisterBrokerRecord": 0, "BrokerRegistrationChangeRecord": 17, "RemoveTopicRecord": 9, "ConfigRecord": 4,
         "BeginTransactionRecord": 23, "EndTransactionRecord": 24, "AbortTransactionRecord": 25,
         "ProducerIdsRecord": 15, "UserScramCredentialRecord": 11, "LeaderChangeMessage": 2, "ClearElrRecord": 28}


class Log:
    """Records with consecutive offsets and batch times, as a controller appends them."""

    def __init__(self) -> None:
        self.records: list[MetadataRecord | Undecodable] = []

    def add(self, name: str, control: bool = False, epoch: int = 1, **fields: Any) -> int:
        offset = len(self.records)
        self.records.append(MetadataRecord(offset, 1_000 + offset, epoch, control, _KEYS[name], 0, name, fields))
        return offset

    def replay(self) -> ImageBuilder:
        builder = ImageBuilder()
        for record in self.records:
            if isinstance(record, Undecodable):
                builder.skip(record)
            else:
                builder.add(record)
        return builder


def partition(**changes: Any) -> dict[str, Any]:
    fields = {"PartitionId": 0, "TopicId": TOPIC_ID, "Replicas": [1, 2, 3], "Isr": [1, 2, 3], "RemovingReplicas": [],
              "AddingReplicas": [], "Leader": 1, "LeaderRecoveryState": 0, "LeaderEpoch": 0, "PartitionEpoch": 0}
    return {**fields, **changes}


def broker(broker_id: int, fenced: bool = False) -> dict[str, Any]:
    return {"BrokerId": broker_id, "IsMigratingZkBroker": False, "IncarnationId": OTHER_ID,
            "BrokerEpoch": 10 + broker_id,
            "EndPoints": [{"Name": "PLAINTEXT", "Host": f"b{broker_id}", "Port": 9092, "SecurityProtocol": 0}],
            "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1, "MaxSupportedVersion": 21}],
            "Rack": None, "Fenced": fenced, "InControlledShutdown": False, "LogDirs": []}


def test_a_change_bumps_the_partition_epoch_and_the_leader_epoch_only_with_a_leader() -> None:
    log = Log()
    log.add("TopicRecord", Name="orders", TopicId=TOPIC_ID)
    log.add("PartitionRecord", **partition(LeaderEpoch=4, PartitionEpoch=7))
    log.add("PartitionChangeRecord", PartitionId=0, TopicId=TOPIC_ID, Isr=[1, 2], Leader=-2, Replicas=None,
            RemovingReplicas=None, AddingReplicas=None, LeaderRecoveryState=-1, Directories=None,
            EligibleLeaderReplicas=None, LastKnownElr=None)
    changed = log.add("PartitionChangeRecord", PartitionId=0, TopicId=TOPIC_ID, Isr=None, Leader=2)
    state = log.replay().image.partitions[(TOPIC_ID, 0)]
    assert (state.isr, state.leader, state.leader_epoch, state.partition_epoch) == ([1, 2], 2, 5, 9)
    assert (state.replicas, state.origin.created_offset, state.origin.changed_offset) == ([1, 2, 3], 1, changed)


def test_records_of_an_aborted_or_open_transaction_are_not_applied() -> None:
    log = Log()
    log.add("BeginTransactionRecord", Name="ZK Migration")
    log.add("TopicRecord", Name="lost", TopicId=OTHER_ID)
    log.add("AbortTransactionRecord", Reason="Controller failover")
    log.add("BeginTransactionRecord", Name="ZK Migration")
    log.add("TopicRecord", Name="orders", TopicId=TOPIC_ID)
    log.add("EndTransactionRecord")
    log.add("BeginTransactionRecord", Name="Bootstrap records")
    log.add("TopicRecord", Name="pending", TopicId="AAAAAAAAAAAAAAAAAAAAAw")
    builder = log.replay()
    assert [topic.name for topic in builder.image.topics.values()] == ["orders"]
    assert builder.aborted_transactions == 1
    assert builder.open_transaction == (6, "Bootstrap records")


def test_removing_a_topic_drops_its_partitions_and_configs_and_a_recreated_one_starts_afresh() -> None:
    log = Log()
    log.add("TopicRecord", Name="orders", TopicId=TOPIC_ID)
    log.add("PartitionRecord", **partition(LeaderEpoch=9))
    log.add("ConfigRecord", ResourceType=2, ResourceName="orders", Name="retention.ms", Value="1000")
    log.add("RemoveTopicRecord", TopicId=TOPIC_ID)
    log.add("TopicRecord", Name="orders", TopicId=OTHER_ID)
    log.add("PartitionRecord", **partition(TopicId=OTHER_ID))
    image = log.replay().image
    assert list(image.topics) == [OTHER_ID]
    assert list(image.partitions) == [(OTHER_ID, 0)] and image.partitions[(OTHER_ID, 0)].leader_epoch == 0
    assert image.configs == {} and image.anomalies == []


def test_epochs_going_back_and_changes_to_unknown_partitions_become_anomalies_not_errors() -> None:
    log = Log()
    log.add("TopicRecord", Name="orders", TopicId=TOPIC_ID)
    log.add("PartitionRecord", **partition(LeaderEpoch=5, PartitionEpoch=5))
    regressed = log.add("PartitionRecord", **partition(LeaderEpoch=3, PartitionEpoch=6))
    unknown = log.add("PartitionChangeRecord", PartitionId=7, TopicId=TOPIC_ID, Leader=1)
    log.records.append(Undecodable(4, 1_004, 1, 3, 1, "2 bytes left over", "00000000000000000000.log"))
    image = log.replay().image
    assert [(a.kind, a.offset) for a in image.anomalies] == [
        ("epoch_regressed", regressed), ("unknown_partition_changed", unknown), ("undecodable_record", 4)]
    assert image.anomalies[0].detail == "leader epoch 5 -> 3"
    assert "apiKey 3 version 1" in image.anomalies[2].detail


def test_the_image_is_laid_out_as_kafkas_zookeeper_writer_lays_it_out() -> None:
    log = Log()
    log.add("LeaderChangeMessage", control=True, epoch=7, LeaderId=3000, Voters=[{"VoterId": 3000}],
            GrantingVoters=[])
    log.add("RegisterBrokerRecord", **broker(1))
    log.add("RegisterBrokerRecord", **broker(2, fenced=True))
    log.add("TopicRecord", Name="orders", TopicId=TOPIC_ID)
    log.add("PartitionRecord", **partition(Replicas=[1, 2], Isr=[1], AddingReplicas=[2], LeaderEpoch=3,
                                           PartitionEpoch=8))
    log.add("ConfigRecord", ResourceType=4, ResourceName="", Name="log.retention.ms", Value="5")
    log.add("ProducerIdsRecord", BrokerId=1, BrokerEpoch=11, NextProducerId=5000)
    nodes = {node.path: node for node in znodes(log.replay().image, "cluster-id")}
    assert json.loads(nodes["/brokers/topics/orders"].data) == {
        "version": 3, "topic_id": TOPIC_ID, "partitions": {"0": [1, 2]}, "adding_replicas": {"0": [2]},
        "removing_replicas": {}}
    state = nodes["/brokers/topics/orders/partitions/0/state"]
    assert json.loads(state.data) == {"controller_epoch": 7, "leader": 1, "version": 1, "leader_epoch": 3, "isr": [1]}
    assert state.version == 8  # the partition epoch, as the migration maps the state znode's version
    assert "/brokers/ids/1" in nodes and "/brokers/ids/2" in nodes  # registered, fenced or not
    assert json.loads(nodes["/kraft/brokers/2"].data)["fenced"] is True
    assert "/controller" not in nodes and nodes["/controller_epoch"].data == b"7"  # the quorum leader is no broker
    assert json.loads(nodes["/kraft/quorum"].data)["leader_id"] == 3000
    assert json.loads(nodes["/config/brokers/<default>"].data) == {"version": 1, "config": {"log.retention.ms": "5"}}
    assert json.loads(nodes["/config/topics/orders"].data) == {"version": 1, "config": {}}
    assert json.loads(nodes["/latest_producer_id_block"].data)["block_start"] == "5000"
    assert nodes["/brokers/topics"].data is None  # a container
