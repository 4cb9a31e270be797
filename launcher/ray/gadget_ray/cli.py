"""The launcher's command line: `python3 -m gadget_ray [options] CONFIG [-- RUN_ARGS...]`.

`gadget cluster ray` runs it with the same options (and `--gadget` set to itself).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from gadget_ray import RAY_VERSION, launch, plan

DESCRIPTION = """\
Run the N shards of one Gadget run on a Ray cluster and merge their results.

Each shard is `gadget run CONFIG --shard I/N --start-at T -o shard-I.json [RUN_ARGS]`,
on a node of its own when the cluster has N nodes (else spread over the nodes). The
launcher ships the gadget binary, CONFIG and every --file to the shards through Ray's
object store (the nodes need Ray and Python, not Gadget), waits until every shard is
ready, agrees a start --lead seconds ahead, gathers each shard's results and writes, in
--out: shard-I.json and shard-I.log per shard, launch.json (where each shard ran, how it
ended, the start instant) and merged.json (`gadget merge` of the shards' results).
"""

EPILOG = f"""\
examples:
  # a Ray cluster: `ray start --head` on one machine, `ray start --address HEAD:6379` on others
  gadget cluster ray --address 10.0.0.1:6379 --shards 3 examples/ycsb/workloada.toml \\
      -- --store rocksdb --arrival poisson --rate 200000
  # the same, with the launcher alone (PYTHONPATH=launcher/ray)
  python3 -m gadget_ray --address 10.0.0.1:6379 --shards 3 --gadget target/release/gadget \\
      examples/ycsb/workloada.toml -- --store memory --limit 100000
  # nodes without Gadget's RocksDB build: ship the library, name it relative to the shard
  gadget cluster ray --address 10.0.0.1:6379 --shards 3 \\
      --file .deps/rocksdb/flink-1.20/librocksdbjni-linux64.so examples/ycsb/workloada.toml \\
      -- --store rocksdb --rocksdb-lib ./librocksdbjni-linux64.so

RUN_ARGS, after `--`, go to every shard's `gadget run` (the store, the arrival process,
--rate, --limit, --seed, ...). The launcher sets --shard, --start-at and -o itself, and
refuses --csv and --hdr-log (their files would stay on the nodes; the results JSON holds
the time series and histograms). Each shard runs in a fresh temporary folder on its node,
where CONFIG and the --file files are, by their file names.

exit status: 0 when every shard ran and the merge succeeded; 1 when a shard or the merge
failed (every shard is still gathered, and merged.json merges the results that came
back, marked partial); 2 when the launch could not start; 130 when interrupted (Ctrl-C
asks the shards to stop and keeps what they measured).

needs: Python 3 and Ray {RAY_VERSION} (`pip install ray=={RAY_VERSION}`; scripts/setup.sh installs
it), the same versions as the cluster's; nodes with the gadget binary's architecture and
libc. Give the nodes' clocks NTP (chrony): the start is a wall-clock instant.
docs: docs/scale-out.md, "Running shards on a cluster: Ray and Kubernetes".
"""


def parser() -> argparse.ArgumentParser:
    """The launcher's argument parser (its --help is the launcher's manual)."""
    p = argparse.ArgumentParser(
        prog="python3 -m gadget_ray",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--address",
        default=os.environ.get("RAY_ADDRESS"),
        help="the Ray cluster's address, HOST:PORT of its head (what `ray start --head` prints), "
        "or `auto` for a cluster started on this machine (default: $RAY_ADDRESS)",
    )
    p.add_argument("--shards", type=int, required=True, metavar="N", help="how many shards to run (N >= 1)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("out/ray"),
        metavar="DIR",
        help="where to write shard-I.json, shard-I.log, launch.json and merged.json (default: out/ray); "
        "a folder holding an earlier launch's files is refused",
    )
    p.add_argument(
        "--lead",
        type=float,
        default=10.0,
        metavar="SECS",
        help="how far ahead of the moment every shard is ready the start is agreed (default: 10): "
        "enough to start gadget and open its store on every node; a shard not ready by then fails",
    )
    p.add_argument(
        "--cpus-per-shard",
        type=float,
        default=1.0,
        metavar="C",
        help="the CPUs Ray reserves for each shard (default: 1); a shard per node needs N nodes with C CPUs",
    )
    p.add_argument(
        "--file",
        dest="files",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="ship this file to every shard too, into its folder under its file name (repeat for more): "
        "files the config reads, a RocksDB library for --rocksdb-lib ./NAME",
    )
    p.add_argument(
        "--gadget",
        type=Path,
        default=None,
        metavar="PATH",
        help="the gadget binary to ship (default: $GADGET_BIN, else gadget on PATH; `gadget cluster ray` gives itself)",
    )
    p.add_argument(
        "--placement-timeout",
        type=float,
        default=60.0,
        metavar="SECS",
        help="how long to wait for Ray to place the shards on distinct nodes (default: 60)",
    )
    p.add_argument("config", type=Path, metavar="CONFIG", help="the workload config (a YCSB or KVBench config)")
    return p


def _default_gadget() -> Path | None:
    """$GADGET_BIN, else `gadget` on PATH."""
    env = os.environ.get("GADGET_BIN")
    if env:
        return Path(env)
    found = shutil.which("gadget")
    return Path(found) if found else None


def options_from(argv: Sequence[str]) -> launch.Options:
    """Parses the launcher's arguments (argparse exits with status 2 on bad ones)."""
    own, run_args = plan.split_run_args(argv)
    p = parser()
    args = p.parse_args(own)
    if not args.address:
        p.error("give --address HOST:PORT of the Ray cluster's head (or set RAY_ADDRESS)")
    gadget = args.gadget or _default_gadget()
    if gadget is None:
        p.error("no gadget binary: give --gadget PATH (or set GADGET_BIN, or put gadget on PATH)")
    return launch.Options(
        address=args.address,
        shards=args.shards,
        config=args.config,
        gadget=gadget,
        out=args.out,
        lead=args.lead,
        cpus_per_shard=args.cpus_per_shard,
        files=list(args.files),
        run_args=run_args,
        placement_timeout=args.placement_timeout,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the launcher; its exit status."""
    options = options_from(sys.argv[1:] if argv is None else argv)
    return launch.run(options)
