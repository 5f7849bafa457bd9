"""Migration verification: ZooKeeper's last state against the KRaft metadata a ZK → KRaft migration wrote.

``tree`` reads the ZooKeeper side (live, files or a snapshot table), ``mapping`` lays both sides out under Kafka's
mapping rules of each release 3.4–3.9, ``compare`` finds the divergences and ``diff`` puts it together with the
offset ZooKeeper reflects and the dual-write lag.
"""
