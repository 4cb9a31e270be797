"""deploy/kubernetes/gadget-shards.yaml, without a Kubernetes cluster (none is at hand).

What can be checked here is: that the file is YAML Kubernetes takes the shape of (an Indexed
Job whose N agrees everywhere, its pods' index in their arguments, the volumes they share),
that its workload is the example it says it is, and that what its pods would run works:
the shard pods' arguments, expanded as Kubernetes expands `$(VAR)`, run with the gadget
binary on this machine (concurrently, from one agreed start), then the merge Job's script,
and the merge adds up to the unsharded run. Whether a cluster schedules, mounts and runs it
is not checked: say so wherever it is documented.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, unavailable

MANIFEST = ROOT / "deploy" / "kubernetes" / "gadget-shards.yaml"
PLACEHOLDER = "START_AT_UNIX_SECONDS"


def documents(start_at: str = "1764150000") -> dict[str, dict[str, Any]]:
    """The manifest's objects by `Kind/name`, with the start substituted as the docs say
    (`sed s/START_AT_UNIX_SECONDS/$START/`)."""
    yaml = pytest.importorskip("yaml")  # PyYAML comes with Ray
    text = MANIFEST.read_text().replace(PLACEHOLDER, start_at)
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def container(job: dict[str, Any]) -> dict[str, Any]:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c


def env_of(c: dict[str, Any], index: int) -> dict[str, str]:
    """A container's environment as Kubernetes would give pod `index` of an Indexed Job."""
    env: dict[str, str] = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        else:
            path = e["valueFrom"]["fieldRef"]["fieldPath"]
            assert path == "metadata.annotations['batch.kubernetes.io/job-completion-index']", path
            env[e["name"]] = str(index)
    return env


def expand(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of a container argument: `$(NAME)` becomes the variable's value
    (left as it is when there is no such variable), `$$` a `$`."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
        lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
        arg,
    )


def test_the_manifest_is_a_results_volume_a_workload_an_indexed_job_and_a_merge() -> None:
    objects = documents()
    assert sorted(objects) == [
        "ConfigMap/gadget-workload", "Job/gadget-merge", "Job/gadget-shards", "PersistentVolumeClaim/gadget-results",
    ]  # fmt: skip
    assert objects["PersistentVolumeClaim/gadget-results"]["spec"]["accessModes"] == ["ReadWriteMany"]
    for name in ("Job/gadget-shards", "Job/gadget-merge"):
        assert objects[name]["apiVersion"] == "batch/v1"
        spec = objects[name]["spec"]
        assert spec["backoffLimit"] == 0
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["results"]["persistentVolumeClaim"]["claimName"] == "gadget-results"
        assert volumes["workload"]["configMap"]["name"] == "gadget-workload"
        mounts = {m["name"]: m["mountPath"] for m in container(objects[name])["volumeMounts"]}
        assert mounts == {"results": "/results", "workload": "/workload"}


def test_one_pod_per_shard_with_its_completion_index_as_the_shard() -> None:
    objects = documents()
    shards = objects["Job/gadget-shards"]
    spec = shards["spec"]
    c = container(shards)
    n = int(env_of(c, 0)["SHARDS"])
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == n
    assert int(env_of(container(objects["Job/gadget-merge"]), 0)["SHARDS"]) == n
    args = c["args"]
    assert c["command"] == ["gadget"] and args[0] == "run"
    assert args[args.index("--shard") + 1] == "$(JOB_COMPLETION_INDEX)/$(SHARDS)"
    assert args[args.index("--start-at") + 1] == "$(START_AT)"
    assert args[args.index("-o") + 1] == "/results/shard-$(JOB_COMPLETION_INDEX).json"
    assert [expand(a, env_of(c, 2)) for a in args][args.index("--shard") + 1 :][:5] == [
        f"2/{n}", "--start-at", "1764150000", "-o", "/results/shard-2.json",
    ]  # fmt: skip


def test_the_start_is_a_placeholder_the_documented_sed_replaces() -> None:
    text = MANIFEST.read_text()
    assert text.count(PLACEHOLDER) == 2  # the comment's sed command and the value
    assert 'value: "START_AT_UNIX_SECONDS"' in text
    assert f'sed "s/{PLACEHOLDER}/$START/" deploy/kubernetes/gadget-shards.yaml | kubectl apply -f -' in text
    assert "NOT RUN ON A REAL KUBERNETES CLUSTER" in text


