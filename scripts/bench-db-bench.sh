#!/usr/bin/env bash
# RocksDB's own benchmark against Gadget on the same library, settings, values and requests,
# alternating (BENCHMARKS.md, "RocksDB: Gadget against db_bench"). db_bench is Debian's
# (`apt-get install rocksdb-tools`, linked to librocksdb.so.7.8), so Gadget runs that library
# too (`--rocksdb-lib debian`). Neither is committed or needed by Gadget.
# Usage: scripts/bench-db-bench.sh GADGET_BINARY [ROUNDS] [WORK_DIR]
#   GADGET_BINARY: a release build, e.g. target/release/gadget
# The work: 100,000 records of 1,140 bytes that compress to half (db_bench's
# --compression_ratio 0.5, Gadget's default) written once each in random order (db_bench
# filluniquerandom, a YCSB load), then 300,000 uniform reads of them after reopening
# (db_bench readrandom --use_existing_db, YCSB-C with uniform requests); WAL on, not synced;
# 128 MB write buffer, 2 of them, 64 MB block cache, Snappy, no Bloom filter. Gadget opens
# RocksDB as db_bench does (--rocksdb-options db_bench); after every round the script compares
# the two databases' OPTIONS files and block caches and stops on any difference but the three
# that do not touch this work (db_bench's listener, create_missing_column_families, and
# Gadget's merge operator, which no put or get reaches).
set -euo pipefail
[ $# -ge 1 ] || { sed -n 6,7p "$0" >&2; exit 2; }
gadget=$(realpath "$1")
rounds=${2:-3}
work=$(realpath -m "${3:-${TMPDIR:-/tmp}/gadget-db-bench}")
root=$(cd "$(dirname "$0")/.." && pwd)
command -v db_bench >/dev/null || { echo "db_bench is missing: apt-get install rocksdb-tools" >&2; exit 1; }
records=100000
reads=300000
mkdir -p "$work"
cd "$work"
settings=(--write_buffer_size=134217728 --max_write_buffer_number=2 --cache_size=67108864
          --compression_type=snappy --bloom_bits=0 --disable_wal=0 --sync=0 --threads=1
          --key_size=24 --value_size=1140 --compression_ratio=0.5 --num=$records)
# ops/s and µs/op of one db_bench benchmark's report line
rate() { sed -n "s/^$1 *: *\([0-9.]*\) micros\/op \([0-9]*\) ops\/sec.*/\2 \1/p"; }
for round in $(seq 1 "$rounds"); do
  rm -rf db
  fill=$(db_bench --db="$work/db" --benchmarks=filluniquerandom "${settings[@]}" 2>&1 | rate filluniquerandom)
  read=$(db_bench --db="$work/db" --benchmarks=readrandom --use_existing_db=1 --reads=$reads \
    "${settings[@]}" 2>&1 | rate readrandom)
  echo "round $round db_bench fill $fill read $read (ops/s µs/op) bytes $(du -sb db | cut -f1)"
  rm -rf gdb && mkdir gdb
  same=(-p recordcount=$records -p operationcount=$reads -p fieldlength=114
        -p readproportion=1 -p updateproportion=0 -p requestdistribution=uniform
        --store rocksdb --rocksdb-lib debian --dir gdb --wal --write-buffer-mb 128
        --block-cache-mb 64 --value-compression-ratio 0.5 --rocksdb-options db_bench --json)
  "$gadget" run "$root/examples/ycsb/workloada.toml" -p phase=load "${same[@]}" > load.json
  "$gadget" run "$root/examples/ycsb/workloada.toml" -p phase=run "${same[@]}" > run.json
  python3 - "$round" "$(du -sb gdb | cut -f1)" <<'PY'
import json, sys
rnd, size = sys.argv[1], sys.argv[2]
def figures(path):
    r = json.load(open(path))
    mean = next(o for o in r["service"] if o["op"] == "all")["mean_ns"] / 1000
    return f"{r['requests'] / r['seconds']:.0f} {mean:.3f}"
print(f"round {rnd} gadget   fill {figures('load.json')} read {figures('run.json')} "
      f"(ops/s µs/op) bytes {size}")
PY
  python3 "$root/scripts/same-rocksdb-options.py" db default gdb '0\:usertable'
done
