"""A launch on a Ray cluster: connect, place one actor per shard, ship the binary and the
workload, agree the start, run, gather, merge.

The steps, in order (each says what it does on standard error):

1. connect to the cluster (`ray.init(address=...)`);
2. place the shards: one per node (a placement group, STRICT_SPREAD) when the cluster has
   enough nodes, else spread (SPREAD);
3. ship `gadget`, the config and any `--file` through the object store; each shard writes
   them to a temporary folder on its node (`ShardRunner.prepare`) and reports where it is;
4. check the nodes' clocks against this machine's (the start is a wall-clock instant);
5. agree the start: now + `--lead`, after every shard is ready;
6. run `gadget run CONFIG --shard I/N --start-at T -o shard-I.json [run args]` everywhere and
   gather each shard's results as it ends; a failed shard does not stop the others;
7. write `shard-I.json`, `shard-I.log` and `launch.json` to `--out`, and merge the results
   that came back with `gadget merge` into `merged.json`.

Ctrl-C (or SIGTERM) asks every running shard to stop (its `gadget` writes its results so far,
marked partial), waits a few seconds for them, cancels what is still running, and merges what
was gathered; the exit status is then 130.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, TextIO

from gadget_ray import RAY_VERSION, plan, shard

#: How long the shards get to stop after Ctrl-C before they are cancelled.
STOP_GRACE_SECONDS = 10.0
#: A node clock further off than this from the launcher's is reported.
CLOCK_WARNING_SECONDS = 0.05


class LaunchError(RuntimeError):
    """A launch that could not be made; the message says why and what to do."""


@dataclass
class Options:
    """What `python3 -m gadget_ray` was asked to do (see cli.py for each option's meaning)."""

    address: str
    shards: int
    config: Path
    gadget: Path
    out: Path
    lead: float = 10.0
    cpus_per_shard: float = 1.0
    files: list[Path] = field(default_factory=list)
    run_args: list[str] = field(default_factory=list)
    placement_timeout: float = 60.0
    prepare_timeout: float = 600.0


def import_ray() -> ModuleType:
    """Imports Ray, or says how to install it."""
    try:
        import ray
    except ImportError as e:
        raise LaunchError(
            f"the Python module `ray` is missing ({e}): install it with `pip install ray=={RAY_VERSION}` "
            f"(the version the launcher is tested with; scripts/setup.sh installs it), the same Ray and "
            f"Python as the cluster's"
        ) from e
    return ray


def ship_by_value(ray: ModuleType) -> None:
    """Has Ray ship the actor's code (gadget_ray.shard) by value, so that the nodes need Ray
    and Python, not Gadget's sources on their Python path."""
    ray.cloudpickle.register_pickle_by_value(shard)


def check_inputs(options: Options) -> None:
    """Checks what can be checked before touching the cluster: the shard count, the lead,
    the binary, the config, the shipped files, the run args and the output folder."""
    if options.shards < 1:
        raise LaunchError(f"--shards must be at least 1, not {options.shards}")
    if not math.isfinite(options.lead) or options.lead <= 0:
        raise LaunchError(f"--lead must be a positive number of seconds, not {options.lead}")
    if not math.isfinite(options.cpus_per_shard) or options.cpus_per_shard <= 0:
        raise LaunchError(f"--cpus-per-shard must be a positive number of CPUs, not {options.cpus_per_shard}")
    if not options.gadget.is_file():
        raise LaunchError(f"the gadget binary {options.gadget} does not exist; give its path with --gadget")
    if not options.config.is_file():
        raise LaunchError(f"the workload config {options.config} does not exist or is not a file")
    names = {plan.BINARY_NAME, options.config.name}
    for path in options.files:
        if not path.is_file():
            raise LaunchError(f"--file {path} does not exist or is not a file")
        if path.name in names:
            raise LaunchError(
                f"--file {path}: a file named {path.name} is shipped already; give each file a name of its own"
            )
        names.add(path.name)
    try:
        plan.check_run_args(options.run_args)
    except plan.PlanError as e:
        raise LaunchError(str(e)) from e
    earlier = plan.earlier_launch_files(options.out)
    if earlier:
        raise LaunchError(
            f"{options.out} holds the files of an earlier launch ({', '.join(earlier[:4])}"
            f"{', ...' if len(earlier) > 4 else ''}); give another --out or remove them"
        )


def _check_listening(address: str, timeout: float = 10.0) -> None:
    """Refuses an address where nothing accepts connections (Ray would wait for it forever)."""
    where = plan.address_host_port(address)
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=timeout).close()
    except OSError as e:
        raise LaunchError(
            f"cannot connect to the Ray cluster at {address}: nothing answers there ({e}); start one with "
            f"`ray start --head` and give the address it prints (HOST:6379 by default)"
        ) from e


