#!/usr/bin/env bash
# RocksDB libraries side by side (--rocksdb-lib): closed-loop throughput and p99.9 latency of
# each library on the same three traces (a tumbling incremental window with zipfian keys, the
# paper's sliding holistic window and interval join on the Borg input played 10 times), 2M
# requests each, the paper's store settings. The libraries alternate within each round, so
# this machine's drift falls on all of them alike.
# Usage: scripts/bench-rocksdb-libs.sh [GADGET] [OUT_DIR] [ROUNDS] [LIBRARIES...]
set -euo pipefail
cd "$(dirname "$0")/.."
gadget="${1:-./target/release/gadget}"
out="${2:-out/bench-rocksdb-libs}"
rounds="${3:-2}"
shift 3 || shift $#
libs=("$@")
[ ${#libs[@]} -gt 0 ] || libs=(flink-1.20 flink-2.x forst current debian)
mkdir -p "$out"
declare -A configs=(
  [tumbling-incr]="examples/bench/tumbling-incr-zipf.toml"
  [sliding-holistic]="examples/paper/sliding-holistic.toml --input-passes 10"
  [interval-join]="examples/paper/interval-join.toml --input-passes 10"
)
traces=(tumbling-incr sliding-holistic interval-join)
for t in "${traces[@]}"; do
  [ -f "$out/$t.gtrace" ] || "$gadget" gen ${configs[$t]} --limit 2000000 -o "$out/$t.gtrace" >/dev/null
done
for round in $(seq 1 "$rounds"); do
  for t in "${traces[@]}"; do
    for lib in "${libs[@]}"; do
      json="$out/$t.$lib.$round.json"
      "$gadget" replay "$out/$t.gtrace" --store rocksdb --rocksdb-lib "$lib" --label "$lib" -o "$json" >/dev/null
      python3 - "$json" "$t" "$lib" "$round" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
a = [x for x in r["latency"] if x["op"] == "all"][0]
print("%s\t%s\tround %s\t%d requests\t%.0f K/s\tp99.9 %.1f us\tRocksDB %s" % (
    sys.argv[2], sys.argv[3], sys.argv[4], r["requests"], r["throughput"] / 1000,
    a["p999_ns"] / 1000, r["context"]["store_settings"].get("rocksdb_version", "?")))
PY
    done
  done
done | tee "$out/results.tsv"
