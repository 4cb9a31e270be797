#!/usr/bin/env bash
# Regenerates docs/characterization.md's tables and plots: `gadget analyze` of every Flink
# reference recording, and `gadget compare` of Gadget's trace with Flink's for three of them.
# Usage: scripts/characterize.sh [path/to/gadget]   (needs ../shared beside the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
gadget="${1:-./target/release/gadget}"
refs=../shared/reference-traces/flink-1.20
out=docs/characterization
[ -d "$refs" ] || { echo "characterize: $refs is missing (the Flink recordings)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in tumbling-incr tumbling-hol sliding-incr sliding-hol session-incr session-hol aggregation interval-join tumbling-incr.rocksdb-timers; do
  "$gadget" analyze "$refs/$name.tsv.gz" --plots "$tmp/$name" -o "$out/$name.json" > "$out/$name.txt"
  mkdir -p "$out/$name"
  cp "$tmp/$name"/{stack-distance,unique-sequences,miss-ratio-curve,working-set,ttl-cdf}.png "$out/$name/"
done
for name in tumbling-incr sliding-hol session-hol; do
  "$gadget" gen "examples/flink-reference/$name.toml" -o "$tmp/$name.gtrace" > /dev/null
  cp "$refs/$name.tsv.gz" "$tmp/flink-$name.tsv.gz"
  "$gadget" compare "$tmp/flink-$name.tsv.gz" "$tmp/$name.gtrace" --plots "$tmp/compare-$name" > "$out/compare-$name.txt"
  mkdir -p "$out/compare-$name"
  cp "$tmp/compare-$name"/{stack-distance,unique-sequences}.png "$out/compare-$name/"
done
# docs/ycsb-vs-streaming.md: Flink's tumbling-incr against its closest YCSB workloads
yvs=docs/ycsb-vs-streaming
mkdir -p "$yvs"
for d in latest hotspot sequential uniform; do
  "$gadget" gen "examples/ycsb-vs-streaming/tumbling-incr-$d.toml" -o "$tmp/ycsb-$d.gtrace" > /dev/null
done
cp "$refs/tumbling-incr.tsv.gz" "$tmp/flink-tumbling-incr.tsv.gz"
"$gadget" compare "$tmp/flink-tumbling-incr.tsv.gz" "$tmp"/ycsb-{latest,hotspot,sequential,uniform}.gtrace \
  --plots "$tmp/yvs" > "$yvs/table.txt"
cp "$tmp/yvs"/{stack-distance,unique-sequences,miss-ratio-curve}.png "$yvs/"
echo "characterize: wrote $yvs" >&2
echo "characterize: wrote $out" >&2
