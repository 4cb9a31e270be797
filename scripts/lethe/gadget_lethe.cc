// Gadget's hook into Lethe (SIGMOD'20, a RocksDB 6.12 fork): Lethe keeps its delete-persistence
// tuning in a process-wide singleton (`EmuEnv`) that its compaction code reads, and that its
// own experiment program fills in before opening a database. This file, linked into the
// library scripts/lethe/build.sh makes, lets Gadget do the same through a C function.
//
// Written for Gadget; it includes Lethe's header only to reach the singleton's fields.

#include <cstdint>
#include <iostream>
#include <streambuf>

#include "examples/__working_branch/emu_environment.h"

namespace {

// Swallows what is written to it: Lethe's research code writes diagnostics to std::cout (the
// data-movement policy once, every level's delete-persistence threshold whenever the tree
// grows a level), which would land in the middle of Gadget's own output (`--json` on stdout).
class Discard : public std::streambuf {
 protected:
  int overflow(int c) override { return c == traits_type::eof() ? 0 : c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

Discard discard;

// When the library is loaded (before Gadget's first database, the probe that reads the
// library's version, is opened): C++'s std::cout silenced, Lethe's diagnostics off, and the
// per-level thresholds that Lethe's constructor leaves uninitialised set to -1 ("none yet"),
// as Lethe's own program sets them. <iostream>, included above, sets std::cout up first.
const bool prepared = [] {
  std::cout.rdbuf(&discard);
  EmuEnv* env = EmuEnv::getInstance();
  env->verbosity = 0;
  env->show_progress = 0;
  // Lethe prints its data-movement policy until this flag is set
  env->version_set_FEF = true;
  for (int level = 0; level < 20; ++level) {
    env->level_delete_persistence_latency[level] = -1;
    env->RR_level_last_file_selected[level] = -1;
  }
  return true;
}();

}  // namespace

extern "C" {

// Sets Lethe's tuning for every database this process opens afterwards.
// - fade: nonzero for FADE (Lethe's `compaction_pri = 5`): files whose tombstones are older than
//   their level's share of the threshold get compacted first; zero leaves RocksDB's own
//   priority to the column family's `compaction_pri`.
// - delete_persistence_seconds: D_th, the time within which a delete must reach the last level.
// - size_ratio: the tree's size ratio (RocksDB's max_bytes_for_level_multiplier), by which
//   Lethe splits D_th among the levels.
// Returns 0, or -1 when an argument is out of range (nothing is changed then).
int gadget_lethe_configure(int fade, double delete_persistence_seconds, double size_ratio) {
  if (!(delete_persistence_seconds > 0) || !(size_ratio > 1)) {
    return -1;
  }
  EmuEnv* env = EmuEnv::getInstance();
  env->compaction_pri = fade ? 5 : 1;
  env->delete_persistence_latency = delete_persistence_seconds;
  env->size_ratio = size_ratio;
  return prepared ? 0 : -1;
}

}  // extern "C"
