"""The files source: snapshots rebuilt from ZooKeeper's own snapshot and transaction log files."""
