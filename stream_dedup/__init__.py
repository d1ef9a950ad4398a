"""stream-dedup: remove repeated and near-repeated Chinese short texts from live feeds."""

__version__ = "0.1.0"
