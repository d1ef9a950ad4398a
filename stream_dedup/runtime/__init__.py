"""The running process: the one lifecycle (`lifecycle`: signals, backoff, readiness, metrics
port, topic checks, close-all) and the loops it runs, the service (`service`, wired by `run`) and
the stages of `scope: global` (`stage`). The only place where the engine, the Kafka adapters and
the scale-out plug-ins are wired together.

Theory of operation. One process runs one loop over one consumer-group member, one engine and one
producer (`service.Service`); every partition the member is assigned feeds the same engine, so a
near repeat on partition 3 of a message first seen on partition 0 is found. A batch goes:

    poll -> decode -> engine.process (durable) -> route -> produce and wait for acks -> commit

and input offsets are committed only after the last step before them succeeded, so a crash at any
point replays at most the uncommitted batch. Replay is safe because the engine stores every
message id with its first verdict: a replayed message is emitted again with that verdict, never
as a duplicate of its own earlier pass. Delivery is therefore at-least-once: nothing is lost, and a
crash between "produce" and "commit" emits that batch's outputs twice. With `kafka.guarantee:
exactly_once` "produce" and "commit" are one Kafka transaction (`kafka/transaction.py`): a crash
leaves it uncommitted, and read_committed consumers see each input's output once.

State layout. The engine's state is one RocksDB directory per process (`state.path`) holding the
whole index for every partition this process consumes. Scaling out (`scale.scope`) keys it by
partition or by fingerprint shard so that several processes can split the index; nothing here
assumes one process beyond that directory: offsets live in Kafka, verdicts in the state.
"""
