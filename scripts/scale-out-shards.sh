#!/usr/bin/env bash
# Shards on this machine: the same YCSB-B run (closed loop) as 1, 2 and 3 shards, each a
# `gadget run --shard I/N` process started at one agreed instant (--start-at) against one
# three-node Redis Cluster, merged with `gadget merge`; alternating rounds. Beside each, the
# native peer: as many `redis-benchmark --cluster` processes (one connection each, no
# pipelining) started together, GETs of values of YCSB's record size over as many keys.
# Prints aggregate throughput and the merged latency tail per shard count, and the peer's.
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
port="${url##*:}"
# the peer's keys: 1,000 records of 1,000 bytes, as YCSB-B's load
redis-benchmark --cluster -p "$port" -t set -n 10000 -r 1000 -d 1000 -q >/dev/null
printf 'round\tshards\trequests\tthroughput\tp50_ns\tp99_ns\tp999_ns\n' >"$out/runs.tsv"
printf 'round\tclients\trequests\tthroughput\tp50_ns\tp99_ns\n' >"$out/peer.tsv"
for round in $(seq "$reps"); do
  for n in 1 2 3; do
    # the peer first: n processes of one connection each, ops/n GETs each, started together
    pids=()
    for i in $(seq 0 $((n - 1))); do
      redis-benchmark --cluster -p "$port" -c 1 -P 1 -n $((ops / n)) -r 1000 -d 1000 -t get --csv \
        >"$out/r$round-peer-n$n-c$i.csv" 2>/dev/null &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    python3 - "$round" "$n" "$ops" "$out"/r$round-peer-n$n-c*.csv >>"$out/peer.tsv" <<'PY'
import csv, sys
round_, n, ops, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
# cluster mode prints the nodes before the CSV: read from its header on
def get_row(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"test"'))
    return next(r for r in csv.DictReader(lines[start:]) if r["test"] == "GET")
rows = [get_row(f) for f in files]
# the processes ran together: their rates add up; the slowest one's p50 and p99
rate = sum(float(r["rps"]) for r in rows)
p50 = max(float(r["p50_latency_ms"]) for r in rows) * 1e6
p99 = max(float(r["p99_latency_ms"]) for r in rows) * 1e6
print(f"{round_}\t{n}\t{ops // n * n}\t{rate:.0f}\t{p50:.0f}\t{p99:.0f}")
PY
    tail -n 1 "$out/peer.tsv" >&2
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
python3 - "$out/runs.tsv" "$out/peer.tsv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
peer = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
base = None
print("| shards | requests | aggregate throughput (median) | ×1 shard | p50 | p99 | p99.9 | redis-benchmark, as many clients | ×1 client | Gadget / peer |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
peer_base = None
for n in ("1", "2", "3"):
    rs = [r for r in rows if r["shards"] == n]
    ps = [r for r in peer if r["clients"] == n]
    med = lambda k, rs=rs: statistics.median(float(r[k]) for r in rs)
    t = med("throughput")
    p = statistics.median(float(r["throughput"]) for r in ps)
    base = base or t
    peer_base = peer_base or p
    print("| %s | %d | %.0f /s | %.2f× | %.1f µs | %.1f µs | %.1f µs | %.0f /s (p50 %.0f µs) | %.2f× | %.2f |" % (
        n, med("requests"), t, t / base, med("p50_ns") / 1e3, med("p99_ns") / 1e3, med("p999_ns") / 1e3,
        p, statistics.median(float(r["p50_ns"]) for r in ps) / 1e3, p / peer_base, t / p))
PY
