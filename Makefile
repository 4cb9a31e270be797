# Gadget: two commands do everything on a fresh Debian machine.
#   make run    builds Gadget and drives embedded RocksDB with the bundled example workload
#   make gen    builds Gadget and writes the bundled example's trace
#   make build-pgo  builds a profile-guided target/pgo/gadget, 8-15% faster at generation
#                  (two builds and a training run, about nine minutes on two cores)
#   make test   installs what is missing, checks formatting and lints, runs every test (Rust's,
#               the driver's instruction bound, then the Ray launcher's and the scripts' with
#               pytest; the launcher's start a 3-node Ray cluster)
#   make recorder  builds the Flink recorder agent and the reference job (docs/recorder.md)
#   make paper  reproduces the Gadget paper's Figures 11-14 with gadget bench
#               (examples/experiments/paper/; docs/reproducing-the-paper.md says how long)
#   make paper-quick  the same figures from one short run per cell (a minute or two): the
#               shape of the results, not numbers to quote
SHELL := /bin/bash
EXAMPLE ?= examples/flink-reference/tumbling-incr.toml
OUT ?= out/tumbling-incr.gtrace

.PHONY: run gen test build build-pgo bench recorder paper paper-quick

build:
	scripts/setup.sh release

build-pgo:
	scripts/setup.sh deps
	scripts/pgo.sh

run: build
	./target/release/gadget run $(EXAMPLE) --store rocksdb

gen: build
	mkdir -p $(dir $(OUT))
	./target/release/gadget gen $(EXAMPLE) -o $(OUT)

test:
	scripts/setup.sh debug
	cargo fmt --all -- --check
	cargo clippy --locked --workspace --all-targets -- -D warnings
	# the evaluator without its optional stores, as the driver's bench builds it
	cargo clippy --locked -p gadget-eval --no-default-features --all-targets -- -D warnings
	cargo test --locked --workspace
	# the driver's instructions per request over the stream, bounded (BENCHMARKS.md, "Harness overhead")
	scripts/driver-instructions.sh --max 140 --max-shard 140
	# the Ray launcher and the Kubernetes manifest, with the debug gadget cargo test built;
	# the scripts' own checks (scripts/tests)
	python3 -m pytest -q -p no:cacheprovider launcher/ray/tests scripts/tests

bench: build
	cargo bench --locked -p gadget

recorder:
	mvn -B -q -Dstyle.color=never package -f recorder/pom.xml

# each figure's experiment into out/paper/FIGURE; --resume: a stopped `make paper` goes on
paper: build
	for f in examples/experiments/paper/*.toml; do \
	  ./target/release/gadget bench $$f -o out/paper/$$(basename $$f .toml) --resume || exit $$?; \
	done

# one run per cell of 200,000 requests: every figure, in its shape
paper-quick: build
	for f in examples/experiments/paper/*.toml; do \
	  ./target/release/gadget bench $$f -o out/paper-quick/$$(basename $$f .toml) --resume \
	    --repetitions 1 --limit 200000 || exit $$?; \
	done
