"""Every KRaft record the codec knows, declared once: Kafka's own message definitions, transcribed.

``METADATA_RECORDS`` are the framed records of the metadata log and snapshots (apiKey → ``Message``): the released
apiKeys 0–28 of Kafka 3.0–4.2 (``schemas/metadata/*.json`` of Kafka's source; 13 was never used) and the removed 6
and 16 (3.0–3.4 / 3.0–3.2). ``CONTROL_RECORDS`` are the control records (``ControlRecordType`` id → ``Message``),
whose values are bare v0 bodies. The unreleased apiKey 29 (two drafts claim it) is left out on purpose: it decodes
as ``Undecodable``. So do the pre-release layouts that reused released numbers (e.g. PartitionRecord v1 = ELR in
trunk builds of Oct/Nov 2023): a released Kafka reads v1 as Directories, and so does this codec.

Field names, types, versions and defaults are the JSON's (``tests/snapshot/kraft/test_records_match_kafka_schemas.py``
checks them against the JSON files, version by version); ``about``/``entityType``/``mapKey`` have no wire effect and
are left out.
"""

from __future__ import annotations

from kafka_zk_audit.snapshot.kraft.schema import Field as F
from kafka_zk_audit.snapshot.kraft.schema import Message

_METADATA = (
    Message("RegisterBrokerRecord", "0-3", api_key=0, fields=(
        F("BrokerId", "int32"),
        F("IsMigratingZkBroker", "bool", "2+", default="false"),
        F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"),
        F("EndPoints", "[]BrokerEndpoint", fields=(
            F("Name", "string"),
            F("Host", "string"),
            F("Port", "uint16"),
            F("SecurityProtocol", "int16"),
        )),
        F("Features", "[]BrokerFeature", fields=(
            F("Name", "string"),
            F("MinSupportedVersion", "int16"),
            F("MaxSupportedVersion", "int16"),
        )),
        F("Rack", "string", nullable="0+"),
        F("Fenced", "bool", default="true"),
        F("InControlledShutdown", "bool", "1+", default="false"),
        F("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
    )),
    Message("UnregisterBrokerRecord", "0", api_key=1, fields=(
        F("BrokerId", "int32"),
        F("BrokerEpoch", "int64"),
    )),
    Message("TopicRecord", "0", api_key=2, fields=(
        F("Name", "string"),
        F("TopicId", "uuid"),
    )),
    Message("PartitionRecord", "0-2", api_key=3, fields=(
        F("PartitionId", "int32", default="-1"),
        F("TopicId", "uuid"),
        F("Replicas", "[]int32"),
        F("Isr", "[]int32"),
        F("RemovingReplicas", "[]int32"),
        F("AddingReplicas", "[]int32"),
        F("Leader", "int32", default="-1"),
        F("LeaderRecoveryState", "int8", tagged="0+", tag=0, default="0"),
        F("LeaderEpoch", "int32", default="-1"),
        F("PartitionEpoch", "int32", default="-1"),
        F("Directories", "[]uuid", "1+"),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=1, default="null"),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=2, default="null"),
    )),
    Message("ConfigRecord", "0", api_key=4, fields=(
        F("ResourceType", "int8"),
        F("ResourceName", "string"),
        F("Name", "string"),
        F("Value", "string", nullable="0+"),
    )),
    Message("PartitionChangeRecord", "0-2", api_key=5, fields=(
        F("PartitionId", "int32", default="-1"),
        F("TopicId", "uuid"),
        F("Isr", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
        F("Leader", "int32", tagged="0+", tag=1, default="-2"),
        F("Replicas", "[]int32", nullable="0+", tagged="0+", tag=2, default="null"),
        F("RemovingReplicas", "[]int32", nullable="0+", tagged="0+", tag=3, default="null"),
        F("AddingReplicas", "[]int32", nullable="0+", tagged="0+", tag=4, default="null"),
        F("LeaderRecoveryState", "int8", tagged="0+", tag=5, default="-1"),
        F("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default="null"),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=6, default="null"),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=7, default="null"),
    )),
    # removed in 3.5 (never written by a release: superseded by 18 before KRaft ACLs shipped)
    Message("AccessControlRecord", "0", api_key=6, fields=(
        F("ResourceType", "int8"),
        F("ResourceName", "string", nullable="0+"),
        F("PatternType", "int8"),
        F("Principal", "string"),
        F("Host", "string"),
        F("Operation", "int8"),
        F("PermissionType", "int8"),
    )),
    Message("FenceBrokerRecord", "0", api_key=7, fields=(
        F("Id", "int32"),
        F("Epoch", "int64"),
    )),
    Message("UnfenceBrokerRecord", "0", api_key=8, fields=(
        F("Id", "int32"),
        F("Epoch", "int64"),
    )),
    Message("RemoveTopicRecord", "0", api_key=9, fields=(
        F("TopicId", "uuid"),
    )),
    Message("DelegationTokenRecord", "0", api_key=10, fields=(
        F("Owner", "string"),
        F("Requester", "string"),
        F("Renewers", "[]string"),
        F("IssueTimestamp", "int64"),
        F("MaxTimestamp", "int64"),
        F("ExpirationTimestamp", "int64"),
        F("TokenId", "string"),
    )),
    Message("UserScramCredentialRecord", "0", api_key=11, fields=(
        F("Name", "string"),
        F("Mechanism", "int8"),
        F("Salt", "bytes"),
        F("StoredKey", "bytes"),
        F("ServerKey", "bytes"),
        F("Iterations", "int32"),
    )),
    Message("FeatureLevelRecord", "0", api_key=12, fields=(
        F("Name", "string"),
        F("FeatureLevel", "int16"),
    )),
    Message("ClientQuotaRecord", "0", api_key=14, fields=(
        F("Entity", "[]EntityData", fields=(
            F("EntityType", "string"),
            F("EntityName", "string", nullable="0+"),
        )),
        F("Key", "string"),
        F("Value", "float64"),
        F("Remove", "bool"),
    )),
    Message("ProducerIdsRecord", "0", api_key=15, fields=(
        F("BrokerId", "int32"),
        F("BrokerEpoch", "int64", default="-1"),
        F("NextProducerId", "int64"),
    )),
    # removed in 3.3
    Message("RemoveFeatureLevelRecord", "0", api_key=16, fields=(
        F("Name", "string"),
    )),
    Message("BrokerRegistrationChangeRecord", "0-2", api_key=17, fields=(
        F("BrokerId", "int32"),
        F("BrokerEpoch", "int64"),
        F("Fenced", "int8", tagged="0+", tag=0),
        F("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
        F("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
    )),
    Message("AccessControlEntryRecord", "0", api_key=18, fields=(
        F("Id", "uuid"),
        F("ResourceType", "int8"),
        F("ResourceName", "string"),
        F("PatternType", "int8"),
        F("Principal", "string"),
        F("Host", "string"),
        F("Operation", "int8"),
        F("PermissionType", "int8"),
    )),
    Message("RemoveAccessControlEntryRecord", "0", api_key=19, fields=(
        F("Id", "uuid"),
    )),
    Message("NoOpRecord", "0", api_key=20, fields=(
    )),
    Message("ZkMigrationStateRecord", "0", api_key=21, fields=(
        F("ZkMigrationState", "int8"),
    )),
    Message("RemoveUserScramCredentialRecord", "0", api_key=22, fields=(
        F("Name", "string"),
        F("Mechanism", "int8"),
    )),
    Message("BeginTransactionRecord", "0", api_key=23, fields=(
        F("Name", "string", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    Message("EndTransactionRecord", "0", api_key=24, fields=(
    )),
    Message("AbortTransactionRecord", "0", api_key=25, fields=(
        F("Reason", "string", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    Message("RemoveDelegationTokenRecord", "0", api_key=26, fields=(
        F("TokenId", "string"),
    )),
    Message("RegisterControllerRecord", "0", api_key=27, fields=(
        F("ControllerId", "int32"),
        F("IncarnationId", "uuid"),
        F("ZkMigrationReady", "bool"),
        F("EndPoints", "[]ControllerEndpoint", fields=(
            F("Name", "string"),
            F("Host", "string"),
            F("Port", "uint16"),
            F("SecurityProtocol", "int16"),
        )),
        F("Features", "[]ControllerFeature", fields=(
            F("Name", "string"),
            F("MinSupportedVersion", "int16"),
            F("MaxSupportedVersion", "int16"),
        )),
    )),
    Message("ClearElrRecord", "0", api_key=28, fields=(
        F("TopicName", "string"),
    )),
)

# ControlRecordType ids: 0 ABORT and 1 COMMIT are transaction markers (not metadata), -1 UNKNOWN.
_CONTROL = (
    Message("LeaderChangeMessage", "0-1", control_type=2, fields=(
        F("Version", "int16"),
        F("LeaderId", "int32"),
        F("Voters", "[]Voter"),
        F("GrantingVoters", "[]Voter"),
    ), common_structs=(
        F("Voter", "Voter", fields=(
            F("VoterId", "int32"),
            F("VoterDirectoryId", "uuid", "1+"),
        )),
    )),
    Message("SnapshotHeaderRecord", "0", control_type=3, fields=(
        F("Version", "int16"),
        F("LastContainedLogTimestamp", "int64"),
    )),
    Message("SnapshotFooterRecord", "0", control_type=4, fields=(
        F("Version", "int16"),
    )),
    Message("KRaftVersionRecord", "0", control_type=5, fields=(
        F("Version", "int16"),
        F("KRaftVersion", "int16"),
    )),
    Message("VotersRecord", "0", control_type=6, fields=(
        F("Version", "int16"),
        F("Voters", "[]Voter", fields=(
            F("VoterId", "int32"),
            F("VoterDirectoryId", "uuid"),
            F("Endpoints", "[]Endpoint", fields=(
                F("Name", "string"),
                F("Host", "string"),
                F("Port", "uint16"),
            )),
            F("KRaftVersionFeature", "KRaftVersionFeature", fields=(
                F("MinSupportedVersion", "int16"),
                F("MaxSupportedVersion", "int16"),
            )),
        )),
    )),
)

METADATA_RECORDS: dict[int, Message] = {message.api_key: message for message in _METADATA}  # type: ignore[misc]
CONTROL_RECORDS: dict[int, Message] = {message.control_type: message for message in _CONTROL}  # type: ignore[misc]
CONTROL_TYPE_IDS: dict[str, int] = {message.name: type_id for type_id, message in CONTROL_RECORDS.items()}
