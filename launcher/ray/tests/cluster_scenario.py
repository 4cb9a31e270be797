"""The body of test_ray_cluster.py, run inside the network namespace that test creates.

It starts a Ray cluster of three nodes (a head and two workers, each its own raylet with one
CPU) on the namespace's loopback, runs `gadget cluster ray` against it four times, and
writes what it observed to a JSON report for the test to check:

- `memory`: 3 shards of YCSB workload A on the in-memory store, and the same run unsharded
  (`single`), and `gadget analyze` of the merged results;
- `rocksdb`: 3 shards on embedded RocksDB, the library shipped with --file (as on nodes
  without Gadget's .deps/), and the same run unsharded (`rocksdb_single`);
- `late`: a lead too short for any shard to be ready: every shard fails, and says why;
- `interrupted`: a long run stopped with SIGINT once the shards run: each shard's results
  so far come back, merged, marked partial.

The cluster is shut down however it ends; the test's namespace (with --pid and --kill-child)
ends every process left behind.

Usage: python3 cluster_scenario.py GADGET ROOT WORKDIR TEMP REPORT (TEMP: a short folder for Ray's files)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

WORKLOAD = "examples/ycsb/workloada.toml"
RUN_ARGS = ["--limit", "3000", "--arrival", "poisson", "--rate", "20000"]
ROCKSDB_LIBRARY = ".deps/rocksdb/flink-1.20/librocksdbjni-linux64.so"
#: Each node's object store: room for the debug binary (about 135 MB) and the results.
OBJECT_STORE_BYTES = 400 * 1024 * 1024


def gadget_cluster_ray(
    gadget: Path, address: str, out: Path, config: Path, run_args: list[str], lead: float, extra: Sequence[str] = ()
) -> list[str]:
    """The command line of one launch."""
    return [
        str(gadget), "cluster", "ray", "--address", address, "--shards", "3", "--lead", str(lead),
        "--out", str(out), *extra, str(config), "--", *run_args,
    ]  # fmt: skip


def launcher_env() -> dict[str, str]:
    """The launch's environment: no PYTHONPATH of the test's, so that `gadget cluster ray`
    finds its launcher itself."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}


def outcome(out: Path, completed: Any, seconds: float) -> dict[str, Any]:
    """What one launch left: its exit status, its standard error, its files, its record,
    and the merged results' requests."""
    report: dict[str, Any] = {
        "exit_code": completed.returncode,
        "stdout": completed.stdout[-20000:] if completed.stdout else "",
        "stderr": completed.stderr[-20000:] if completed.stderr else "",
        "seconds": round(seconds, 2),
        "files": sorted(p.name for p in out.iterdir()) if out.is_dir() else [],
        "launch": None,
        "merged": None,
        "shards": {},
    }
    record = out / "launch.json"
    if record.is_file():
        report["launch"] = json.loads(record.read_text())
    merged = out / "merged.json"
    if merged.is_file():
        m = json.loads(merged.read_text())
        report["merged"] = {"requests": m["requests"], "partial": m["partial"], "shards": len(m.get("shards", []))}
    for p in sorted(out.glob("shard-*.json")):
        r = json.loads(p.read_text())
        report["shards"][p.name] = {
            "requests": r["requests"],
            "partial": r["partial"],
            "partial_reason": r.get("partial_reason"),
        }
    return report


def launch(cmd: list[str], env: dict[str, str], out: Path) -> dict[str, Any]:
    """One launch, to its end."""
    began = time.monotonic()
    completed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    return outcome(out, completed, time.monotonic() - began)


def interrupted_launch(cmd: list[str], env: dict[str, str], out: Path, after: float) -> dict[str, Any]:
    """A launch sent SIGINT `after` seconds past its agreed start (as Ctrl-C would)."""
    began = time.monotonic()
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said: list[str] = []
    assert process.stderr is not None
    for line in process.stderr:
        said.append(line)
        if "the shards start at" in line:
            break
    start_at = float(said[-1].split("start at ")[1].split()[0]) if said and "start at" in said[-1] else time.time()
    time.sleep(max(0.0, start_at - time.time()) + after)
    sent_at = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        stdout, rest = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        # what it said before it had to be killed is what tells why Ctrl-C did not stop it
        process.kill()
        stdout, rest = process.communicate()
        raise AssertionError(
            "the launch went on for 120 s after Ctrl-C; what it said:\n" + "".join(said) + rest
        ) from None
    stopped_in = time.monotonic() - sent_at

    completed = SimpleNamespace(returncode=process.returncode, stdout=stdout, stderr="".join(said) + rest)
    report = outcome(out, completed, time.monotonic() - began)
    report["stopped_in_seconds"] = round(stopped_in, 2)
    return report


