"""Operating the process, beside a message's path: the metrics (`metrics`), the metrics port and
readiness (`health`), the log formats (`logs`) and the secrets read from the environment or a
file (`secret`)."""
