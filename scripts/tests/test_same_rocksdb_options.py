"""scripts/same-rocksdb-options.py, the check that Gadget's and db_bench's databases ran with
the same options (BENCHMARKS.md, "RocksDB: Gadget against db_bench"), on OPTIONS files and
LOGs written here in RocksDB's own layout."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "same-rocksdb-options.py"
spec = importlib.util.spec_from_file_location("same_rocksdb_options", SCRIPT)
same = importlib.util.module_from_spec(spec)
spec.loader.exec_module(same)

OPTIONS = """# This is a RocksDB option file.
[Version]
  rocksdb_version=8.11.4

[DBOptions]
  max_background_jobs=2
  create_missing_column_families={missing}
  delayed_write_rate={rate}

[CFOptions "{family}"]
  write_buffer_size=67108864
  merge_operator={merge}

[TableOptions/BlockBasedTable "{family}"]
  block_size=4096
  pin_top_level_index_and_filter={pin}
"""

LOG = """2026/11/30-12:00:00.000000 1 [db/db_impl/db_impl.cc:1] Options.max_open_files: -1
    block_cache_options:
      capacity : 8388608
      num_shard_bits : 6
      strict_capacity_limit : 0
      memory_allocator : None
      high_pri_pool_ratio: {ratio}
      low_pri_pool_ratio: 0.000
"""


def database(folder, family="default", missing="false", rate="16777216", merge="nullptr",
             pin="true", ratio="0.000", older=None):
    """A database folder with an OPTIONS file (and, with `older`, an older one before it) and a
    LOG, of the given option values."""
    folder.mkdir()
    if older is not None:
        (folder / "OPTIONS-000005").write_text(older)
    (folder / "OPTIONS-000012").write_text(OPTIONS.format(
        family=family, missing=missing, rate=rate, merge=merge, pin=pin))
    (folder / "LOG").write_text(LOG.format(ratio=ratio))
    return folder


def run(a, fa, b, fb):
    return subprocess.run([sys.executable, str(SCRIPT), str(a), fa, str(b), fb],
                          capture_output=True, text=True)


def test_the_same_options_under_other_family_names_are_the_same_store(tmp_path):
    a = database(tmp_path / "db", family="default")
    b = database(tmp_path / "gdb", family="0:usertable")
    assert same.differences(a, "default", b, "0:usertable") == []
    done = run(a, "default", b, "0:usertable")
    assert done.returncode == 0, done.stderr
    assert "same options" in done.stdout


def test_an_option_that_differs_in_any_section_or_the_cache_fails_naming_it(tmp_path):
    a = database(tmp_path / "db")
    for name, changed in [("rate", {"rate": "8388608"}), ("pin", {"pin": "false"}),
                          ("ratio", {"ratio": "0.500"})]:
        b = database(tmp_path / f"gdb-{name}", **changed)
        found = same.differences(a, "default", b, "default")
        assert len(found) == 1 and found[0][4] is None, found
        done = run(a, "default", b, "default")
        assert done.returncode == 1
        assert "DIFFERENT" in done.stdout and "did not run the same store" in done.stderr
    kinds = {same.differences(a, "default", tmp_path / f"gdb-{n}", "default")[0][:2]
             for n in ["rate", "pin", "ratio"]}
    assert kinds == {("DBOptions", "delayed_write_rate"),
                     ("TableOptions/BlockBasedTable", "pin_top_level_index_and_filter"),
                     ("block cache", "high_pri_pool_ratio")}


def test_the_allowed_differences_pass_saying_why(tmp_path):
    a = database(tmp_path / "db")
    b = database(tmp_path / "gdb", missing="true", merge="gadget.flink_list_merge")
    found = same.differences(a, "default", b, "default")
    assert {f[1] for f in found} == {"create_missing_column_families", "merge_operator"}
    assert all(f[4] for f in found)
    done = run(a, "default", b, "default")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("allowed:") == 2


def test_the_newest_options_file_counts(tmp_path):
    stale = OPTIONS.format(family="default", missing="false", rate="1", merge="nullptr",
                           pin="true")
    a = database(tmp_path / "db", older=stale)
    b = database(tmp_path / "gdb")
    assert same.differences(a, "default", b, "default") == []


def test_a_family_that_is_not_there_or_no_options_file_is_an_error(tmp_path):
    a = database(tmp_path / "db")
    b = database(tmp_path / "gdb")
    with pytest.raises(SystemExit, match="CFOptions: no such section"):
        same.differences(a, "default", b, "usertable")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="no OPTIONS file"):
        same.differences(a, "default", empty, "default")
