#!/usr/bin/env bash
# Builds Lethe (SIGMOD'20: RocksDB 6.12 with FADE, delete-persistence-aware compaction) for
# `gadget run --store lethe`, from the source archive kept beside the project
# (../shared/vendor/lethe-codebase-7c60c4e.tar.gz; see the README there), into a cache outside
# the checkout, once per machine: the library is made only when it is not there yet.
#
#   scripts/lethe/build.sh            build if missing, print the library's path
#
# Where: $GADGET_LETHE_LIB if set (the library's path), else
# ${XDG_CACHE_HOME:-$HOME/.cache}/gadget/lethe-7c60c4e/liblethe.so. The archive: $GADGET_VENDOR_DIR
# (default ../shared/vendor beside the checkout). It is checked against the SHA-256 pinned here.
#
# The build: RocksDB's own CMake build of its library (release, -O3, portable, Snappy as the one
# compression library, as frocksdb's default; no tools or tests) as a unity build in two parts (one per core; the whole library
# in ~260 files otherwise takes several times longer), then one shared library of it, Lethe's
# tuning singleton (examples/__working_branch/*.cc, which Lethe's engine calls but its build
# leaves to its experiment program) and gadget_lethe.cc (Gadget's hook into that singleton).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
commit=7c60c4e
sha=12977ddc50de6fedf2adaee89611076cc3c2f2a2268bd7015f3b585c4d45a30a
vendor="${GADGET_VENDOR_DIR:-$root/../shared/vendor}"
archive="$vendor/lethe-codebase-$commit.tar.gz"
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gadget/lethe-$commit"
lib="${GADGET_LETHE_LIB:-$cache/liblethe.so}"
engine="$cache/librocksdb.a"
# how RocksDB is built, the engine's stamp: Snappy, RocksDB's and Flink's default compression
# (frocksdb's kSnappyCompression), so that Lethe's files compare with theirs
engine_stamp="$sha snappy"
# the library's stamp: the engine's and the hook's source; a library made from others is linked
# again (RocksDB itself, $engine, is compiled once per engine stamp)
stamp="$engine_stamp $(sha256sum "$here/gadget_lethe.cc" | cut -d' ' -f1)"

if [ -f "$lib" ] && [ "$(cat "$lib.source" 2>/dev/null)" = "$stamp" ]; then
  echo "$lib"
  exit 0
fi
if [ ! -f "$archive" ]; then
  echo "lethe: no source archive at $archive: set GADGET_VENDOR_DIR to the folder that holds lethe-codebase-$commit.tar.gz" >&2
  exit 1
fi
if [ "$(sha256sum "$archive" | cut -d' ' -f1)" != "$sha" ]; then
  echo "lethe: $archive does not have the SHA-256 pinned in scripts/lethe/build.sh ($sha); not building it" >&2
  exit 1
fi
for tool in cmake ninja g++; do
  command -v "$tool" >/dev/null 2>&1 || { echo "lethe: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
[ -e /usr/include/snappy.h ] || { echo "lethe: Snappy's headers are missing (libsnappy-dev; scripts/setup.sh installs it)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/gadget-lethe.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tar xzf "$archive" -C "$work"
src="$work/lethe-codebase"
mkdir -p "$cache" "$(dirname "$lib")"
if [ ! -f "$engine" ] || [ "$(cat "$engine.source" 2>/dev/null)" != "$engine_stamp" ]; then
  echo "lethe: building Lethe $commit into $cache (a few minutes, once per machine)" >&2
  # The archive leaves out hdfs/, whose header RocksDB's HDFS stub includes; without HDFS the
  # stub only answers "not supported", which is all this file does.
  cat >"$src/env/env_hdfs.cc" <<'CC'
// Stands in for RocksDB's HDFS stub, whose hdfs/ headers the vendored archive leaves out.
#include "rocksdb/env.h"
namespace ROCKSDB_NAMESPACE {
Status NewHdfsEnv(Env** /*hdfs_env*/, const std::string& /*fsname*/) {
  return Status::NotSupported("Not compiled with hdfs support");
}
}  // namespace ROCKSDB_NAMESPACE
CC
  cmake -S "$src" -B "$work/build" -G Ninja -Wno-dev \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=135 \
    -DPORTABLE=ON -DFAIL_ON_WARNINGS=OFF -DCMAKE_CXX_FLAGS=-w -DWITH_SNAPPY=ON \
    -DWITH_GFLAGS=OFF -DWITH_TESTS=OFF -DWITH_ALL_TESTS=OFF -DWITH_TOOLS=OFF \
    -DWITH_CORE_TOOLS=OFF -DWITH_BENCHMARK_TOOLS=OFF -DROCKSDB_BUILD_SHARED=OFF >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log" >&2; exit 1; }
  ninja -C "$work/build" rocksdb >"$work/ninja.log" 2>&1 || { tail -50 "$work/ninja.log" >&2; exit 1; }
  cp "$work/build/librocksdb.a" "$engine.tmp"
  mv "$engine.tmp" "$engine"
  echo "$engine_stamp" >"$engine.source"
fi
echo "lethe: linking $lib" >&2
g++ -shared -O2 -fPIC -std=c++11 -w -fno-rtti -I"$src" -I"$src/include" -o "$lib.tmp" \
  -Wl,-soname,liblethe.so \
  "$src/examples/__working_branch/emu_environment.cc" "$src/examples/__working_branch/stats.cc" \
  "$src/examples/__working_branch/aux_time.cc" "$here/gadget_lethe.cc" \
  -Wl,--whole-archive "$engine" -Wl,--no-whole-archive -lsnappy -lpthread -ldl
mv "$lib.tmp" "$lib"
echo "$stamp" >"$lib.source"
echo "$lib"
