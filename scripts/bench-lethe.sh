#!/usr/bin/env bash
# Lethe against RocksDB on a delete-heavy streaming workload (BENCHMARKS.md, "Lethe against
# RocksDB"): what Lethe's paper measures, the space of the live files and the deletes the tree
# still holds (tombstones not yet compacted away) at the end, with the throughput beside them.
# Three stores, run alternately, REPS rounds:
#   rocksdb        frocksdb 6.20.3 (Flink 1.x's), Flink's options
#   lethe-rocksdb  Lethe's build with RocksDB's own compaction policy (the same build, FADE off)
#   lethe-fade     Lethe with FADE and a delete-persistence threshold of DTH
#
#   scripts/bench-lethe.sh [REQUESTS] [REPS] [DTH]     (default 60000000 2 30s)
set -euo pipefail
cd "$(dirname "$0")/.."
requests="${1:-60000000}"
reps="${2:-2}"
dth="${3:-30s}"
gadget=./target/release/gadget
[ -x "$gadget" ] || { echo "bench-lethe: build it first: cargo build --release -p gadget-cli" >&2; exit 1; }
config=examples/bench/lethe-deletes.toml
common=(--limit "$requests" --write-buffer-mb 8 --store-counters --json)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
run() { # NAME ARGS...
  local name="$1"
  shift
  "$gadget" run "$config" "${common[@]}" "$@" >"$out/$name.$rep.json"
}
for rep in $(seq 1 "$reps"); do
  run rocksdb --store rocksdb
  run lethe-rocksdb --store lethe --lethe-compaction rocksdb
  run lethe-fade --store lethe --lethe-compaction fade --lethe-delete-persistence "$dth"
  echo "bench-lethe: round $rep of $reps done" >&2
done
python3 - "$out" "$reps" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
libraries = set()
def cell(values, scale=1.0, digits=0):
    values = [v / scale for v in values]
    text = lambda v: f"{v:,.{digits}f}"
    return f"{text(statistics.median(values))} ({text(min(values))}-{text(max(values))})"
print("median (lowest-highest) of each store's runs")
print(f"{'store':<15}{'seconds':>20}{'Mreq/s':>24}{'live MiB':>22}{'tombstones in files':>28}{'in memtables':>28}")
for name in ["rocksdb", "lethe-rocksdb", "lethe-fade"]:
    rs = [json.load(open(f"{out}/{name}.{r}.json")) for r in range(1, reps + 1)]
    libraries |= {r["context"]["store_libraries"][0] for r in rs}
    counter = lambda key: [r["store_counters"][key] for r in rs]
    print(f"{name:<15}{cell([r['seconds'] for r in rs], 1, 1):>20}"
          f"{cell([r['throughput'] for r in rs], 1e6, 3):>24}"
          f"{cell(counter('rocksdb.held.live_sst_bytes'), 2**20, 1):>22}"
          f"{cell(counter('rocksdb.held.tombstones_in_files')):>28}"
          f"{cell(counter('rocksdb.held.tombstones_in_memtables')):>28}")
print(f"({reps} rounds run alternately, on: " + "; ".join(sorted(libraries)) + ")")
PY
