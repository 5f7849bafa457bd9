"""The history stage: the change table and the broken-state intervals from ZooKeeper's transaction logs."""
