#!/usr/bin/env bash
# Shards on this machine: the same YCSB-B run (closed loop) as 1, 2 and 3 shards, each a
# `gadget run --shard I/N` process started at one agreed instant (--start-at) against one
# three-node Redis Cluster, merged with `gadget merge`; alternating rounds. Prints aggregate
# throughput and the merged latency tail per shard count.
# Usage: scripts/scale-out-shards.sh [OUT_DIR]   REPS (3), OPS (operations, 300000), GADGET
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/scale-out-shards}"
reps="${REPS:-3}"
ops="${OPS:-300000}"
gadget="${GADGET:-./target/release/gadget}"
[ -x "$gadget" ] || cargo build --release --locked -p gadget-cli
mkdir -p "$out"
work="$(mktemp -d)"
cleanup() {
  "$gadget" cluster down --dir "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
url="$("$gadget" cluster up --nodes 3 --dir "$work/cluster")"
workload=examples/ycsb/workloadb.toml
printf 'round\tshards\trequests\tthroughput\tp50_ns\tp99_ns\tp999_ns\n' >"$out/runs.tsv"
for round in $(seq "$reps"); do
  for n in 1 2 3; do
    start="$(python3 -c 'import time; print(f"{time.time() + 3:.3f}")')"
    pids=()
    for i in $(seq 0 $((n - 1))); do
      "$gadget" run "$workload" --store redis-cluster --redis-url "$url" -p operationcount="$ops" \
        --shard "$i/$n" --start-at "$start" -o "$out/r$round-n$n-s$i.json" >/dev/null 2>"$out/r$round-n$n-s$i.err" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    "$gadget" merge "$out"/r$round-n$n-s*.json -o "$out/r$round-n$n.json" >/dev/null 2>&1
    jq -r --arg r "$round" --arg n "$n" '([.latency[] | select(.op == "all")][0]) as $a
      | [$r, $n, .requests, (.throughput | floor), $a.p50_ns, $a.p99_ns, $a.p999_ns] | @tsv' \
      "$out/r$round-n$n.json" >>"$out/runs.tsv"
    tail -n 1 "$out/runs.tsv" >&2
  done
done
python3 - "$out/runs.tsv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
base = None
print("| shards | requests | aggregate throughput (median) | ×1 shard | p50 | p99 | p99.9 |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for n in ("1", "2", "3"):
    rs = [r for r in rows if r["shards"] == n]
    med = lambda k: statistics.median(float(r[k]) for r in rs)
    t = med("throughput")
    base = base or t
    print("| %s | %d | %.0f /s | %.2f× | %.1f µs | %.1f µs | %.1f µs |" % (n, med("requests"), t, t / base,
          med("p50_ns") / 1e3, med("p99_ns") / 1e3, med("p999_ns") / 1e3))
PY
