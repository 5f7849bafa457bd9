"""Migration verification: ZooKeeper's last state against the KRaft log a migration wrote, and its test encoder."""
