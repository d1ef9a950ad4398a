"""Scaling out on Kafka: state that survives a partition moving to another process
(`changelog`: a `KVStore` mirrored to a compacted topic, and its restore), and `scope: key`
(`partitioned`: one engine per input partition, restored before it decides anything)."""
