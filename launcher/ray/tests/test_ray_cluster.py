"""`gadget cluster ray` on a real Ray cluster: a head and two worker nodes (three raylets),
in a network namespace of the test's own where loopback is the only interface.

The cluster and the launches run in cluster_scenario.py, started under
`unshare --net --pid --fork --mount-proc --kill-child`: a new network namespace (brought up
with only `lo`), and a new process namespace whose first process is the scenario, so that
when the scenario ends, however it ends (or the test kills it on a timeout), the kernel ends
every process it left (raylets, GCS, workers, shards) and the namespace goes with them.
The tests below check the report the scenario writes. They need root (creating namespaces);
elsewhere they are skipped, in CI they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, unavailable

from gadget_ray import RAY_VERSION

SCENARIO = Path(__file__).with_name("cluster_scenario.py")
#: The whole scenario: the cluster's start, four launches, two unsharded runs.
TIMEOUT_SECONDS = 300


def prerequisites() -> None:
    """Skips (or in CI fails) when the scenario cannot run here."""
    if os.geteuid() != 0:
        unavailable("the Ray cluster test creates a network namespace (unshare --net), which needs root")
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            unavailable(f"the Ray cluster test needs `{tool}` (util-linux, iproute2)")
    try:
        import ray
    except ImportError:
        unavailable(
            f"the Python module `ray` is missing: pip install ray=={RAY_VERSION} (scripts/setup.sh installs it)"
        )
    if ray.__version__ != RAY_VERSION:
        unavailable(
            f"Ray {ray.__version__} is installed; the launcher is tested with {RAY_VERSION} (scripts/setup.sh installs it)"
        )


@pytest.fixture(scope="module")
def report(gadget: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs the scenario in its namespace once; what it observed."""
    prerequisites()
    work = tmp_path_factory.mktemp("ray-cluster")
    report_path = work / "report.json"
    ray_files = Path(tempfile.mkdtemp(prefix="gray-"))  # short: Ray's socket paths live under it
    ip = shutil.which("ip") or "/usr/sbin/ip"
    command = [
        "unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "--",
        "sh", "-c", f'"{ip}" link set lo up && exec "$0" "$@"',
        sys.executable, str(SCENARIO), str(gadget), str(ROOT), str(work), str(ray_files), str(report_path),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired as e:
        shutil.rmtree(ray_files, ignore_errors=True)  # unshare --kill-child ended every process
        said = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr or ""
        pytest.fail(
            f"the Ray cluster scenario took more than {TIMEOUT_SECONDS} s (unshare --kill-child ended it); its output:\n{said}"
        )
    # The namespace's processes have all ended with its first (--pid, --kill-child): Ray's
    # files can go.
    shutil.rmtree(ray_files, ignore_errors=True)
    if not report_path.is_file():
        pytest.fail(
            f"the scenario wrote no report (exit status {done.returncode}):\n{done.stdout[-5000:]}\n{done.stderr[-10000:]}"
        )
    r: dict[str, Any] = json.loads(report_path.read_text())
    if "error" in r:
        pytest.fail(f"the scenario failed:\n{r['error']}\n{done.stderr[-10000:]}")
    return r


def ran_ok(launch: dict[str, Any]) -> None:
    assert launch["exit_code"] == 0, f"gadget cluster ray failed:\n{launch['stderr']}"


def test_the_cluster_runs_in_a_namespace_whose_only_interface_is_loopback(report: dict[str, Any]) -> None:
    assert report["interfaces"] == ["lo"]
    assert len(report["cluster_nodes"]) == 3


def test_three_shards_run_on_three_distinct_nodes_of_the_cluster(report: dict[str, Any]) -> None:
    launch = report["memory"]
    ran_ok(launch)
    record = launch["launch"]
    assert record["placement"] == "STRICT_SPREAD"
    nodes = [s["node_id"] for s in record["shard_runs"]]
    assert len(set(nodes)) == 3, nodes
    assert set(nodes) <= set(report["cluster_nodes"])
    assert [s["exit_code"] for s in record["shard_runs"]] == [0, 0, 0]
    commands = [s["command"] for s in record["shard_runs"]]
    for i, c in enumerate(commands):
        assert c[:5] == ["gadget", "run", "workloada.toml", "--shard", f"{i}/3"]
        assert c[5:7] == ["--start-at", f"{record['start_at']:.3f}"]
        assert c[7:9] == ["-o", f"shard-{i}.json"]


def test_the_shards_files_the_record_and_the_merge_are_written_under_fixed_names(report: dict[str, Any]) -> None:
    assert report["memory"]["files"] == [
        "launch.json", "merged.json",
        "shard-0.json", "shard-0.log", "shard-1.json", "shard-1.log", "shard-2.json", "shard-2.log",
    ]  # fmt: skip


def test_the_merged_requests_are_the_unsharded_runs(report: dict[str, Any]) -> None:
    launch = report["memory"]
    ran_ok(launch)
    shards = launch["shards"]
    assert len(shards) == 3 and all(s["requests"] > 0 for s in shards.values()), shards
    assert launch["merged"] == {"requests": report["single"], "partial": False, "shards": 3}
    assert sum(s["requests"] for s in shards.values()) == report["single"]


def test_gadget_analyze_reads_the_merged_results(report: dict[str, Any]) -> None:
    analyzed = report["analyze"]
    assert analyzed["exit_code"] == 0, analyzed["stderr"]
    assert "3 shards" in analyzed["stdout"]


def test_rocksdb_shards_run_on_a_shipped_library_and_merge_to_the_unsharded_run(report: dict[str, Any]) -> None:
    launch = report["rocksdb"]
    if "missing_library" in launch:
        unavailable(f"no RocksDB library at {launch['missing_library']}: scripts/setup.sh fetches it")
    ran_ok(launch)
    assert len({s["node_id"] for s in launch["launch"]["shard_runs"]}) == 3
    assert launch["launch"]["files"][0].endswith("librocksdbjni-linux64.so")
    assert launch["merged"] == {"requests": report["rocksdb_single"], "partial": False, "shards": 3}


def test_shards_not_ready_by_the_start_fail_the_launch_and_say_to_raise_the_lead(report: dict[str, Any]) -> None:
    launch = report["late"]
    assert launch["exit_code"] == 1
    record = launch["launch"]
    assert len(record["failures"]) == 3
    for failure in record["failures"]:
        assert "agree on a start further ahead" in failure and "raise --lead" in failure, failure
    assert record["merged"] is None
    assert launch["files"] == ["launch.json", "shard-0.log", "shard-1.log", "shard-2.log"]
    assert "0 of 3 shards returned results" in launch["stderr"]


def test_ctrl_c_stops_the_shards_and_keeps_what_they_measured(report: dict[str, Any]) -> None:
    launch = report["interrupted"]
    assert launch["exit_code"] == 130, launch["stderr"]
    # the shards' schedule runs for 200 s: ending long before that is Ctrl-C's doing (a bound,
    # not a timing: a loaded machine may take seconds to stop three Ray actors)
    assert launch["stopped_in_seconds"] < 100
    assert launch["launch"]["interrupted"] is True
    shards = launch["shards"]
    assert sorted(shards) == ["shard-0.json", "shard-1.json", "shard-2.json"]
    for name, s in shards.items():
        assert s["partial"] is True and s["requests"] > 0, (name, s)
        assert "interrupted" in s["partial_reason"]
    assert launch["merged"]["partial"] is True
    assert launch["merged"]["requests"] == sum(s["requests"] for s in shards.values())
    assert "interrupted: 3 of 3 shards returned results" in launch["stderr"]
