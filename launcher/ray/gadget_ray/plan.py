"""The launch's pure parts: what each shard runs, when the shards start, how they are
placed, where their files go and what to make of how they ended.

Nothing here talks to Ray or starts a process, so all of it is tested without a cluster
(launcher/ray/tests/test_plan.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The merged results, in the output folder.
MERGED_NAME = "merged.json"
#: What the launch did: where each shard ran, how it ended, the start instant.
LAUNCH_RECORD_NAME = "launch.json"
#: The name the binary gets in each shard's folder on its node.
BINARY_NAME = "gadget"

#: `gadget run` flags the launcher sets itself, and why a user cannot give them.
RESERVED_FLAGS: dict[str, str] = {
    "--shard": "the launcher gives shard I its own --shard I/N",
    "--start-at": "the launcher agrees the start instant for all shards (set how far ahead with --lead)",
    "--output": "the launcher writes each shard's results to shard-I.json in --out",
    "-o": "the launcher writes each shard's results to shard-I.json in --out",
    "--csv": "only the results JSON comes back from the nodes; the time series is in it",
    "--hdr-log": "only the results JSON comes back from the nodes; its histograms are in it",
}

#: The message with which `gadget run` refuses a start that passed before it was ready.
LATE_START_MARK = "agree on a start further ahead"

#: The exit status of a `gadget` (and of a launch) that was interrupted.
INTERRUPTED_EXIT = 130

#: Placement strategies: one shard per node, or spread as well as the nodes allow.
STRICT_SPREAD = "STRICT_SPREAD"
SPREAD = "SPREAD"


class PlanError(ValueError):
    """A launch that cannot be made as asked; the message says what to give instead."""


def address_host_port(address: str) -> tuple[str, int] | None:
    """The host and port of a cluster address (`HOST:PORT`, `[V6]:PORT`, `ray://HOST:PORT`),
    to check that something listens there before Ray waits for it; None for `auto`, `local`
    and whatever else Ray itself resolves."""
    m = re.fullmatch(r"(?:ray://)?(\[[^\]]+\]|[^:/\[\]]+):(\d{1,5})", address.strip())
    if not m:
        return None
    host, port = m.group(1).strip("[]"), int(m.group(2))
    return (host, port) if 0 < port < 65536 else None


def results_name(index: int) -> str:
    """The results file of shard `index`, on its node and in the output folder."""
    return f"shard-{index}.json"


def log_name(index: int) -> str:
    """The file in the output folder with shard `index`'s command, standard output and error."""
    return f"shard-{index}.log"


def split_run_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Splits the launcher's arguments at the first `--`: the launcher's own, and the
    arguments every shard's `gadget run` gets."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def check_run_args(run_args: Sequence[str]) -> None:
    """Refuses `gadget run` arguments the launcher sets itself (`--shard`, `--start-at`,
    `-o`) or whose files would stay on the nodes (`--csv`, `--hdr-log`).

    Raises:
        PlanError: naming the flag and why.
    """
    for arg in run_args:
        name = arg.split("=", 1)[0]
        if name.startswith("-o") and not name.startswith("--"):
            name = "-o"  # -o FILE, -oFILE
        reason = RESERVED_FLAGS.get(name)
        if reason is not None:
            raise PlanError(f"{name} cannot be given to the shards: {reason}")


def shard_argv(
    index: int,
    count: int,
    config_name: str,
    start_at: str,
    run_args: Sequence[str],
) -> list[str]:
    """The arguments of shard `index`'s `gadget` (after the binary's own path), run in the
    shard's folder, where its config and shipped files are:
    `run CONFIG --shard I/N --start-at T -o shard-I.json [run args]`."""
    if not 0 <= index < count:
        raise PlanError(f"shard {index} is not one of {count} shards (0 to {count - 1})")
    return [
        "run",
        config_name,
        "--shard",
        f"{index}/{count}",
        "--start-at",
        start_at,
        "-o",
        results_name(index),
        *run_args,
    ]


def choose_start_at(now: float, lead: float) -> tuple[float, str]:
    """The start instant every shard is given: `lead` seconds after `now` (Unix seconds),
    to the millisecond; as a number and as the text `--start-at` takes.

    The lead has to cover starting each `gadget` process, opening its store and generating
    its first requests: a shard not ready by then fails with how late it was.
    """
    if not math.isfinite(lead) or lead <= 0:
        raise PlanError(f"--lead must be a positive number of seconds, not {lead}")
    at = round(now + lead, 3)
    return at, f"{at:.3f}"


def choose_placement(shards: int, node_cpus: Sequence[float], cpus_per_shard: float) -> str:
    """How to place `shards` shards on nodes with `node_cpus` CPUs each (the alive nodes):
    one per node (STRICT_SPREAD) when there are enough nodes with `cpus_per_shard` CPUs,
    else spread as evenly as Ray can (SPREAD, some nodes running several shards)."""
    if shards < 1:
        raise PlanError(f"--shards must be at least 1, not {shards}")
    if not math.isfinite(cpus_per_shard) or cpus_per_shard <= 0:
        raise PlanError(f"--cpus-per-shard must be a positive number of CPUs, not {cpus_per_shard}")
    fitting = sum(1 for cpus in node_cpus if cpus >= cpus_per_shard)
    return STRICT_SPREAD if shards <= fitting else SPREAD


