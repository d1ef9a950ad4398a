"""Measuring duplicate detectors on labelled streams: ours against the anchors users know.

labelled (read a stream and its truth) → detector (what is measured) → runner (feed, time,
score) → score (precision, recall, per edit kind) → report (tables and JSON).
"""
