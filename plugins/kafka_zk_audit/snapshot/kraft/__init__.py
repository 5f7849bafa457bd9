"""The KRaft source of the snapshot stage: Kafka's own ``__cluster_metadata`` files, read without a cluster.

    metadata.log.dir/__cluster_metadata-0/ (NNN.log segments, NNN-EEE.checkpoint snapshots) + bootstrap.checkpoint
        ──metadata_dir──▶ a plan: the newest usable checkpoint + the log records after it, up to a target
        ──segments, batches──▶ record batches, CRC-checked ──messages──▶ decoded records (name, version, fields)

The codec is symmetric and byte-exact: ``records`` declares every released metadata and control record once
(Kafka's message JSON, transcribed; ``schema`` its vocabulary), ``codegen`` compiles each version into a decode and an
encode function, ``wire`` holds the varints and uuids, ``compression`` the batch codecs. Decoding then encoding a
real batch gives its bytes back. ``kind`` tells a KRaft metadata dir from a ZooKeeper data dir. Broken framing is a
``KraftLogError`` naming file, byte, offset and what to do; a record that cannot be decoded is an ``Undecodable``.
"""