def unsharded(gadget: Path, config: Path, run_args: list[str], out: Path, env: dict[str, str]) -> int:
    """The requests of the same run, unsharded, on this machine."""
    subprocess.run(
        [str(gadget), "run", str(config), *run_args, "-o", str(out)],
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.read_text())["requests"]


def scenario(gadget: Path, root: Path, work: Path, temp: Path, report: dict[str, Any]) -> None:
    from ray.cluster_utils import Cluster

    report["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    config = root / WORKLOAD
    # All of Ray's files (sessions, logs, sockets, the address file it writes beside them) in
    # the test's folder TEMP, which it removes once every process of the namespace has ended.
    (temp / "ray").mkdir(exist_ok=True)
    os.environ["RAY_TMPDIR"] = str(temp)
    env = launcher_env()
    began = time.monotonic()
    node_args: dict[str, Any] = {
        "num_cpus": 1,
        "object_store_memory": OBJECT_STORE_BYTES,
        "node_ip_address": "127.0.0.1",
    }
    cluster = None
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={**node_args, "include_dashboard": False, "temp_dir": str(temp / "ray")},
        )
        for _ in range(2):
            cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        report["cluster_seconds"] = round(time.monotonic() - began, 2)
        report["cluster_nodes"] = sorted(n.node_id for n in cluster.list_all_nodes())
        address = cluster.address

        out = work / "memory"
        report["memory"] = launch(
            gadget_cluster_ray(gadget, address, out, config, ["--store", "memory", *RUN_ARGS], 5), env, out
        )
        report["single"] = unsharded(gadget, config, ["--store", "memory", *RUN_ARGS], work / "single.json", env)
        analyzed = subprocess.run(
            [str(gadget), "analyze", str(out / "merged.json")], env=env, capture_output=True, text=True, timeout=120
        )
        report["analyze"] = {
            "exit_code": analyzed.returncode,
            "stdout": analyzed.stdout[-5000:],
            "stderr": analyzed.stderr[-5000:],
        }

        library = root / ROCKSDB_LIBRARY
        if library.is_file():
            rocksdb_args = ["--store", "rocksdb", "--rocksdb-lib", f"./{library.name}", *RUN_ARGS]
            out = work / "rocksdb"
            report["rocksdb"] = launch(
                gadget_cluster_ray(gadget, address, out, config, rocksdb_args, 8, ["--file", str(library)]), env, out
            )
            local_args = ["--store", "rocksdb", "--rocksdb-lib", str(library), *RUN_ARGS]
            report["rocksdb_single"] = unsharded(gadget, config, local_args, work / "rocksdb-single.json", env)
        else:
            report["rocksdb"] = {"missing_library": str(library)}

        out = work / "late"
        report["late"] = launch(
            gadget_cluster_ray(gadget, address, out, config, ["--store", "memory", *RUN_ARGS], 0.001), env, out
        )

        out = work / "interrupted"
        long_run = ["--store", "memory", "--arrival", "poisson", "--rate", "1000", "-p", "operationcount=200000"]
        report["interrupted"] = interrupted_launch(
            gadget_cluster_ray(gadget, address, out, config, long_run, 5), env, out, after=2.0
        )
    finally:
        if cluster is not None:
            cluster.shutdown()
        report["total_seconds"] = round(time.monotonic() - began, 2)


def main() -> int:
    gadget, root, work, temp, report_path = (Path(a) for a in sys.argv[1:6])
    report: dict[str, Any] = {}
    try:
        scenario(gadget, root, work, temp, report)
        code = 0
    except BaseException:
        report["error"] = traceback.format_exc()
        code = 1
    report_path.write_text(json.dumps(report, indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main())
