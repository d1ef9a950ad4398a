"""Commands around the service that are no part of a message's path: scoring against labelled
streams (`eval`), re-reading verdicts for review (`audit`), the input fuzzer (`fuzz`) and the
local demo (`demo`, with its local broker: `broker`, `ports`)."""
