"""The near stage's index: block tables over 64-bit Simhash fingerprints, and anchor postings.

Theory of operation
-------------------
Split the 64 bits into r blocks. If two fingerprints differ in at most k bits, the differing bits
touch at most k blocks, so at least r - k blocks are identical in both (pigeonhole). Build one
table for every choice of m = r - k blocks, keyed on the concatenated bits of those blocks: the two
fingerprints then share the bucket of the table whose blocks are exactly the untouched ones. A
query probes one bucket per table and Hamming-checks what it finds, so **no pair within distance
k is ever missed**, whatever the data (tests/property checks this for every layout).

* `blocks` layout: r = k + 1, m = 1 (seeds 002): k + 1 tables keyed on 64/(k+1) bits.
* `permuted` layout: r > k + 1 blocks, m = r - k (Manku, Jain, Das Sarma, WWW 2007, whose tables
  are the permutations that bring those m blocks to the front): C(r, m) tables keyed on about
  64*m/r bits. More tables, longer keys, far fewer candidates per query.
* `auto` layout (the default): the permuted layout with the fewest tables whose entries compared
  a query stay within 32 at `index.capacity` stored fingerprints (k = 3: 4 tables of 16 bits up to
  524,288, 10 of 25-26 bits up to ~153M, 20 of 31-33 bits beyond), so the cost of a query does not
  grow with the window the deployment is sized for. The state records its layout; another one is
  refused (`Snapshots._check_layout`).

Cost: with N fingerprints stored, a bucket holds about N / 2^b entries for a b-bit key, so a query
reads T buckets and compares about T * N / 2^b candidates (4 tables of 16 bits: 61 at 1M, 610 at
10M). Query time is one multi-get of T keys plus a vectorized XOR/popcount over the candidates:
it grows with the candidate count and nothing else. The `scale` benchmark prints both.

A bucket's newest entries are one value and its older ones sealed chunks (`chunks`), so an insert
writes what it adds and at most a chunk, however full the bucket. A new state can be filled with
a window of history through RocksDB's SST ingestion (`bulk`).

Anchors (fingerprint.anchors) propose the pairs that Simhash moves too far on short texts; their
postings keep the most recent `anchor_postings` messages per anchor, so a common phrase cannot
make a query expensive.
"""
