"""The launcher without a cluster: its command line and errors, `gadget cluster ray`'s, the
node-side shard runner driving the real gadget binary, and the shipping of its code."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import LAUNCHER, ROOT, unavailable

from gadget_ray import RAY_VERSION, cli, launch, plan, shard

WORKLOAD = ROOT / "examples" / "ycsb" / "workloada.toml"


def launcher(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python3 -m gadget_ray ARGS` with the launcher on its path."""
    full = {**os.environ, "PYTHONPATH": str(LAUNCHER), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gadget_ray", *args], env=full, capture_output=True, text=True, timeout=60
    )


def options(tmp_path: Path, binary: Path, **changes: object) -> launch.Options:
    o = launch.Options(address="127.0.0.1:1", shards=3, config=WORKLOAD, gadget=binary, out=tmp_path / "out")
    for k, v in changes.items():
        setattr(o, k, v)
    return o


def test_help_teaches_the_launch() -> None:
    r = launcher("--help")
    assert r.returncode == 0, r.stderr
    for said in (
        "--address",
        "--shards",
        "--lead",
        "--file",
        "--out",
        "exit status",
        "launch.json",
        f"ray=={RAY_VERSION}",
        "docs/scale-out.md",
    ):
        assert said in r.stdout, said


def test_no_address_is_refused_with_what_to_give() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run(
        [sys.executable, "-m", "gadget_ray", "--shards", "2", "--gadget", "/bin/true", str(WORKLOAD)],
        env={**env, "PYTHONPATH": str(LAUNCHER)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2
    assert "give --address HOST:PORT of the Ray cluster's head (or set RAY_ADDRESS)" in r.stderr


def test_the_options_are_parsed_with_the_run_args_after_a_double_dash() -> None:
    o = cli.options_from(
        [
            "--address",
            "h:1",
            "--shards",
            "2",
            "--lead",
            "3",
            "--gadget",
            "/g",
            "--file",
            "a.so",
            "--file",
            "b",
            "w.toml",
            "--",
            "--store",
            "memory",
        ]
    )
    assert (o.address, o.shards, o.lead, o.gadget, o.config) == ("h:1", 2, 3.0, Path("/g"), Path("w.toml"))
    assert o.files == [Path("a.so"), Path("b")]
    assert o.run_args == ["--store", "memory"]
    assert o.out == Path("out/ray")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"shards": 0}, "--shards must be at least 1, not 0"),
        ({"lead": 0.0}, "--lead must be a positive number of seconds"),
        ({"cpus_per_shard": 0.0}, "--cpus-per-shard must be a positive number of CPUs"),
        ({"config": Path("/nowhere/w.toml")}, "the workload config /nowhere/w.toml does not exist"),
        (
            {"gadget": Path("/nowhere/gadget")},
            "the gadget binary /nowhere/gadget does not exist; give its path with --gadget",
        ),
        ({"files": [Path("/nowhere/lib.so")]}, "--file /nowhere/lib.so does not exist"),
        ({"files": [WORKLOAD]}, "a file named workloada.toml is shipped already"),
        ({"run_args": ["--store", "memory", "-o", "x.json"]}, "-o cannot be given to the shards"),
    ],
)
def test_a_launch_that_cannot_start_says_why_before_touching_the_cluster(
    tmp_path: Path, gadget: Path, change: dict[str, object], message: str
) -> None:
    with pytest.raises(launch.LaunchError, match=re.escape(message)):
        launch.check_inputs(options(tmp_path, gadget, **change))


def test_an_output_folder_of_an_earlier_launch_is_refused(tmp_path: Path, gadget: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "shard-0.json").write_text("{}")
    with pytest.raises(
        launch.LaunchError,
        match=r"holds the files of an earlier launch \(shard-0.json\); give another --out or remove them",
    ):
        launch.check_inputs(options(tmp_path, gadget))


