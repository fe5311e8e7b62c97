// Reports over the table: text, tree and JSON, with one option grammar used by
// the API, the at-exit report and the CLI:
//   -s=SIZE   hide entries whose peak is below SIZE (suffix k, m, g)
//   -H        human-readable sizes
//   --sort=peak|count|name|live
//   --top=N   at most N entries
//   --json    JSON, schema version 1 (docs/report.md)
//   --tree    names split on '/' as a hierarchy with shares of parent and root
//   --prometheus  the Prometheus text exposition of every entry (prometheus.hpp)
//   --html    a self-contained HTML page with a map of the name tree (html.hpp)
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/table.hpp"

namespace arenastat {

enum class sort_key { peak, count, name, live };
enum class report_format { text, tree, json, prometheus, html };

struct report_options {
  std::uint64_t min_size = 0;
  bool human = false;
  sort_key sort = sort_key::peak;
  std::optional<std::size_t> top;
  report_format format = report_format::text;
};

// Parses whitespace-separated options. Throws std::invalid_argument whose
// message names the offending option and what is expected.
report_options parse_report_options(std::string_view options);

// Process-wide memory figures; a field is 0 when its source is unavailable.
struct process_info {
  int pid = 0;
  std::uint64_t rss_bytes = 0;   // VmRSS
  std::uint64_t hwm_bytes = 0;   // VmHWM
  std::uint64_t rss_anon_bytes = 0;
  bool jemalloc = false;         // jemalloc is the process allocator
  std::uint64_t je_allocated = 0, je_active = 0, je_resident = 0, je_mapped = 0;
};
process_info read_process_info();

// The figures every renderer (report, diff, dump) shows for an entry, derived
// here once. "count" is one thing everywhere: runs for a scope or a folded row,
// allocate calls for an account; "blocks" is an account's live blocks
// (allocations - frees; 0 for scopes and folded rows).
struct entry_figures {
  std::string_view name;
  entry_kind kind = entry_kind::scope;
  std::int64_t live = 0;        // account: live bytes; others 0 (scopes are folded when they end)
  std::uint64_t peak = 0;       // peak_bytes
  std::uint64_t count = 0;
  std::int64_t blocks = 0;
  const std::vector<tag_bytes>* tags = nullptr;          // breakdown at the peak
  const std::vector<counter_value>* counters = nullptr;  // scopes: counters at the peak
  std::string_view result;      // scopes: latest run
};
entry_figures figures_of(const entry& e) noexcept;

// Renders entries (already taken) with options. Pure: used by report() and
// tests. `table` is what the report says about the table itself (its cap,
// folded entries, lost folds).
std::string render_report(const std::vector<entry>& entries, const process_info& proc,
                          const report_options& options, const table_status& table = {});

// A report rendered a chunk at a time (docs/report.md, "What a query costs
// the target"): the table is copied in its compact form when the stream is
// made, and each next() renders about 64 KiB more, so the whole text is never
// held. What the control server sends and the at-exit report writes.
class report_stream {
 public:
  struct state;
  explicit report_stream(std::unique_ptr<state> s) noexcept;
  report_stream(report_stream&&) noexcept;
  report_stream& operator=(report_stream&&) noexcept;
  ~report_stream();

  // The next piece of the report, valid until the next call; false at the end.
  bool next(std::string_view& chunk);
  // Bytes the stream holds: the table copy and one chunk for text and JSON,
  // which render as they go; the whole text for the formats made whole first
  // (--tree, --html, prometheus). 0 once finished.
  std::size_t bytes_held() const noexcept;

 private:
  std::unique_ptr<state> s_;
};

// Copies the table and returns its report as a stream. Throws
// std::invalid_argument for a bad option string (before copying anything).
report_stream stream_report(std::string_view options = {});

// The whole report as one string (stream_report, concatenated).
std::string report(std::string_view options = {});

// Prints report(options) to stderr (or ARENASTAT_AT_EXIT_FILE) when the process
// exits. Validates options now (throws std::invalid_argument).
void print_at_exit(std::string_view options = {});

}  // namespace arenastat
