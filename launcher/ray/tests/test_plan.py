"""The launcher's pure parts: arguments, start instant, placement, file names, verdicts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gadget_ray import plan
from gadget_ray.plan import PlanError, ShardOutcome


def test_the_run_args_are_what_follows_the_first_double_dash() -> None:
    assert plan.split_run_args(["--shards", "3", "w.toml"]) == (["--shards", "3", "w.toml"], [])
    assert plan.split_run_args(["w.toml", "--", "--store", "memory", "--", "x"]) == (
        ["w.toml"],
        ["--store", "memory", "--", "x"],
    )
    assert plan.split_run_args(["w.toml", "--"]) == (["w.toml"], [])


@pytest.mark.parametrize(
    "arg, flag",
    [
        (["--shard", "1/3"], "--shard"),
        (["--shard=1/3"], "--shard"),
        (["--start-at", "17"], "--start-at"),
        (["-o", "x.json"], "-o"),
        (["-ox.json"], "-o"),
        (["--output=x.json"], "--output"),
        (["--csv", "s.csv"], "--csv"),
        (["--hdr-log", "l.hlog"], "--hdr-log"),
    ],
)
def test_flags_the_launcher_sets_or_cannot_bring_back_are_refused(arg: list[str], flag: str) -> None:
    with pytest.raises(PlanError, match=f"^{flag} cannot be given to the shards: "):
        plan.check_run_args(["--store", "memory", *arg])


def test_ordinary_run_args_pass() -> None:
    plan.check_run_args(["--store", "rocksdb", "--rate", "1000", "-p", "recordcount=10", "--seed", "3", "--json"])


def test_each_shard_runs_its_own_part_from_the_agreed_start_into_its_own_file() -> None:
    assert plan.shard_argv(1, 3, "w.toml", "1764150000.250", ["--store", "memory"]) == [
        "run", "w.toml", "--shard", "1/3", "--start-at", "1764150000.250", "-o", "shard-1.json", "--store", "memory",
    ]  # fmt: skip
    with pytest.raises(PlanError, match="shard 3 is not one of 3 shards"):
        plan.shard_argv(3, 3, "w.toml", "1", [])


def test_the_start_is_the_lead_ahead_to_the_millisecond() -> None:
    at, text = plan.choose_start_at(1764150000.1234, 10)
    assert at == pytest.approx(1764150010.123)
    assert text == "1764150010.123"
    assert plan.choose_start_at(100.0, 0.5) == (100.5, "100.500")
    for bad in (0, -1, math.nan, math.inf):
        with pytest.raises(PlanError, match="--lead must be a positive number of seconds"):
            plan.choose_start_at(100.0, bad)


def test_one_shard_per_node_when_enough_nodes_fit_one_else_spread() -> None:
    assert plan.choose_placement(3, [1, 1, 1], 1) == plan.STRICT_SPREAD
    assert plan.choose_placement(2, [4, 1, 1], 2) == plan.SPREAD  # only one node has 2 CPUs
    assert plan.choose_placement(1, [4, 1, 1], 2) == plan.STRICT_SPREAD
    assert plan.choose_placement(4, [8, 8, 8], 1) == plan.SPREAD
    with pytest.raises(PlanError, match="--shards must be at least 1"):
        plan.choose_placement(0, [1], 1)
    with pytest.raises(PlanError, match="--cpus-per-shard"):
        plan.choose_placement(1, [1], 0)


def test_file_names_are_deterministic() -> None:
    assert [plan.results_name(i) for i in range(3)] == ["shard-0.json", "shard-1.json", "shard-2.json"]
    assert plan.log_name(11) == "shard-11.log"
    assert (plan.MERGED_NAME, plan.LAUNCH_RECORD_NAME) == ("merged.json", "launch.json")


def test_an_earlier_launchs_files_are_found_and_nothing_else(tmp_path: Path) -> None:
    assert plan.earlier_launch_files(tmp_path / "missing") == []
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "shard-a.json").write_text("")
    assert plan.earlier_launch_files(tmp_path) == []
    for name in ("shard-0.json", "shard-12.log", "merged.json", "launch.json"):
        (tmp_path / name).write_text("")
    assert plan.earlier_launch_files(tmp_path) == ["launch.json", "merged.json", "shard-0.json", "shard-12.log"]


def ok(index: int) -> ShardOutcome:
    return ShardOutcome(index=index, node_id=f"node{index}" * 4, node_ip="10.0.0.1", exit_code=0, results=b"{}")


def test_a_launch_whose_shards_all_returned_results_succeeds() -> None:
    v = plan.judge([ok(2), ok(0), ok(1)], 3, 10, interrupted=False)
    assert (v.exit_code, v.failures, v.collected) == (0, [], [0, 1, 2])


def test_a_failed_shard_fails_the_launch_with_its_message_and_the_others_are_still_collected() -> None:
    failed = ShardOutcome(
        index=1, node_id="abcdef0123456789", node_ip="10.0.0.2", exit_code=1,
        stderr="store memory, poisson\nerror: cannot open the store: disk full\n",
    )  # fmt: skip
    v = plan.judge([ok(0), failed, ok(2)], 3, 10, interrupted=False)
    assert v.exit_code == 1
    assert v.collected == [0, 2]
    assert v.failures == [
        "shard 1/3 on node abcdef012345 (10.0.0.2): gadget run exited with status 1: error: cannot open the store: disk full"
    ]


def test_a_shard_that_never_reported_or_whose_actor_died_is_a_failure() -> None:
    died = ShardOutcome(index=0, error="its Ray actor failed: the node died")
    v = plan.judge([died], 3, 10, interrupted=False)
    assert v.exit_code == 1
    assert v.collected == []
    assert v.failures == [
        "shard 0/3: its Ray actor failed: the node died",
        "shard 1/3: did not report (the launch was stopped first)",
        "shard 2/3: did not report (the launch was stopped first)",
    ]


def test_a_shard_with_status_0_but_no_results_is_a_failure() -> None:
    v = plan.judge([ShardOutcome(index=0, exit_code=0)], 1, 10, interrupted=False)
    assert v.failures == ["shard 0/1: exited with status 0 but wrote no results (shard-0.json)"]


def test_a_late_start_says_to_raise_the_lead() -> None:
    late = ShardOutcome(
        index=0, exit_code=1,
        stderr="error: the agreed start (--start-at) passed 36ms before the store was open ...; agree on a start further ahead\n",
    )  # fmt: skip
    (failure,) = plan.judge([late], 1, 2.5, interrupted=False).failures
    assert failure.endswith("(the shards were given 2.5 s to get ready: raise --lead)")


def test_an_interrupted_launch_exits_130_and_its_stopped_shards_are_no_failures() -> None:
    stopped = ShardOutcome(index=1, exit_code=130, results=b"{}")
    assert stopped.stopped and stopped.failed
    v = plan.judge([ok(0), stopped], 3, 10, interrupted=True)
    assert v.exit_code == 130
    assert v.collected == [0, 1]
    assert v.failures == ["shard 2/3: did not report (the launch was stopped first)"]
    # not interrupted by the launcher: a shard stopped on its node (SIGTERM there) failed
    assert plan.judge([stopped], 1, 10, interrupted=False).exit_code == 1


def test_the_error_lines_of_a_shard_are_its_error_lines_else_its_last_lines() -> None:
    assert plan.error_lines("a\nerror: x\nb\nerror: y\n") == ["error: x", "error: y"]
    assert plan.error_lines("1\n2\n\n3\n4\n5\n6\n", most=3) == ["4", "5", "6"]
    assert plan.error_lines("") == []


def test_the_states_of_a_shard_in_words() -> None:
    assert ok(0).state() == "ok"
    assert ShardOutcome(index=0, exit_code=130, results=b"{}").state() == "stopped, its results so far kept (partial)"
    assert ShardOutcome(index=0, exit_code=2).state() == "failed (exit status 2)"
    assert ShardOutcome(index=0, error="gone").state() == "failed (gone)"


def test_a_shards_log_has_its_command_node_status_and_output() -> None:
    o = ShardOutcome(
        index=0, node_id="n", node_ip="1.2.3.4", hostname="h", exit_code=0, stdout="table\n", stderr="warning\n"
    )
    text = plan.shard_log(["gadget", "run", "w.toml"], o)
    assert text.splitlines() == [
        "$ gadget run w.toml",
        "node: n (1.2.3.4, h)",
        "exit status: 0",
        "--- standard output ---",
        "table",
        "--- standard error ---",
        "warning",
    ]


def test_the_host_and_port_of_an_address_are_checked_before_ray_waits_for_them() -> None:
    assert plan.address_host_port("10.0.0.1:6379") == ("10.0.0.1", 6379)
    assert plan.address_host_port("head.example:6379") == ("head.example", 6379)
    assert plan.address_host_port("[::1]:6379") == ("::1", 6379)
    assert plan.address_host_port("ray://10.0.0.1:10001") == ("10.0.0.1", 10001)
    for left_to_ray in ("auto", "local", "10.0.0.1", "10.0.0.1:0", "10.0.0.1:99999", "a:b:c"):
        assert plan.address_host_port(left_to_ray) is None, left_to_ray
