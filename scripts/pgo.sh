#!/usr/bin/env bash
# Builds a profile-guided `gadget` (target/pgo/gadget): an instrumented build runs a training
# set of workloads, and the final build is optimized with the profile they record. Generation
# gets 8–15% faster than the plain release build (BENCHMARKS.md, "Latest: the build").
# Usage: scripts/pgo.sh                  (`make build-pgo` runs it after scripts/setup.sh)
#        scripts/pgo.sh --train-with BIN (only the training set, with BIN and 1% of its
#                                         requests: the test that it still runs uses this)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# The training set: every subcommand whose speed matters, on the bundled workloads.
train_all() {
  local trainee="$1" scale="$2" scratch
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  train() { "$trainee" "$@" >/dev/null 2>"$scratch/stderr" || {
    echo "pgo: training step failed: gadget $*" >&2
    cat "$scratch/stderr" >&2
    exit 1
  }; }
  for config in examples/bench/*.toml; do
    train gen "$config" -o /dev/null --limit $((5000000 / scale))
    train gen "$config" -o "$scratch/trace.gtrace" --limit $((5000000 / scale))
  done
  for config in examples/synthetic/*.toml examples/ycsb-vs-streaming/*.toml \
    examples/paper/*.toml examples/flink-reference/*.toml; do
    # the paper's and the Flink reference's workloads read the Borg trace from ../shared/data,
    # which a fresh clone may not have beside it
    local input
    input="$(sed -n 's/^path = "\(.*\)"/\1/p' "$config" | head -n 1)"
    if [ -n "$input" ] && [ ! -e "$(dirname "$config")/$input" ]; then
      continue
    fi
    train gen "$config" -o /dev/null --limit $((1000000 / scale))
  done
  train gen examples/bench/tumbling-incr-zipf.toml -o "$scratch/text.txt" --format text \
    --limit $((200000 / scale))
  train trace convert "$scratch/text.txt" -o "$scratch/converted.gtrace" --format bin
  train analyze "$scratch/text.txt" -o "$scratch/analysis.txt"
  train replay "$scratch/text.txt" --store rocksdb
  train run examples/bench/tumbling-incr-zipf.toml --store memory --limit $((1000000 / scale))
  train run examples/bench/tumbling-incr-zipf.toml --store rocksdb --limit $((300000 / scale))
  # its 1 s warm-up would take every request of a run cut to 1% (an error): warm up by count
  train run examples/run/tumbling-incr-poisson.toml --store rocksdb --limit $((300000 / scale)) \
    --warmup $((30000 / scale))
  rm -rf "$scratch"
  trap - EXIT
}

if [ "${1:-}" = --train-with ]; then
  [ -x "${2:-}" ] || { echo "pgo: --train-with needs a gadget binary" >&2; exit 2; }
  train_all "$2" 100
  exit 0
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
host="$(rustc -vV | sed -n 's/^host: //p')"
llvm_major="$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')"

# The profile must be merged by the llvm-profdata of rustc's own LLVM: rustup's llvm-tools
# component has it; else a system llvm-profdata of the same major version.
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null 2>&1; then
  echo "pgo: adding rustup's llvm-tools component (llvm-profdata)" >&2
  rustup component add llvm-tools >&2 || true
fi
if [ ! -x "$profdata" ]; then
  profdata="$(command -v "llvm-profdata-$llvm_major" || true)"
fi
if [ -z "$profdata" ] || [ ! -x "$profdata" ]; then
  echo "pgo: no llvm-profdata for rustc's LLVM $llvm_major. Install it with" \
    "'rustup component add llvm-tools' (or Debian's llvm-$llvm_major), then run this again;" \
    "or use the plain build, target/release/gadget (make build)." >&2
  exit 1
fi

work="$root/target/pgo"
profiles="$work/profiles"
rm -rf "$profiles"
mkdir -p "$profiles"
# --target keeps RUSTFLAGS off build scripts and proc macros: only gadget's code is profiled.
echo "pgo: building the instrumented gadget" >&2
RUSTFLAGS="-Cprofile-generate=$profiles" CARGO_TARGET_DIR="$work/instrumented" \
  cargo build --release --locked -p gadget-cli --target "$host"

echo "pgo: training on the bundled workloads" >&2
train_all "$work/instrumented/$host/release/gadget" 1
"$profdata" merge -o "$work/gadget.profdata" "$profiles"

echo "pgo: building gadget with the profile" >&2
RUSTFLAGS="-Cprofile-use=$work/gadget.profdata" CARGO_TARGET_DIR="$work/optimized" \
  cargo build --release --locked -p gadget-cli --target "$host"
cp "$work/optimized/$host/release/gadget" "$work/gadget.tmp"
mv "$work/gadget.tmp" "$work/gadget"
echo "pgo: built $work/gadget" >&2