def _say(text: str, err: TextIO) -> None:
    print(f"gadget-ray: {text}", file=err, flush=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@dataclass
class _Shard:
    """The launcher's view of one shard while it runs."""

    index: int
    actor: Any
    argv: list[str] = field(default_factory=list)
    where: dict[str, Any] = field(default_factory=dict)
    clock_offset: float | None = None
    run_ref: Any = None
    outcome: plan.ShardOutcome | None = None


def launch(options: Options, err: TextIO = sys.stderr) -> int:
    """Runs the launch; its exit status (0, 1 when a shard or the merge failed, 130 when
    interrupted). Raises LaunchError for a launch that cannot start."""
    ray = import_ray()
    check_inputs(options)
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    _say(f"connecting to the Ray cluster at {options.address}", err)
    _check_listening(options.address)
    try:
        ray.init(address=options.address, logging_level="ERROR", log_to_driver=False)
    except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError, ...
        raise LaunchError(
            f"cannot connect to the Ray cluster at {options.address}: {e}; start one with "
            f"`ray start --head` and give the address it prints"
        ) from e
    ship_by_value(ray)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    # Ctrl-C too, even when this process was started with SIGINT ignored (a background job of
    # a non-interactive shell inherits SIG_IGN, and Python then installs no handler of its own)
    previous_int = signal.signal(signal.SIGINT, _raise_interrupt)
    pg = None
    shards: list[_Shard] = []
    interrupted = False
    started = False
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        node_cpus = [float(n.get("Resources", {}).get("CPU", 0.0)) for n in nodes]
        try:
            strategy_name = plan.choose_placement(options.shards, node_cpus, options.cpus_per_shard)
        except plan.PlanError as e:
            raise LaunchError(str(e)) from e
        _say(f"the cluster has {len(nodes)} nodes with {_cpus(sum(node_cpus))}", err)
        actor_class = ray.remote(max_concurrency=2)(shard.ShardRunner)
        if strategy_name == plan.STRICT_SPREAD:
            _say(
                f"placing {options.shards} shards on {options.shards} distinct nodes "
                f"({_cpus(options.cpus_per_shard)} each)",
                err,
            )
            pg = placement_group(
                [{"CPU": options.cpus_per_shard} for _ in range(options.shards)], strategy=plan.STRICT_SPREAD
            )
            ready, _ = ray.wait([pg.ready()], timeout=options.placement_timeout)
            if not ready:
                free = _cpus(ray.available_resources().get("CPU", 0))
                raise LaunchError(
                    f"Ray could not place {options.shards} shards on distinct nodes with "
                    f"{_cpus(options.cpus_per_shard)} each within {options.placement_timeout:g} s: {free} "
                    f"of the cluster's {_cpus(sum(node_cpus))} are free (other work holds the rest); wait for it, "
                    f"or lower --cpus-per-shard"
                )
            strategies: list[Any] = [
                PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=i)
                for i in range(options.shards)
            ]
        else:
            _say(f"{options.shards} shards on {len(nodes)} nodes: spreading them, some nodes run several", err)
            strategies = [plan.SPREAD for _ in range(options.shards)]
        for i in range(options.shards):
            actor = actor_class.options(num_cpus=options.cpus_per_shard, scheduling_strategy=strategies[i]).remote(
                i, options.shards
            )
            shards.append(_Shard(index=i, actor=actor))

        binary = options.gadget.read_bytes()
        shipped = [f"gadget ({len(binary) / 1e6:.0f} MB)", options.config.name, *(p.name for p in options.files)]
        _say(f"shipping {', '.join(shipped)} to the shards", err)
        binary_ref = ray.put(binary)
        del binary
        config_ref = ray.put(options.config.read_bytes())
        files_ref = ray.put([(p.name, p.read_bytes()) for p in options.files])
        prepare_refs = [s.actor.prepare.remote(binary_ref, options.config.name, config_ref, files_ref) for s in shards]
        _wait_all(ray, prepare_refs, options.prepare_timeout, "get the binary and the config onto its node")
        for s, ref in zip(shards, prepare_refs):
            try:
                s.where = ray.get(ref)
            except Exception as e:
                raise LaunchError(
                    f"shard {s.index}/{options.shards} could not be prepared on its node: {_ray_error_text(e)}"
                ) from e
            _say(
                f"shard {s.index}/{options.shards} ready on node {s.where['node_id'][:12]} "
                f"({s.where['node_ip']}, {s.where['hostname']})",
                err,
            )
        _check_clocks(ray, shards, err)

        start_at, start_text = plan.choose_start_at(time.time(), options.lead)
        for s in shards:
            s.argv = plan.shard_argv(s.index, options.shards, options.config.name, start_text, options.run_args)
            s.run_ref = s.actor.run.remote(s.argv, plan.results_name(s.index))
        started = True
        _say(f"the shards start at {start_text} (Unix seconds, in {options.lead:g} s)", err)
        try:
            _gather(ray, shards, None, err)
        except KeyboardInterrupt:
            interrupted = True
            _say("interrupted: asking the shards to stop (Ctrl-C again stops them at once)", err)
            for s in shards:
                if s.outcome is None:
                    s.actor.stop.remote()
            with contextlib.suppress(KeyboardInterrupt):
                _gather(ray, shards, time.monotonic() + STOP_GRACE_SECONDS, err)
            for s in shards:
                if s.outcome is None:
                    with contextlib.suppress(Exception):  # it may end meanwhile
                        ray.cancel(s.run_ref)
                        ray.kill(s.actor)
                    s.outcome = plan.ShardOutcome(
                        index=s.index, error="stopped before it returned its results", **_where(s)
                    )
        return _finish(options, shards, start_at, strategy_name, interrupted, err)
    except KeyboardInterrupt:
        if started:
            _say(f"interrupted while writing the shards' results to {options.out}; they may be incomplete", err)
        else:
            _say("interrupted before the shards started; nothing was run", err)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        for s in shards:
            # a killed actor's folder stays in its node's temporary directory
            with contextlib.suppress(Exception):
                ray.get(s.actor.cleanup.remote(), timeout=10)
            ray.kill(s.actor)
        if pg is not None:
            remove_placement_group(pg)
        ray.shutdown()


