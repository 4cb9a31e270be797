#!/usr/bin/env bash
# Installs what Gadget needs on a fresh Debian machine, only if it is missing, then builds.
# Usage: scripts/setup.sh [release|debug]
set -euo pipefail
profile="${1:-release}"

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v git >/dev/null 2>&1 || need_apt+=(git)
# RocksDB from Debian (linked, not built: building it takes ~20 minutes) and libclang for its bindings
[ -e /usr/include/rocksdb/c.h ] || need_apt+=(librocksdb-dev)
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need_apt+=(libclang-dev)
# BerkeleyDB for --store berkeleydb
[ -e /usr/include/db.h ] || need_apt+=(libdb5.3-dev)
# LevelDB for --store leveldb
[ -e /usr/include/leveldb/c.h ] || need_apt+=(libleveldb-dev)
# Redis for --store redis; the tests start their own redis-server on a free loopback port
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# A TrueType font for the text of gadget analyze's plots
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
# The tests open gadget analyze's HTML report in headless Chromium
if [ "$profile" = debug ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  for c in "$HOME/.cargo/bin/cargo" /usr/local/cargo/bin/cargo; do
    [ -x "$c" ] && export PATH="$(dirname "$c"):$PATH" && break
  done
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: no Rust toolchain found. Install Rust 1.85 or newer (https://rustup.rs), then run this again." >&2
  exit 1
fi

if [ "$profile" = release ]; then
  cargo build --release --locked -p gadget-cli
else
  cargo build --locked --workspace --all-targets
fi
