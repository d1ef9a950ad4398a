"""The `stream-dedup` command line: `main` dispatches to the file commands (`file_mode`) and the
Kafka commands (`kafka_commands`); `parser` builds the arguments of each."""