def test_without_ray_the_launcher_says_how_to_install_it(
    tmp_path: Path, gadget: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    err = io.StringIO()
    assert launch.run(options(tmp_path, gadget), err) == 2
    said = err.getvalue()
    assert said.startswith("error: the Python module `ray` is missing")
    assert f"pip install ray=={RAY_VERSION}" in said and "scripts/setup.sh installs it" in said


def test_an_unreachable_cluster_is_an_error_that_says_how_to_start_one(tmp_path: Path, gadget: Path) -> None:
    pytest.importorskip("ray")
    err = io.StringIO()
    started = time.monotonic()
    code = launch.run(options(tmp_path, gadget, address="127.0.0.1:9"), err)
    assert code == 2
    assert "cannot connect to the Ray cluster at 127.0.0.1:9" in err.getvalue()
    assert "ray start --head" in err.getvalue()
    assert time.monotonic() - started < 120


def test_gadget_cluster_ray_says_when_python_is_missing(gadget: Path) -> None:
    r = subprocess.run(
        [str(gadget), "cluster", "ray", "--address", "h:1", "--shards", "2", str(WORKLOAD)],
        env={**os.environ, "GADGET_PYTHON": "/nowhere/python3"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 1
    assert "error: cannot run /nowhere/python3: it is not installed" in r.stderr
    assert f"pip install ray=={RAY_VERSION}" in r.stderr


def test_gadget_cluster_ray_says_when_ray_is_missing(gadget: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # a Python of its own, without Ray
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    r = subprocess.run(
        [str(gadget), "cluster", "ray", "--address", "h:1", "--shards", "2", "--out", str(tmp_path / "out"), str(WORKLOAD)],
        env={**os.environ, "GADGET_PYTHON": str(venv / "bin" / "python3")}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "error: the Python module `ray` is missing" in r.stderr
    assert f"pip install ray=={RAY_VERSION}" in r.stderr


def test_gadget_cluster_ray_refuses_a_launcher_folder_without_the_launcher(gadget: Path, tmp_path: Path) -> None:
    r = subprocess.run(
        [str(gadget), "cluster", "ray", "--address", "h:1", "--shards", "2", str(WORKLOAD)],
        env={**os.environ, "GADGET_RAY_LAUNCHER": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 1
    assert f"GADGET_RAY_LAUNCHER is {tmp_path}, which holds no gadget_ray/__main__.py" in r.stderr


def test_the_ray_version_is_pinned_alike_everywhere() -> None:
    places = {
        "scripts/setup.sh": r"^ray_version=([0-9.]+)$",
        "crates/gadget-cli/src/cluster_cmd/ray.rs": r'RAY_VERSION: &str = "([0-9.]+)"',
        "crates/gadget-cli/src/cli.rs": r"ray==([0-9][0-9.]*[0-9])",
        "docs/scale-out.md": r"ray==([0-9][0-9.]*[0-9])",
        "README.md": r"ray==([0-9][0-9.]*[0-9])",
    }
    for path, pattern in places.items():
        found = set(re.findall(pattern, (ROOT / path).read_text(), re.MULTILINE))
        assert found == {RAY_VERSION}, f"{path} pins Ray {found}, the launcher {RAY_VERSION}"


def prepared_runner(folder: Path, gadget: Path, index: int = 0, count: int = 1) -> shard.ShardRunner:
    """A shard runner with the binary and the config in `folder`, as `prepare` leaves them
    (the binary linked, not copied: it is large)."""
    runner = shard.ShardRunner(index, count)
    folder.mkdir()
    (folder / "gadget").symlink_to(gadget)
    (folder / WORKLOAD.name).write_bytes(WORKLOAD.read_bytes())
    runner.folder = folder
    return runner


def test_prepare_writes_the_shipped_files_into_a_folder_of_the_shards_own(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = shard.ShardRunner(1, 3)
    monkeypatch.setattr(runner, "where", lambda: {"node_id": "n"})
    info = runner.prepare(b"#!/bin/sh\n", "w.toml", b"seed = 1\n", [("lib.so", b"\x7fELF")])
    folder = Path(info["folder"])
    try:
        assert info["node_id"] == "n"
        assert folder.name.startswith("gadget-ray-shard1-")
        assert sorted(p.name for p in folder.iterdir()) == ["gadget", "lib.so", "w.toml"]
        assert os.access(folder / "gadget", os.X_OK)
        assert (folder / "lib.so").read_bytes() == b"\x7fELF"
    finally:
        runner.cleanup()
    assert not folder.exists()
    for files, message in (
        ([("../x", b"")], "not a plain file name"),
        ([("w.toml", b"")], "two shipped files are named w.toml"),
    ):
        with pytest.raises(ValueError, match=message):
            runner.prepare(b"", "w.toml", b"", files)
        runner.cleanup()


def test_a_shard_runs_gadget_from_the_agreed_start_and_returns_its_results(tmp_path: Path, gadget: Path) -> None:
    runner = prepared_runner(tmp_path / "shard", gadget, index=1, count=2)
    _, start = plan.choose_start_at(time.time(), 1.0)
    argv = plan.shard_argv(
        1, 2, WORKLOAD.name, start, ["--store", "memory", "--limit", "500", "--arrival", "poisson", "--rate", "20000"]
    )
    reply = runner.run(argv, plan.results_name(1))
    assert reply["exit_code"] == 0, reply["stderr"]
    assert reply["error"] is None
    assert b'"requests"' in reply["results"]
    assert reply["seconds"] >= 0.5  # it waited for the start
    assert "latency" in reply["stdout"]


def test_stop_makes_a_running_shard_end_with_its_results_so_far(tmp_path: Path, gadget: Path) -> None:
    runner = prepared_runner(tmp_path / "shard", gadget)
    _, start = plan.choose_start_at(time.time(), 0.5)
    argv = plan.shard_argv(
        0,
        1,
        WORKLOAD.name,
        start,
        ["--store", "memory", "--arrival", "constant", "--rate", "1000", "-p", "operationcount=1000000"],
    )
    replies: list[dict[str, Any]] = []
    running = threading.Thread(target=lambda: replies.append(runner.run(argv, plan.results_name(0))))
    running.start()
    time.sleep(2.0)
    assert runner.stop() is True
    running.join(timeout=30)
    assert not running.is_alive(), "the shard did not stop"
    (reply,) = replies
    assert reply["exit_code"] == plan.INTERRUPTED_EXIT, reply["stderr"]
    assert b'"partial": true' in reply["results"]
    assert runner.stop() is False  # nothing runs any more
    # a shard stopped before it started does not start
    assert runner.run(argv, plan.results_name(0))["error"] == "stopped before it started"


def unpickles_without_the_launcher(data: bytes, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Loads `data` in a Python that has Ray but not gadget_ray on its path, as a node has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import pickle, sys, ray.cloudpickle; c = pickle.loads(sys.stdin.buffer.read()); print(c(2, 3).count)"
    return subprocess.run(
        [sys.executable, "-c", code],
        input=data.decode("latin-1"),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="latin-1",
        timeout=60,
    )


def test_the_shard_runner_is_shipped_by_value_so_nodes_need_no_gadget_sources(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    if ray.__version__ != RAY_VERSION:
        unavailable(f"Ray {ray.__version__} is installed; the launcher is tested with {RAY_VERSION}")
    by_reference = ray.cloudpickle.dumps(shard.ShardRunner)
    r = unpickles_without_the_launcher(by_reference, tmp_path)
    assert r.returncode != 0 and "No module named 'gadget_ray'" in r.stderr, (
        "the test must see the by-reference pickle fail"
    )
    launch.ship_by_value(ray)
    try:
        r = unpickles_without_the_launcher(ray.cloudpickle.dumps(shard.ShardRunner), tmp_path)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(shard)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3"
