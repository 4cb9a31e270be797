#!/usr/bin/env bash
# The paper's Figure 13 as a table: closed-loop throughput and p99.9 latency of every store on
# the paper's 11 workloads, 2M requests each (the Borg input played as often as it takes,
# `--input-passes`; `gadget replay`, release build).
# Usage: scripts/bench-stores.sh [OUT_DIR] [STORES...]   (Redis needs a redis-server on :6379)
# A store may name its RocksDB library after an @ (rocksdb@debian: --rocksdb-lib debian), so
# libraries alternate workload by workload. $GADGET is the binary (default target/release).
# Each replay is stopped after $BENCH_TIMEOUT seconds (default 120) with Ctrl-C, which keeps
# its results marked partial; the table then shows the rate it sustained, marked "(partial)".
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/bench-stores}"
shift || true
stores=("$@")
[ ${#stores[@]} -gt 0 ] || stores=(memory rocksdb leveldb berkeleydb berkeleydb-hash lmdb redb fjall sqlite faster redis)
timeout_s="${BENCH_TIMEOUT:-120}"
gadget="${GADGET:-./target/release/gadget}"
[ -x "$gadget" ] || cargo build --release --locked -p gadget-cli
mkdir -p "$out"
table="$out/table.md"
{
  printf '| workload |'
  for s in "${stores[@]}"; do printf ' %s |' "$s"; done
  printf '\n|---|'
  for s in "${stores[@]}"; do printf -- '---:|'; done
  printf '\n'
} >"$table"
for cfg in examples/paper/*.toml; do
  name="$(basename "$cfg" .toml)"
  trace="$out/$name.gtrace"
  if [ ! -f "$trace" ]; then
    # the Borg input gives 52K-812K requests; play it as often as it takes to reach 2M
    once="$("$gadget" gen "$cfg" --json -o /dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])')"
    # (a fifth more than the division says, since copies after the first can issue fewer
    # requests, as the continuous join's do; --limit cuts the excess)
    repeat=$(( 2400000 / once + 1 ))
    "$gadget" gen "$cfg" --input-passes "$repeat" --limit 2000000 -o "$trace" >/dev/null
  fi
  row="| $name |"
  for s in "${stores[@]}"; do
    json="$out/$name.$s.json"
    set +e
    store=("--store" "${s%%@*}")
    [ "$s" = "${s#*@}" ] || store+=("--rocksdb-lib" "${s#*@}")
    timeout --foreground -s INT "$timeout_s" "$gadget" replay "$trace" "${store[@]}" -o "$json" >/dev/null 2>"$out/$name.$s.err"
    rc=$?
    set -e
    if [ -s "$json" ] && [ $rc -eq 0 -o $rc -eq 130 -o $rc -eq 124 ]; then
      cell="$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
a = [x for x in r["latency"] if x["op"] == "all"][0]
p = " (partial)" if r.get("partial") else ""
print("%.0fK/s, %.1f µs%s" % (r["throughput"] / 1000, a["p999_ns"] / 1000, p))' "$json")"
    else
      cell="error: $(head -c 80 "$out/$name.$s.err" | tr '\n|' '  ')"
    fi
    row="$row $cell |"
    echo "$name $s: $cell" >&2
  done
  echo "$row" >>"$table"
done
echo "wrote $table" >&2
