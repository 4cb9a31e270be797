#!/usr/bin/env bash
# What the harness costs per request, in instructions, which do not drift with the host's
# speed (BENCHMARKS.md, "Harness overhead"): the harness_overhead_rounds bench's paths run once
# each under valgrind's cachegrind (instruction counts only), over the same 2 M requests into
# the memory store:
#   none    the workload's generation, which every path shares
#   tight   requests already in memory, no producer, no clock, no histograms (the floor)
#   stream  from a binary trace through the producer thread, nothing measured
#   driver  gadget replay's driver: closed loop, every request timed and recorded
#   shard-stream
#           the stream of the only shard of one (--shard 0/1): its producer asks of every
#           request whether it is the shard's (a hash of its key) and keeps all of them
#   shard   the driver of that stream, as `gadget run --shard 0/1` drives it
# Prints each path's instructions per request over `none`, the driver's over the stream and
# the shard's driver over the shard's stream (what the driver's thread does for a shard's
# request), and the shard's stream over the stream (what the shard's producer adds).
#
#   scripts/driver-instructions.sh             all six paths (about a minute, after the build)
#   scripts/driver-instructions.sh --max 140 [--max-shard 140]
#                                              only the stream and the driver (and the shard's
#                                              two); fails when the driver costs more than 140 a
#                                              request over its stream (the shard's driver over
#                                              the shard's stream 140): what `make test` runs
set -euo pipefail
cd "$(dirname "$0")/.."
max=
max_shard=
while [ $# -gt 0 ]; do
  case "$1" in
    --max|--max-shard)
      [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "driver-instructions: $1 takes a whole number of instructions per request, not '${2:-}'" >&2; exit 2; }
      if [ "$1" = --max ]; then max="$2"; else max_shard="$2"; fi
      shift 2
      ;;
    *) echo "driver-instructions: unknown argument '$1'; usage: $0 [--max INSTRUCTIONS [--max-shard INSTRUCTIONS]]" >&2; exit 2 ;;
  esac
done
[ -n "$max" ] || [ -z "$max_shard" ] || { echo "driver-instructions: --max-shard goes with --max" >&2; exit 2; }
command -v valgrind >/dev/null 2>&1 || { echo "driver-instructions: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
binary="$(cargo bench --locked --no-run -p gadget-eval --no-default-features --bench harness_overhead_rounds \
  --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "harness_overhead_rounds" in m["target"]["name"]:
        print(m["executable"])
')"
[ -x "$binary" ] || { echo "driver-instructions: the bench did not build (cargo bench --no-run -p gadget-eval --no-default-features --bench harness_overhead_rounds)" >&2; exit 1; }
count() { # PATH: the instructions the path's run executed
  local n
  n="$(GADGET_BENCH_PATH="$1" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$binary" 2>&1 >/dev/null | sed -n 's/.*I *refs: *//p' | tr -d ',')"
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "driver-instructions: cachegrind gave no count for the $1 path" >&2; exit 1; }
  echo "$n"
}
requests=2000000
stream="$(count stream)"
driver="$(count driver)"
if [ -n "$max" ]; then
  shard_stream=0
  shard=0
  if [ -n "$max_shard" ]; then
    shard_stream="$(count shard-stream)"
    shard="$(count shard)"
  fi
  python3 - "$requests" "$stream" "$driver" "$max" "$shard_stream" "$shard" "${max_shard:-0}" <<'PY'
import sys
n, stream, driver, bound, shard_stream, shard, shard_bound = (int(x) for x in sys.argv[1:])
failed = False
for path, count, base, limit in [("driver", driver, stream, bound),
                                 ("driver as a shard", shard, shard_stream, shard_bound)]:
    if not limit:
        continue
    over = (count - base) / n
    print(f"the {path} over its stream: {over:.1f} instructions per request over {n:,} requests (bound {limit})")
    if over > limit:
        print(f"driver-instructions: the {path} costs {over:.1f} instructions per request over its stream, "
              f"more than the bound of {limit}: find what grew with `scripts/driver-instructions.sh` and "
              "cg_annotate (BENCHMARKS.md, \"Harness overhead\")", file=sys.stderr)
        failed = True
if shard_bound:
    print(f"(the shard's stream over the stream: {(shard_stream - stream) / n:.1f} per request, on the producer's thread)")
sys.exit(1 if failed else 0)
PY
  exit
fi
none="$(count none)"
tight="$(count tight)"
shard_stream="$(count shard-stream)"
shard="$(count shard)"
python3 - "$requests" "$none" "$tight" "$stream" "$driver" "$shard_stream" "$shard" <<'PY'
import sys
n, none, tight, stream, driver, shard_stream, shard = (int(x) for x in sys.argv[1:])
per = lambda x: (x - none) / n
print(f"instructions over {n:,} requests (generation, {none / 1e6:,.0f} M, taken off):")
print(f"  tight loop {per(tight):8.1f} per request")
print(f"  stream     {per(stream):8.1f} per request")
print(f"  driver     {per(driver):8.1f} per request")
print(f"  shard's stream {per(shard_stream):4.1f} per request")
print(f"  shard      {per(shard):8.1f} per request")
print(f"the driver over the stream: {(driver - stream) / n:.1f} per request")
print(f"the driver as a shard over the shard's stream: {(shard - shard_stream) / n:.1f} per request")
print(f"the shard's stream over the stream: {(shard_stream - stream) / n:.1f} per request (the producer's thread)")
print(f"the driver as a shard over the stream: {(shard - stream) / n:.1f} per request (both threads)")
PY