def test_the_workload_is_ycsb_workload_a_of_the_examples() -> None:
    data = documents()["ConfigMap/gadget-workload"]["data"]
    assert data["workload.toml"] == (ROOT / "examples" / "ycsb" / "workloada.toml").read_text()


def test_what_the_pods_run_works_and_merges_to_the_unsharded_run(tmp_path: Path, gadget: Path) -> None:
    library_dir = ROOT / ".deps" / "rocksdb"
    if not (library_dir / "flink-1.20" / "librocksdbjni-linux64.so").is_file():
        unavailable(f"no RocksDB library under {library_dir}: scripts/setup.sh fetches it")
    start = f"{time.time() + 4:.3f}"
    objects = documents(start)
    workload, results = tmp_path / "workload", tmp_path / "results"
    workload.mkdir()
    results.mkdir()
    for name, text in objects["ConfigMap/gadget-workload"]["data"].items():
        (workload / name).write_text(text)

    def here(arg: str) -> str:  # the pod's mounts, in this test's folder
        return arg.replace("/workload/", f"{workload}/").replace("/results/", f"{results}/")

    # the image's environment (deploy/kubernetes/Dockerfile): the RocksDB builds' folder
    base = {**os.environ, "GADGET_ROCKSDB_DIR": str(library_dir), "PATH": f"{gadget.parent}:{os.environ['PATH']}"}
    shard = container(objects["Job/gadget-shards"])
    n = objects["Job/gadget-shards"]["spec"]["completions"]
    pods = []
    for index in range(n):
        env = env_of(shard, index)
        argv = [here(expand(a, env)) for a in shard["args"]]
        pods.append(
            subprocess.Popen(
                [str(gadget), *argv], env={**base, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
            )
        )
    for p in pods:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert sorted(p.name for p in results.glob("shard-*.json")) == [f"shard-{i}.json" for i in range(n)]

    merge = container(objects["Job/gadget-merge"])
    assert merge["command"] == ["sh", "/workload/merge.sh"]
    env = {**env_of(merge, 0), "RESULTS": str(results), "WAIT_SECONDS": "30"}
    done = subprocess.run(
        ["sh", str(workload / "merge.sh")], env={**base, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    merged = json.loads((results / "merged.json").read_text())

    # the same run, unsharded: the shard pods' arguments without --shard, --start-at and -o
    args = [here(a) for a in shard["args"]]
    for flag in ("--shard", "--start-at", "-o"):
        at = args.index(flag)
        del args[at : at + 2]
    single = tmp_path / "single.json"
    subprocess.run([str(gadget), *args, "-o", str(single)], env=base, capture_output=True, check=True, timeout=120)
    assert merged["requests"] == json.loads(single.read_text())["requests"]
    assert merged["partial"] is False
    assert len(merged["shards"]) == n

    # a shard that never wrote its results: once the wait is over, the others are merged
    (results / f"shard-{n - 1}.json").unlink()
    (results / "merged.json").unlink()
    env["WAIT_SECONDS"] = "0"
    done = subprocess.run(
        ["sh", str(workload / "merge.sh")], env={**base, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert f"no results from shard(s) {n - 1} of {n} after 0 s; merging the others" in done.stderr
    partial = json.loads((results / "merged.json").read_text())
    assert partial["partial"] is True and len(partial["shards"]) == n - 1
    assert f"shard {n - 1}/{n} missing" in partial["partial_reason"]


def test_the_merge_job_merges_the_shards_there_are_once_its_wait_is_over(tmp_path: Path, gadget: Path) -> None:
    objects = documents()
    script = objects["ConfigMap/gadget-workload"]["data"]["merge.sh"]
    (tmp_path / "merge.sh").write_text(script)
    results = tmp_path / "results"
    results.mkdir()
    base = {
        **os.environ,
        "PATH": f"{gadget.parent}:{os.environ['PATH']}",
        "SHARDS": "3",
        "RESULTS": str(results),
        "WAIT_SECONDS": "0",
    }
    done = subprocess.run(["sh", str(tmp_path / "merge.sh")], env=base, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "no results from shard(s) 0 1 2 of 3" in done.stderr
    assert f"no shard wrote results to {results}" in done.stderr