def _cpus(n: float) -> str:
    return f"{n:g} CPU" if n == 1 else f"{n:g} CPUs"


def _where(s: _Shard) -> dict[str, Any]:
    return {k: s.where.get(k) for k in ("node_id", "node_ip", "hostname")}


def _ray_error_text(e: BaseException) -> str:
    """A Ray error's first line, without the traceback Ray wraps around it."""
    text = str(e).strip()
    return text.splitlines()[-1] if text else type(e).__name__


def _wait_all(ray: ModuleType, refs: list[Any], timeout: float, what: str) -> None:
    ready, pending = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    if pending:
        raise LaunchError(f"{len(pending)} of {len(refs)} shards could not {what} within {timeout:g} s")


def _check_clocks(ray: ModuleType, shards: list[_Shard], err: TextIO) -> None:
    """Estimates each node's clock offset from one round trip, and reports large ones."""
    for s in shards:
        sent = time.time()
        theirs = ray.get(s.actor.clock.remote())
        back = time.time()
        s.clock_offset = theirs - (sent + back) / 2
        uncertainty = (back - sent) / 2
        if abs(s.clock_offset) > CLOCK_WARNING_SECONDS + uncertainty:
            _say(
                f"warning: node {s.where['node_id'][:12]}'s clock is {s.clock_offset * 1000:+.0f} ms off "
                f"this machine's (± {uncertainty * 1000:.0f} ms): its shard starts that far apart; "
                "run NTP (chrony) on the nodes",
                err,
            )


