#!/usr/bin/env bash
# Seed 003's Figure 2 on this machine: throughput of the YSB lookup-join with its external
# state (the ad table and the window sink) beside the job ("local") and across a network hop
# ("remote"), for one instance on one Redis (single-1), three instances on one Redis
# (single-3) and three instances on a three-node Redis Cluster (multi-3) under its three
# placements. The window's own state lives in the run's store (--store, default memory, as
# the seed's Flink job keeps it on the heap).
#
# - single-* local: a redis-server on loopback; remote: a redis-server the run starts in a
#   network namespace of its own, across a veth link (tbf, 10 Gbit/s) behind a proxy adding
#   $DELAY ± $JITTER each way ([run.stores.NAME.remote]).
# - multi-3: a cluster from `gadget cluster up`; every node but an instance's own is reached
#   through a proxy adding the same delay; native placement (Redis's own hashing: about two
#   of three lookups cross) is the seed's "remote", replicated (every node holds the table)
#   its "local", aligned (hash tags put each instance's keys on its node) a third way.
#
# Configurations alternate within each of $REPS rounds, so the machine's drift hits all of
# them alike; the table gives each one's median throughput and the local/remote ratios.
# Needs root (network namespaces) and redis-server.
# Usage: scripts/external-state-figure2.sh [OUT_DIR]
#   REPS (5), LIMIT (requests per run, 600000), DELAY (25us), JITTER (5us),
#   STORE (memory), GADGET (./target/release/gadget)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/external-state-figure2}"
reps="${REPS:-5}"
limit="${LIMIT:-600000}"
delay="${DELAY:-25us}"
jitter="${JITTER:-5us}"
store="${STORE:-memory}"
gadget="${GADGET:-./target/release/gadget}"
[ -x "$gadget" ] || cargo build --release --locked -p gadget-cli
mkdir -p "$out"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  "$gadget" cluster down --dir "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# the local Redis: one server on a free loopback port
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  --logfile "$work/redis.log" &
server_pid=$!
for _ in $(seq 50); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
cluster_url="$("$gadget" cluster up --nodes 3 --dir "$work/cluster")"

# config NAME BASE: the example BASE with the external states placed as NAME says
config() {
  local name="$1" base="$2" file="$work/$1.toml"
  cp "examples/external/$base.toml" "$file"
  case "$name" in
    single-*-local)
      printf '\n[run.stores.ext]\nkind = "redis"\nurl = "redis://127.0.0.1:%s"\n' "$port" >>"$file" ;;
    single-*-remote)
      printf '\n[run.stores.ext]\nkind = "redis"\n[run.stores.ext.remote]\ndelay = "%s"\njitter = "%s"\n' \
        "$delay" "$jitter" >>"$file" ;;
    multi-3-*)
      printf '\n[run.stores.ext]\nkind = "redis-cluster"\nurl = "%s"\nplacement = "%s"\n[run.stores.ext.remote]\ndelay = "%s"\njitter = "%s"\n' \
        "$cluster_url" "${name#multi-3-}" "$delay" "$jitter" >>"$file" ;;
  esac
  printf '[run.states]\n"ad-campaigns" = "ext"\n"campaign-windows" = "ext"\n' >>"$file"
  echo "$file"
}
names=(single-1-local single-1-remote single-3-local single-3-remote multi-3-replicated multi-3-aligned multi-3-native)
declare -A files
for n in "${names[@]}"; do
  case "$n" in single-1-*) base=ysb-1 ;; *) base=ysb-3 ;; esac
  files[$n]="$(config "$n" "$base")"
done

runs="$out/runs.tsv"
printf 'round\tconfig\tthroughput\ttable_p50_ns\treads_local\treads_remote\n' >"$runs"
for round in $(seq "$reps"); do
  for n in "${names[@]}"; do
    json="$out/$n.$round.json"
    "$gadget" run "${files[$n]}" --store "$store" --limit "$limit" -o "$json" >/dev/null 2>"$out/$n.$round.err"
    jq -r --arg n "$n" --arg r "$round" '[$r, $n, (.throughput | floor),
        ([.per_state[] | select(.name == "ad-campaigns")][0].latency.p50_ns),
        (.store_counters.reads_local // ""), (.store_counters.reads_remote // "")] | @tsv' \
      "$json" >>"$runs"
    tail -n 1 "$runs" >&2
  done
done

python3 - "$runs" "$delay" "$jitter" >"$out/table.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["config"], []).append(r)
med = {n: statistics.median(float(r["throughput"]) for r in rs) for n, rs in by.items()}
def local_share(rs):
    l, m = sum(int(r["reads_local"] or 0) for r in rs), sum(int(r["reads_remote"] or 0) for r in rs)
    return "%.0f%%" % (100 * l / (l + m)) if l + m else "–"
print("Remote: %s ± %s each way. Median of %d rounds; requests/s of the whole job." % (sys.argv[2], sys.argv[3], len(by[next(iter(by))])))
print()
print("| configuration | throughput (requests/s) | min–max | lookup p50 (µs) | lookups on the own node |")
print("|---|---:|---:|---:|---:|")
for n, rs in by.items():
    t = [float(r["throughput"]) for r in rs]
    p50 = statistics.median(float(r["table_p50_ns"]) for r in rs) / 1000
    print("| %s | %.0f | %.0f–%.0f | %.1f | %s |" % (n, med[n], min(t), max(t), p50, local_share(rs)))
print()
print("| scenario | local / remote | seed 003 |")
print("|---|---:|---:|")
for scenario, local, remote, seed in [
    ("single-1", "single-1-local", "single-1-remote", "≤ 1.77×"),
    ("single-3", "single-3-local", "single-3-remote", "1.77×"),
    ("multi-3 (replicated / native)", "multi-3-replicated", "multi-3-native", "1.66×"),
    ("multi-3 (aligned / native)", "multi-3-aligned", "multi-3-native", "–"),
]:
    print("| %s | %.2f× | %s |" % (scenario, med[local] / med[remote], seed))
PY
cat "$out/table.md"
