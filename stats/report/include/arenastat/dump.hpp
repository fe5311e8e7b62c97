// Summary dumps: a timestamped text file of every entry, sorted by size or by
// count with a TOTAL line first, so that two dumps taken before and after a
// load can be compared to find a leak (the live `diff` command does the same
// comparison inside the process).
//
// Written on request (`arenastat <pid> dump`, arenastat::write_dump) or on a
// signal: ARENASTAT_DUMP_SIGNAL=USR1|USR2 or install_dump_signal() (control.hpp). The
// signal handler only writes a byte to a pipe; a thread writes the file.
//
// File format (docs/cli.md):
//   TOTAL size=<bytes> count=<n> blocks=<n> entries=<k> pid=<pid> program=<name> time=<YYYY-mm-dd HH:MM:SS UTC> sort=size|count|blocks[ lost_folds=<n>]
//                   size            count           blocks                 peak  kind     name
//   <one line per entry, largest first>
// size:   account: live bytes;  scope: largest peak of any run; folded row: sum of its entries' peaks
// count, blocks, peak: entry_figures (report.hpp): count is allocations for an
//   account and runs for a scope or folded row, as in every report;
//   blocks an account's live blocks.
// Names and the program name are escaped (control characters, invalid UTF-8).
#pragma once
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/table.hpp"

namespace arenastat {

enum class dump_sort { size, count, blocks };

// What parse_dump_sort accepts, for messages.
inline constexpr std::string_view dump_sort_choices = "size, count or blocks";

// Parses "size", "count" or "blocks" (the one parser of ARENASTAT_DUMP_SORT).
// Throws std::invalid_argument: "dump sort '<text>': expected size, count or blocks".
dump_sort parse_dump_sort(std::string_view text);

// ARENASTAT_DUMP_SORT through parse_dump_sort, or dump_sort::size when unset
// or invalid (an invalid value is reported once at start-up, by the control hooks).
dump_sort dump_sort_from_env() noexcept;

struct dump_header {
  int pid = 0;
  std::string program;
  std::time_t time = 0;
  std::uint64_t lost_folds = 0;  // written only when non-zero
};

// The summary text of `entries` (pure; used by write_dump and tests).
std::string render_dump(const std::vector<entry>& entries, dump_sort sort, const dump_header& header);

// "arenastat.<pid>.<YYYYmmddHHMMSS>.txt", the time in UTC.
std::string dump_file_name(int pid, std::time_t time);

// Takes a snapshot and writes its summary. With an empty `path` the file is
// dump_file_name(getpid(), now) in $ARENASTAT_DUMP_DIR (default: the working
// directory), never overwriting an existing file (".1", ".2", ... is inserted
// before ".txt" instead); a given `path` is created or replaced, but never
// written through a symbolic link owned by another user: a link anywhere on
// the path (a directory of it, the file, a link inside a link's target) is
// followed only when owned by root or by this process's effective uid,
// stricter than fs.protected_symlinks (a process run as root must not write
// where a link planted in a shared directory points; docs/cli.md, trust rule 9).
// Returns the absolute path written. Throws std::system_error naming the
// path on failure.
std::string write_dump(std::string_view path = {},
                       std::optional<dump_sort> sort = std::nullopt);


}  // namespace arenastat
