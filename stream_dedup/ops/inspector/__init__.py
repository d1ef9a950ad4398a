"""The inspector: recent verdicts, pairs side by side, lookups, the check form and audit judging,
served beside the metrics (`app.Inspector`)."""
