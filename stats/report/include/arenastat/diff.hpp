// Baseline and diff: what changed between two snapshots of the table, like
// HotSpot NMT's `baseline` and `summary.diff`.
//
//   auto before = arenastat::snapshot();
//   ... run the suspect workload ...
//   std::cout << arenastat::render_diff(arenastat::diff_entries(before, arenastat::snapshot()),
//                                       arenastat::parse_report_options("-H"));
//
// Each entry is compared on four figures, those of entry_figures (report.hpp):
//   live    account: live bytes; scope, folded row: 0 (scopes are folded when they end)
//   peak    account: peak bytes; scope: largest peak of any run; folded row: largest folded peak
//   count   account: allocations made; scope, folded row: runs (as in the report)
//   blocks  account: live blocks (allocations - frees); scope, folded row: 0
// An entry only in the current snapshot is "new", only in the baseline "vanished".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "arenastat/report.hpp"
#include "arenastat/table.hpp"

namespace arenastat {

enum class diff_status { changed, unchanged, added, vanished };

struct diff_figure {
  std::int64_t before = 0;
  std::int64_t after = 0;
  std::int64_t change() const noexcept { return after - before; }
  bool operator==(const diff_figure&) const = default;
};

struct diff_entry {
  std::string name;
  entry_kind kind = entry_kind::scope;
  diff_status status = diff_status::unchanged;
  diff_figure live, peak, count, blocks;
};

// Every entry of either snapshot (matched by kind and name), unchanged ones
// included, ordered by kind then name.
std::vector<diff_entry> diff_entries(const std::vector<entry>& baseline,
                                     const std::vector<entry>& current);

// Describes the baseline in the rendered header ("" and 0: left out).
struct diff_source {
  std::string baseline_time;    // e.g. "2026-11-22 02:30:00 UTC"
  double baseline_age_s = 0;    // seconds since the baseline was taken
};

// Renders a diff with the report option grammar (report.hpp):
//   -s=SIZE  hide entries whose live and peak changes are both below SIZE
//   -H       human-readable sizes
//   --sort=peak (default: larger of |live change| and |peak change|),
//          live (|live change|), count (|count change|), name
//   --top=N  at most N entries;  --json  JSON (docs/cli.md), compact like the report's
// Unchanged entries are never listed, only counted. A TOTAL line sums every
// entry. Throws std::invalid_argument for --tree and --prometheus
// (check_diff_format).
std::string render_diff(const std::vector<diff_entry>& diff, const report_options& options,
                        const diff_source& source = {});

// Throws std::invalid_argument naming the option for a format the diff has no
// view in: --tree and --prometheus (text, --json and --html are its views).
void check_diff_format(const report_options& options);

}  // namespace arenastat
