"""The KRaft source: Kafka's ``__cluster_metadata`` log segments and checkpoints, decoded and written byte for byte."""
