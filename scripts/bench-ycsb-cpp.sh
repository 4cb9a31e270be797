#!/usr/bin/env bash
# YCSB-A on RocksDB, side by side: YCSB-cpp (built beside the project, not committed) and
# Gadget with the same store settings, values and requests, alternating (BENCHMARKS.md,
# "YCSB-A on RocksDB: Gadget against YCSB-cpp"). Both run Debian's librocksdb, the one YCSB-cpp
# links (`--rocksdb-lib debian`).
# Usage: scripts/bench-ycsb-cpp.sh YCSB_CPP_DIR GADGET_BINARY [ROUNDS] [WORK_DIR]
#   YCSB_CPP_DIR: a clone of github.com/ls4154/YCSB-cpp built with
#     make BIND_ROCKSDB=1 BIND_HDRHISTOGRAM=0 BUILD_HDRHISTOGRAM=0
#   GADGET_BINARY: a release build, e.g. target/release/gadget
set -euo pipefail
[ $# -ge 2 ] || { sed -n 5,8p "$0" >&2; exit 2; }
ycsb=$(cd "$1" && pwd)
gadget=$(realpath "$2")
rounds=${3:-3}
work=$(realpath -m "${4:-${TMPDIR:-/tmp}/gadget-ycsb-cpp}")
root=$(cd "$(dirname "$0")/.." && pwd)
records=100000
operations=300000
mkdir -p "$work"
cd "$work"
for round in $(seq 1 "$rounds"); do
  rm -rf db && mkdir db
  out=$(cd "$ycsb" && ./ycsb -load -run -db rocksdb -P workloads/workloada \
    -P rocksdb/rocksdb.properties -p recordcount=$records -p operationcount=$operations \
    -p rocksdb.dbname="$work/db" -p rocksdb.write_buffer_size=134217728 \
    -p rocksdb.cache_size=67108864 2>&1)
  load=$(echo "$out" | sed -n 's/.*Load throughput(ops\/sec): \([0-9.]*\).*/\1/p')
  run=$(echo "$out" | sed -n 's/.*Run throughput(ops\/sec): \([0-9.]*\).*/\1/p')
  echo "round $round ycsb-cpp load $load run $run bytes $(du -sb db | cut -f1)"
  rm -rf gdb && mkdir gdb
  same=(-p recordcount=$records -p operationcount=$operations -p fieldlength=114
        -p readproportion=0.5 -p updateproportion=0 -p readmodifywriteproportion=0.5
        --store rocksdb --rocksdb-lib debian --dir gdb --wal --write-buffer-mb 128 --block-cache-mb 64
        --value-compression-ratio 1 --json)
  "$gadget" run "$root/examples/ycsb/workloada.toml" -p phase=load "${same[@]}" > load.json
  "$gadget" run "$root/examples/ycsb/workloada.toml" -p phase=run "${same[@]}" > run.json
  python3 - "$round" "$records" "$operations" "$(du -sb gdb | cut -f1)" <<'PY'
import json, sys
rnd, records, operations, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
load, run = json.load(open("load.json")), json.load(open("run.json"))
print(f"round {rnd} gadget   load {records / load['seconds']:.1f} "
      f"run {operations / run['seconds']:.1f} bytes {size} (run requests {run['requests']})")
PY
done
