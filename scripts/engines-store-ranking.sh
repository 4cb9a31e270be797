#!/usr/bin/env bash
# One logical query, several engines, every embedded store: over the Borg job events (played
# 10 times), QUERY=count (the running count per key: Flink's `aggregation`, Kafka Streams'
# `count`) or QUERY=tumbling (a 5 s tumbling count: Flink's `tumbling-incr`, Kafka Streams'
# `tumbling-count`, whose segments open and drop, and Spark's `tumbling-count`, micro-batches
# that scan the store and end in a flush and a checkpoint), as each engine issues it to its
# state store, each replayed into each store (closed loop, a fresh store per run), alternating
# rounds.
# Prints each store's median throughput per engine and the stores' ranks, so that a ranking
# that changes with the engine shows.
# Usage: scripts/engines-store-ranking.sh [OUT_DIR]   QUERY (count), REPS (3), STORES, GADGET,
#        ENGINES (every engine that has the query; Flink's is required: it orders the table)
set -euo pipefail
cd "$(dirname "$0")/.."
query="${QUERY:-count}"
case "$query" in
  count) flink=aggregation kafka=count spark= ;;
  tumbling) flink=tumbling-incr kafka=tumbling-count spark=tumbling-count ;;
  *) echo "QUERY is count or tumbling, not $query" >&2; exit 2 ;;
esac
engines="${ENGINES:-flink kafka-streams${spark:+ spark}}"
out="${1:-out/engines-store-ranking-$query}"
reps="${REPS:-3}"
stores="${STORES:-rocksdb leveldb lmdb redb fjall sqlite berkeleydb memory}"
gadget="${GADGET:-./target/release/gadget}"
[ -x "$gadget" ] || cargo build --release --locked -p gadget-cli
mkdir -p "$out"
"$gadget" gen examples/flink-reference/$flink.toml --input-passes 10 -o "$out/flink.gtrace" >/dev/null
"$gadget" gen examples/kafka-streams-reference/$kafka.toml --input-passes 10 -o "$out/kafka-streams.gtrace" >/dev/null
if [ -n "$spark" ]; then
  "$gadget" gen examples/spark-reference/$spark.toml --input-passes 10 -o "$out/spark.gtrace" >/dev/null
fi
printf 'round\tengine\tstore\trequests\tthroughput\tp99_ns\n' >"$out/runs.tsv"
for round in $(seq "$reps"); do
  for store in $stores; do
    for engine in $engines; do
      "$gadget" replay "$out/$engine.gtrace" --store "$store" --json 2>/dev/null |
        jq -r --arg r "$round" --arg e "$engine" --arg s "$store" '([.latency[] | select(.op == "all")][0]) as $a
          | [$r, $e, $s, .requests, (.throughput | floor), $a.p99_ns] | @tsv' >>"$out/runs.tsv"
      tail -n 1 "$out/runs.tsv" >&2
    done
  done
done
python3 - "$out/runs.tsv" "$engines" "flink:Flink:$flink" "kafka-streams:Kafka Streams:$kafka" ${spark:+"spark:Spark:$spark"} <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
ran = sys.argv[2].split()
engines = [a.split(":", 2) for a in sys.argv[3:] if a.split(":", 2)[0] in ran]
stores = sorted({r["store"] for r in rows})
med = {(e, s): statistics.median(float(r["throughput"]) for r in rows if r["engine"] == e and r["store"] == s)
       for e, _, _ in engines for s in stores}
rank = {e: {s: i + 1 for i, s in enumerate(sorted(stores, key=lambda s: -med[(e, s)]))} for e, _, _ in engines}
print("| store | " + " | ".join("%s `%s`: requests/s (rank)" % (n, q) for _, n, q in engines) + " |")
print("|---|" + "---:|" * len(engines))
for s in sorted(stores, key=lambda s: rank["flink"][s]):
    print("| %s | " % s + " | ".join("%.0f (%d)" % (med[(e, s)], rank[e][s]) for e, _, _ in engines) + " |")
PY
