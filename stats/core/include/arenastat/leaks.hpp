// Leak reports: bytes an account still holds when its last resource is
// destroyed or at exit, and arena chunks still held at exit, per tag and scope.
//
// Driven by ARENASTAT_LEAKS (read once, at start-up):
//   off (default, also unset or empty)  nothing is checked or recorded
//   warn   each leak is reported on stderr, the program runs on
//   abort  the same, then the process aborts (non-zero exit) so a CI run fails
// At exit the report is one line per leak on stderr, or a `leaks` section of
// the at-exit report (ARENASTAT_AT_EXIT) when that goes to stderr. See
// docs/report.md for the exact lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "arenastat/account.hpp"

namespace arenastat {

enum class leak_mode { off, warn, abort };

// ARENASTAT_LEAKS as read at the first call (the library's start-up makes it).
// A bad value prints one warning line and means off.
leak_mode leak_checking() noexcept;

// One outstanding leak.
struct leak {
  enum class source { account, arena_chunks };
  source kind = source::account;
  std::string name;              // the account; arena chunks: the scope ("" = outside any scope)
  std::string tag;               // arena chunks: their tag
  std::int64_t live_bytes = 0;
  std::int64_t blocks = 0;       // account: allocations - frees; arena chunks: chunks held
  std::uint64_t peak_bytes = 0;  // account: its peak
  std::vector<tag_bytes> live_by_tag;  // account: live bytes per tag
};

// What is outstanding now: accounts with live bytes (but not one already
// reported when its last resource went and not fed since), in name order;
// then, when ARENASTAT_LEAKS is on, arena chunks held, by tag then scope name.
std::vector<leak> outstanding_leaks();

// "account 'cache' holds 200 bytes in 2 blocks (peak 300 bytes; heap 200)",
// "arena chunks of tag 'node' taken in scope 'parse' hold 4096 bytes in 1 chunk".
std::string describe_leak(const leak& l);

}  // namespace arenastat
