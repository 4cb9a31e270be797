#!/usr/bin/env bash
# Installs what Gadget needs on a fresh Debian machine, only if it is missing, then builds.
# Usage: scripts/setup.sh [release|debug|deps]   (deps: install and prepare, no build)
set -euo pipefail
profile="${1:-release}"

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v git >/dev/null 2>&1 || need_apt+=(git)
# RocksDB: Debian's library for --rocksdb-lib debian; the release builds come from Maven Central
# (below), fetched with curl and unpacked with unzip. libclang for FASTER's bindings.
[ -e /usr/include/rocksdb/c.h ] || need_apt+=(librocksdb-dev)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v unzip >/dev/null 2>&1 || need_apt+=(unzip)
command -v sha256sum >/dev/null 2>&1 || need_apt+=(coreutils)
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need_apt+=(libclang-dev)
# BerkeleyDB for --store berkeleydb
[ -e /usr/include/db.h ] || need_apt+=(libdb5.3-dev)
# LevelDB for --store leveldb
[ -e /usr/include/leveldb/c.h ] || need_apt+=(libleveldb-dev)
# Redis for --store redis; the tests start their own redis-server on a free loopback port
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# ip and tc for remote stores on this machine (a network namespace behind a veth link)
{ command -v ip || [ -x /usr/sbin/ip ]; } >/dev/null 2>&1 &&
  { command -v tc || [ -x /usr/sbin/tc ]; } >/dev/null 2>&1 || need_apt+=(iproute2)