def earlier_launch_files(folder: Path) -> list[str]:
    """The files of an earlier launch in `folder` (which a new one would mix with), sorted."""
    if not folder.is_dir():
        return []
    pattern = re.compile(r"^(shard-\d+\.(json|log)|merged\.json|launch\.json)$")
    return sorted(p.name for p in folder.iterdir() if pattern.match(p.name))


@dataclass
class ShardOutcome:
    """How one shard ended, as its node reported it (or as the launcher saw it end)."""

    index: int
    #: The Ray node it ran on, and that node's address and host name.
    node_id: str | None = None
    node_ip: str | None = None
    hostname: str | None = None
    #: `gadget run`'s exit status; None when it never ran or never reported.
    exit_code: int | None = None
    #: The results file's bytes, when the shard wrote one (a partial run writes one too).
    results: bytes | None = None
    stdout: str = ""
    stderr: str = ""
    #: Seconds `gadget run` took, from its start to its end.
    seconds: float | None = None
    #: What the launcher saw go wrong outside `gadget` (the node died, the shard was stopped).
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Whether this shard did not run to a successful end with its results."""
        return self.error is not None or self.exit_code != 0 or self.results is None

    @property
    def stopped(self) -> bool:
        """Whether `gadget` was stopped (Ctrl-C, SIGTERM: exit status 130) and still wrote
        its results so far, marked partial."""
        return self.error is None and self.exit_code == INTERRUPTED_EXIT and self.results is not None

    def state(self) -> str:
        """How it ended, in a few words."""
        if self.stopped:
            return "stopped, its results so far kept (partial)"
        if not self.failed:
            return "ok"
        if self.error is not None:
            return f"failed ({self.error})"
        return f"failed (exit status {self.exit_code})"


def error_lines(stderr: str, most: int = 5) -> list[str]:
    """The lines of a shard's standard error that say what went wrong: its `error:` lines,
    or else its last non-empty lines."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines)[-most:]


def describe_failure(outcome: ShardOutcome, count: int, lead: float) -> str:
    """One shard's failure in a sentence or two: which shard, where, and why."""
    where = ""
    if outcome.node_id:
        where = f" on node {outcome.node_id[:12]}"
        if outcome.node_ip:
            where += f" ({outcome.node_ip})"
    head = f"shard {outcome.index}/{count}{where}"
    if outcome.error is not None:
        text = f"{head}: {outcome.error}"
    elif outcome.exit_code is None:
        text = f"{head}: did not report how it ended"
    elif outcome.exit_code == 0:
        text = f"{head}: exited with status 0 but wrote no results ({results_name(outcome.index)})"
    else:
        said = "; ".join(error_lines(outcome.stderr)) or "nothing on standard error"
        text = f"{head}: gadget run exited with status {outcome.exit_code}: {said}"
    if LATE_START_MARK in outcome.stderr:
        text += f" (the shards were given {lead:g} s to get ready: raise --lead)"
    return text


@dataclass
class Verdict:
    """What a launch comes to: its exit status and the failures to report."""

    exit_code: int
    failures: list[str] = field(default_factory=list)
    #: The indexes of the shards whose results came back, in order.
    collected: list[int] = field(default_factory=list)


def judge(outcomes: Sequence[ShardOutcome], count: int, lead: float, interrupted: bool) -> Verdict:
    """Judges a launch by its shards' outcomes: 0 when every shard ran and returned its
    results; 130 when it was interrupted (Ctrl-C), whatever its shards did; else 1 when any
    shard failed or never reported. Shards missing from `outcomes` count as never reported;
    shards stopped by the interruption, their results kept, are no failures."""
    by_index = {o.index: o for o in outcomes}
    failures: list[str] = []
    collected: list[int] = []
    for index in range(count):
        outcome = by_index.get(index)
        if outcome is None:
            failures.append(f"shard {index}/{count}: did not report (the launch was stopped first)")
            continue
        if outcome.results is not None:
            collected.append(index)
        if outcome.failed and not (interrupted and outcome.stopped):
            failures.append(describe_failure(outcome, count, lead))
    if interrupted:
        code = 130
    elif failures:
        code = 1
    else:
        code = 0
    return Verdict(exit_code=code, failures=failures, collected=collected)


def shard_log(argv: Sequence[str], outcome: ShardOutcome) -> str:
    """The text of a shard's log file: its command, where it ran, how it ended, its output."""
    lines = [
        "$ " + " ".join(argv),
        f"node: {outcome.node_id} ({outcome.node_ip}, {outcome.hostname})",
        f"exit status: {outcome.exit_code}",
    ]
    if outcome.error is not None:
        lines.append(f"error: {outcome.error}")
    lines += ["--- standard output ---", outcome.stdout.rstrip(), "--- standard error ---", outcome.stderr.rstrip()]
    return "\n".join(lines) + "\n"
