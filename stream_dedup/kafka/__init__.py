"""The Kafka adapters: the edges of the service and of the stages, knowing nothing of the engine.

Modules, outside-in: `source` (consumer, commits, rebalances), `sink` (producer, acks), `route`
and `headers` (pure: records and verdicts to output records), `retry` (backoff, shutdown),
`reporting` (what the adapters report to: metrics and readiness, or nothing), `security` (client
settings, the kafka-python fix `install`s), `topics` (admin), `produce` (file -> topic).
`stream_dedup.runtime` wires them to the engine.
"""

from ..errors import ServiceError

__all__ = ["ServiceError"]