# A TrueType font for the text of gadget analyze's plots
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
# The tests open gadget analyze's HTML report in headless Chromium
if [ "$profile" = debug ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
# The Ray launcher's tests (launcher/ray/tests, which `make test` runs): Python 3 with pip (Ray
# and pytest are installed with it below) and unshare (util-linux) for their network namespace
if [ "$profile" = debug ]; then
  python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
  command -v unshare >/dev/null 2>&1 || need_apt+=(util-linux)
fi
# `make test` bounds the driver's instructions per request (scripts/driver-instructions.sh),
# counted by valgrind's cachegrind
if [ "$profile" = debug ]; then
  command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
fi
# The recorder (recorder/): a JDK (11 or newer) and Maven, which fetches Flink and
# Byte Buddy from Maven Central
command -v javac >/dev/null 2>&1 || need_apt+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# FASTER for --store faster: the libfaster-sys crate builds FASTER's C++ core with CMake and
# links libaio, libuuid and TBB; its CMake step git-clones googletest, which Debian ships as
# sources (see the googletest mirror below)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
[ -e /usr/include/libaio.h ] || need_apt+=(libaio-dev)
[ -e /usr/include/uuid/uuid.h ] || need_apt+=(uuid-dev)
[ -e /usr/include/tbb/concurrent_queue.h ] || need_apt+=(libtbb-dev)
[ -e /usr/src/googletest/CMakeLists.txt ] || need_apt+=(googletest)
# Lethe for --store lethe (scripts/lethe/build.sh): RocksDB's CMake build with Ninja, and Snappy
command -v ninja >/dev/null 2>&1 || need_apt+=(ninja-build)
[ -e /usr/include/snappy.h ] || need_apt+=(libsnappy-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Ray, pinned (`gadget cluster ray` drives a cluster through it; the driver and the cluster must
# run one Ray version, and launcher/ray/gadget_ray/__init__.py names this one), and pytest, from
# PyPI, for the launcher's tests. Debian's own Python is "externally managed" (PEP 668): pip
# installs beside Debian's packages there only when told to.
ray_version=2.60.0
if [ "$profile" = debug ]; then
  need_pip=()
  python3 -c "import ray, sys; sys.exit(ray.__version__ != '$ray_version')" >/dev/null 2>&1 || need_pip+=("ray==$ray_version")
  python3 -c "import pytest" >/dev/null 2>&1 || need_pip+=(pytest)
  if [ ${#need_pip[@]} -gt 0 ]; then
    echo "setup: installing ${need_pip[*]} with pip" >&2
    pip_flags=(-q --disable-pip-version-check --root-user-action=ignore)
    if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
      pip_flags+=(--break-system-packages)
    fi
    python3 -m pip install "${pip_flags[@]}" "${need_pip[@]}"
  fi
fi

# FASTER's CMake step clones https://github.com/google/googletest.git (branch master) at
# configure time, and there may be no way to GitHub. Satisfy that clone from Debian's googletest
# sources instead: a throw-away git repository made from /usr/src/googletest under .deps/ (not
# committed), and a git config that rewrites the GitHub URL to it. .cargo/config.toml points
# GIT_CONFIG_GLOBAL at that config for everything cargo runs, so plain `cargo build` works too.
root="$(cd "$(dirname "$0")/.." && pwd)"
deps="$root/.deps"
mirror="$deps/googletest.git"
if [ ! -f "$mirror/HEAD" ]; then
  echo "setup: making $mirror from Debian's googletest sources" >&2
  mkdir -p "$deps"
  work="$(mktemp -d)"
  trap 'rm -rf "$work" "$work.gitconfig" "$mirror.tmp"' EXIT
  # no user or system git config while making it: no signing or hooks can interfere
  : >"$work.gitconfig"
  plain_git() { GIT_CONFIG_GLOBAL="$work.gitconfig" GIT_CONFIG_NOSYSTEM=1 git "$@"; }
  cp -R /usr/src/googletest/. "$work"
  plain_git -C "$work" init -q -b master
  plain_git -C "$work" add -A
  plain_git -C "$work" -c user.name=gadget-setup -c user.email=setup@localhost \
    commit -q -m "googletest from Debian's googletest package (/usr/src/googletest)"
  rm -rf "$mirror.tmp"
  plain_git clone -q --bare "$work" "$mirror.tmp"
  mv "$mirror.tmp" "$mirror"
  rm -rf "$work" "$work.gitconfig"
fi
printf '%s\n' \
  "# Written by scripts/setup.sh: FASTER's build clones googletest from Debian's sources." \
  "[url \"$mirror\"]" \
  "	insteadOf = https://github.com/google/googletest.git" \
  "	insteadOf = https://github.com/google/googletest" >"$deps/faster.gitconfig.tmp"
mv "$deps/faster.gitconfig.tmp" "$deps/faster.gitconfig"

if ! command -v cargo >/dev/null 2>&1; then
  for c in "$HOME/.cargo/bin/cargo" /usr/local/cargo/bin/cargo; do
    [ -x "$c" ] && export PATH="$(dirname "$c"):$PATH" && break
  done
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: no Rust toolchain found. Install Rust 1.85 or newer (https://rustup.rs), then run this again." >&2
  exit 1
fi

# libfaster-sys 0.11.0 (2020, its last release) build-depends on bindgen 0.50 (clang-sys 0.28),
# which could not share a dependency graph with the rocksdb crate's bindgen 0.64 when Gadget
# linked RocksDB (both clang-sys declare `links = "clang"`); it is built with bindgen 0.64, the
# version it has been tested with since. The workspace Cargo.toml patches libfaster-sys with a
# copy made here from its crates.io release, changed in two lines of its Rust build (bindgen
# 0.64 and bindgen's later name `blocklist_type`) and in three places of its C++, without which
# no record can be read back from disk (see below). None of it is committed: the edits are
# made here, to the downloaded release, and checked.
sys="$deps/libfaster-sys-0.11.0"
if [ ! -f "$sys/.gadget-patched-2" ]; then
  echo "setup: making $sys from the crates.io release, with bindgen 0.64 and fixes for disk reads" >&2
  fetch="$(mktemp -d)"
  trap 'rm -rf "$fetch" "$sys.tmp"' EXIT
  mkdir -p "$fetch/src"
  : >"$fetch/src/lib.rs"
  printf '%s\n' '[package]' 'name = "fetch-libfaster-sys"' 'version = "0.0.0"' 'edition = "2021"' \
    '[dependencies]' 'libfaster-sys = "=0.11.0"' >"$fetch/Cargo.toml"
  (cd "$fetch" && cargo fetch -q)
  crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/libfaster-sys-0.11.0.crate | head -n 1)"
  rm -rf "$sys.tmp"
  mkdir -p "$sys.tmp"
  tar -xzf "$crate" -C "$sys.tmp" --strip-components=1
  sed -i '/^\[build-dependencies.bindgen\]$/,/^version/ s/^version = "0.50"$/version = "0.64"/' "$sys.tmp/Cargo.toml"
  sed -i 's/\.blacklist_type(/.blocklist_type(/' "$sys.tmp/build.rs"
  if ! grep -q '^version = "0.64"$' "$sys.tmp/Cargo.toml" || ! grep -q 'blocklist_type' "$sys.tmp/build.rs"; then
    echo "setup: libfaster-sys is not as expected; cannot patch it" >&2
    exit 1
  fi
  # The C glue (faster-c.cc) keeps a request's key bytes inline right behind its `Key` member,
  # and when a request must wait for disk (PENDING) FASTER copies it to the heap at the size of
  # the request object alone, so the copy's key bytes overwrote the request's other members (a
  # read from disk answered "not found", a merge was lost). 1: `key_` becomes each request's
  # last member; 2: the heap copy gets room for the key bytes behind it; 3: a pending upsert's
  # copy is freed after its callback. 4 (FASTER's core, faster.h): a merge whose key's latest
  # record on disk is a delete sized its new record by running the merge over the delete's
  # never-written value, which aborted the process; it now starts from the operand alone.
  glue="$sys.tmp/FASTER/cc/src/core/faster-c.cc"
  core="$sys.tmp/FASTER/cc/src/core/faster.h"
  perl -0pi -e 's/(    Key key_;\n)(    read_callback cb_;\n    void\* target_;\n)/$2$1/' "$glue"
  perl -0pi -e 's/(    key_t key_;\n)(    uint8_t\* input_;\n    uint64_t length_;\n)/$2$1/' "$glue"
  perl -0pi -e 's/(    Key key_;\n)(    uint8_t\* modification_;\n    uint64_t length_;\n    rmw_callback cb_;\n    uint64_t new_length_;\n)/$2$1/' "$glue"
  perl -0pi -e 's~(class (\w+Context) : public IAsyncContext \{.*?)return IAsyncContext::DeepCopy_Internal\(\*this, context_copy\);~$1context_copy = nullptr;
      auto ctxt = alloc_context<$2>(sizeof($2) + key_.size());
      if(!ctxt.get()) return Status::OutOfMemory;
      new(ctxt.get()) $2 { *this };
      context_copy = ctxt.release();
      return Status::Ok;~gs' "$glue"
  perl -0pi -e 's/(faster_upsert\(.*?auto callback = \[\]\(IAsyncContext\* ctxt, Status result\) \{\n)/$1      CallbackContext<UpsertContext> context { ctxt };\n/s' "$glue"
  sed -i 's/pending_context->value_size(disk_record));/is_tombstone ? pending_context->value_size() : pending_context->value_size(disk_record));/' "$core"
  last_members="$(perl -0ne 'print scalar(() = /(?:void\* target_;|uint64_t length_;|uint64_t new_length_;)\n    (?:Key|key_t) key_;\n  \};/g)' "$glue")"
  if [ "$last_members" != 3 ] ||
    [ "$(grep -c 'alloc_context<[A-Za-z]*Context>(sizeof([A-Za-z]*Context) + key_.size())' "$glue")" != 4 ] ||
    grep -q 'IAsyncContext::DeepCopy_Internal(\*this, context_copy)' "$glue" ||
    ! grep -q 'CallbackContext<UpsertContext> context { ctxt };' "$glue" ||
    ! grep -q 'is_tombstone ? pending_context->value_size()' "$core"; then
    echo "setup: FASTER's sources are not as expected; cannot fix its disk reads" >&2
    exit 1
  fi
  touch "$sys.tmp/.gadget-patched-2"
  rm -rf "$sys"
  mv "$sys.tmp" "$sys"
  rm -rf "$fetch"
fi

# The RocksDB libraries --rocksdb-lib loads at run time: release builds carried by RocksJava
# jars on Maven Central (each .so exports RocksDB's whole C API and needs only libc and
# libstdc++; no JVM is involved). Each jar is checked against the SHA-256 pinned here before
# its library is unpacked to .deps/rocksdb/NAME/; the local Maven repository is used when it
# holds the jar already. MAVEN_REPOSITORY overrides Maven Central.
maven="${MAVEN_REPOSITORY:-https://repo1.maven.org/maven2}"
rocksdb_library() { # NAME GROUP ARTIFACT VERSION CLASSIFIER FILE SHA256
  local name="$1" group="$2" artifact="$3" version="$4" classifier="$5" file="$6" sha="$7"
  local dir="$deps/rocksdb/$name"
  [ -f "$dir/$file" ] && [ "$(cat "$dir/jar.sha256" 2>/dev/null)" = "$sha" ] && return 0
  local jar="$artifact-$version${classifier:+-$classifier}.jar"
  local path="${group//.//}/$artifact/$version/$jar"
  local tmp
  tmp="$(mktemp -d)"
  if [ -f "$HOME/.m2/repository/$path" ]; then
    cp "$HOME/.m2/repository/$path" "$tmp/$jar"
  else
    echo "setup: fetching $group:$artifact:$version${classifier:+:$classifier} for --rocksdb-lib $name" >&2
    curl -sSfL --retry 3 -o "$tmp/$jar" "$maven/$path"
  fi
  if [ "$(sha256sum "$tmp/$jar" | cut -d' ' -f1)" != "$sha" ]; then
    echo "setup: $jar does not have the SHA-256 pinned in scripts/setup.sh ($sha); not using it" >&2
    rm -rf "$tmp"
    exit 1
  fi
  unzip -q -o "$tmp/$jar" "$file" -d "$tmp"
  mkdir -p "$dir"
  mv "$tmp/$file" "$dir/$file.tmp"
  mv "$dir/$file.tmp" "$dir/$file"
  echo "$sha" >"$dir/jar.sha256"
  rm -rf "$tmp"
}
rocksdb_library flink-1.20 com.ververica frocksdbjni 6.20.3-ververica-2.0 "" librocksdbjni-linux64.so \
  5e6e5063b75196a17fbeaf656f088a807f83177525d9ecbec7125b9f3630b966
rocksdb_library flink-2.x com.ververica frocksdbjni 8.10.0-ververica-1.0 "" librocksdbjni-linux64.so \
  4e9bcd16a0232c7c8bc3779a2ff627be7c05c49826c1b2fa0bf7ba760f7cdcb7
rocksdb_library forst com.ververica forstjni 0.1.8 "" libforstjni-linux64.so \
  929c8d138a22715f28b690957ab28b7ac33aee286944bf22f8b6c1b18509f813
rocksdb_library current org.rocksdb rocksdbjni 10.10.1.1 linux64 librocksdbjni-linux64.so \
  3948e3537f413c697200ff2c316d8c614454685ad347625057479997d8757585

# HdrHistogram's Java tools, which the tests run on `--hdr-log` files (HistogramLogProcessor
# must read them without options): its jar from Maven Central through Maven, into
# .deps/hdrhistogram/, checked against the SHA-256 pinned here.
hdrhistogram_version=2.2.2
hdrhistogram_jar="$deps/hdrhistogram/HdrHistogram-$hdrhistogram_version.jar"
hdrhistogram_sha=22d1d4316c4ec13a68b559e98c8256d69071593731da96136640f864fa14fad8
if [ "$profile" = debug ] && [ "$(sha256sum "$hdrhistogram_jar" 2>/dev/null | cut -d' ' -f1)" != "$hdrhistogram_sha" ]; then
  echo "setup: fetching org.hdrhistogram:HdrHistogram:$hdrhistogram_version for the --hdr-log tests" >&2
  hdr_tmp="$(mktemp -d)"
  (cd "$hdr_tmp" && mvn -q -B -Dstyle.color=never dependency:copy \
    -Dartifact="org.hdrhistogram:HdrHistogram:$hdrhistogram_version" -DoutputDirectory="$hdr_tmp/out")
  if [ "$(sha256sum "$hdr_tmp/out/HdrHistogram-$hdrhistogram_version.jar" | cut -d' ' -f1)" != "$hdrhistogram_sha" ]; then
    echo "setup: HdrHistogram-$hdrhistogram_version.jar does not have the SHA-256 pinned in scripts/setup.sh ($hdrhistogram_sha); not using it" >&2
    rm -rf "$hdr_tmp"
    exit 1
  fi
  mkdir -p "$deps/hdrhistogram"
  mv "$hdr_tmp/out/HdrHistogram-$hdrhistogram_version.jar" "$hdrhistogram_jar.tmp"
  mv "$hdrhistogram_jar.tmp" "$hdrhistogram_jar"
  rm -rf "$hdr_tmp"
fi

# Toxiproxy, the fault-injection proxy that delays a remote store's traffic by whole
# milliseconds (crates/gadget-eval/src/remote/): built from its Go module with the Go these
# machines have (/usr/local/go), into /usr/local/bin when setup runs as root and into .deps/bin/
# otherwise; Gadget looks on PATH, then in .deps/bin/ (GADGET_TOXIPROXY overrides both).
toxiproxy_module=github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
if ! command -v toxiproxy-server >/dev/null 2>&1 && [ ! -x "$deps/bin/toxiproxy-server" ]; then
  go="$(command -v go || true)"
  if [ -z "$go" ] && [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go; fi
  if [ -z "$go" ]; then
    echo "setup: toxiproxy-server is missing and there is no Go to build it with: install Go 1.23 or newer (https://go.dev/dl/), then run this again" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ]; then bin=/usr/local/bin; else bin="$deps/bin"; fi
  echo "setup: building toxiproxy-server ($toxiproxy_module) into $bin" >&2
  gobin="$(mktemp -d)"
  trap 'rm -rf "$gobin"' EXIT
  GOBIN="$gobin" "$go" install "$toxiproxy_module"
  mkdir -p "$bin"
  cp "$gobin/server" "$bin/toxiproxy-server.tmp"
  mv "$bin/toxiproxy-server.tmp" "$bin/toxiproxy-server"
  rm -rf "$gobin"
fi

# Lethe for --store lethe (the paper's fourth store, RocksDB 6.12 with FADE): built from the
# source archive kept beside the project (../shared/vendor, see its README) into a cache outside
# the checkout, once per machine, by scripts/lethe/build.sh; here beside cargo's build, which
# leaves a core idle at times. Without the archive --store lethe says how to build it, and CI
# (CI=true) fails.
lethe_pid=
if [ -f "${GADGET_VENDOR_DIR:-$root/../shared/vendor}/lethe-codebase-7c60c4e.tar.gz" ] || [ "${CI:-}" = true ]; then
  "$root/scripts/lethe/build.sh" >/dev/null &
  lethe_pid=$!
else
  echo "setup: no Lethe source beside the project (../shared/vendor); --store lethe will not run" >&2
fi

if [ "$profile" = deps ]; then
  :
elif [ "$profile" = release ]; then
  cargo build --release --locked -p gadget-cli
else
  cargo build --locked --workspace --all-targets
fi
if [ -n "$lethe_pid" ]; then
  wait "$lethe_pid" || { echo "setup: building Lethe failed (scripts/lethe/build.sh)" >&2; exit 1; }
fi