def _gather(ray: ModuleType, shards: list[_Shard], deadline: float | None, err: TextIO) -> None:
    """Collects the shards' outcomes as they end, until all have or `deadline` passes."""
    while True:
        pending = {s.run_ref: s for s in shards if s.outcome is None}
        if not pending:
            return
        timeout = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
        for ref in ready:
            s = pending[ref]
            try:
                reply = ray.get(ref)
                s.outcome = plan.ShardOutcome(index=s.index, **_where(s), **reply)
            except Exception as e:  # the actor or its node died, the task was cancelled
                s.outcome = plan.ShardOutcome(
                    index=s.index, error=f"its Ray actor failed: {_ray_error_text(e)}", **_where(s)
                )
            o = s.outcome
            ran = f" after {o.seconds:.1f} s" if o.seconds is not None else ""
            _say(f"shard {s.index}/{len(shards)} ended{ran}: {o.state()}", err)
        if deadline is not None and time.monotonic() >= deadline:
            return


def _finish(
    options: Options, shards: list[_Shard], start_at: float, strategy: str, interrupted: bool, err: TextIO
) -> int:
    """Writes the shards' files and the launch record, merges the results, judges the launch."""
    options.out.mkdir(parents=True, exist_ok=True)
    outcomes = [s.outcome for s in shards if s.outcome is not None]
    verdict = plan.judge(outcomes, options.shards, options.lead, interrupted)
    for s in shards:
        if s.outcome is None:
            continue
        if s.outcome.results is not None:
            (options.out / plan.results_name(s.index)).write_bytes(s.outcome.results)
        (options.out / plan.log_name(s.index)).write_text(plan.shard_log(["gadget", *s.argv], s.outcome))
    merged: str | None = None
    merge_status: int | None = None
    if verdict.collected:
        inputs = [str(options.out / plan.results_name(i)) for i in verdict.collected]
        merged_path = options.out / plan.MERGED_NAME
        _say(f"merging {len(inputs)} shard results into {merged_path}", err)
        merge_status = subprocess.run([str(options.gadget), "merge", *inputs, "-o", str(merged_path)]).returncode
        if merge_status == 0:
            merged = plan.MERGED_NAME
    record = {
        "address": options.address,
        "shards": options.shards,
        "placement": strategy,
        "start_at": start_at,
        "lead_seconds": options.lead,
        "config": str(options.config),
        "run_args": options.run_args,
        "files": [str(p) for p in options.files],
        "interrupted": interrupted,
        "merged": merged,
        "merge_exit_code": merge_status,
        "failures": verdict.failures,
        "shard_runs": [
            {
                "index": s.index,
                "command": ["gadget", *s.argv],
                "node_id": s.where.get("node_id"),
                "node_ip": s.where.get("node_ip"),
                "hostname": s.where.get("hostname"),
                "clock_offset_seconds": s.clock_offset,
                "exit_code": s.outcome.exit_code if s.outcome else None,
                "seconds": s.outcome.seconds if s.outcome else None,
                "results": plan.results_name(s.index) if s.outcome and s.outcome.results is not None else None,
                "log": plan.log_name(s.index) if s.outcome else None,
                "error": s.outcome.error if s.outcome else None,
            }
            for s in shards
        ],
    }
    (options.out / plan.LAUNCH_RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n")
    for failure in verdict.failures:
        _say(f"error: {failure}", err)
    collected = len(verdict.collected)
    if verdict.failures or interrupted:
        said = "interrupted: " if interrupted else ""
        said += f"{collected} of {options.shards} shards returned results"
        if merged:
            said += f", merged in {options.out / plan.MERGED_NAME} (marked partial)"
        _say(f"{said}; each shard's output is in {options.out}/shard-I.log", err)
    if merge_status not in (None, 0):
        _say(f"error: gadget merge failed (exit status {merge_status}); the shards' results are in {options.out}", err)
        return verdict.exit_code if verdict.exit_code != 0 else 1
    if verdict.exit_code == 0:
        _say(f"wrote {options.out}/merged.json, the shards' results and launch.json", err)
    return verdict.exit_code


def run(options: Options, err: TextIO = sys.stderr) -> int:
    """`launch`, with a LaunchError said on standard error and exit status 2."""
    try:
        return launch(options, err)
    except LaunchError as e:
        print(f"error: {e}", file=err, flush=True)
        return 2


__all__: Sequence[str] = ["LaunchError", "Options", "check_inputs", "import_ray", "launch", "run", "ship_by_value"]
