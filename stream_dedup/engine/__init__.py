"""The engine: a message's path through the deduplication, one module per step, in this order.

1. `normalize`: the text without decoration (markup, mentions, tags, links, symbols), simplified,
   lowercased; `lexicon` and `numerals` hold what the steps after it read of words and numbers.
2. `exact`: the same normalized text seen before (a rolling Bloom filter, `bloom`, confirmed in
   the state).
3. `fingerprint` and `features`: a batch's Simhash and anchors (`strategies`: the other
   fingerprint strategies; `scope`: fingerprints salted per scope key).
4. `index`: the candidates, earlier messages whose blocks or anchors the message shares.
5. `verify` and `meaning`: how alike the texts are, and whether a difference changes the meaning
   (`commonness`: how common a shared piece of text is).
6. `verdict`: every rule that turns what was found into a decision.
7. `expiry`: messages older than the window leave the index.

`batch` runs a batch of messages through the steps (`Engine`); `stored` is the record kept per
message. The state interface (`stream_dedup.state`) stands beside the engine; `jit` compiles the
kernels of the steps.
"""
