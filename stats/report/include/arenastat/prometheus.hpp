// The table as Prometheus metrics (docs/metrics.md): the text exposition
// format 0.0.4 and OpenMetrics 1.0.0, rendered from a snapshot by one renderer
// that serves every way out: the in-process HTTP endpoint (ARENASTAT_METRICS),
// `arenastat <pid> metrics`, and `.prom` files at exit or on the dump signal.
//
// Labels stay bounded: accounts are labelled by name (few, long-lived); scopes
// are grouped by the first `depth` parts of their name split on '/'
// (ARENASTAT_METRICS_DEPTH, default 1: "compile/Foo.bar" -> "compile"), the
// additive figures summed over a group and the peaks the group's maximum.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/report.hpp"
#include "arenastat/table.hpp"

namespace arenastat {

enum class metrics_format {
  text,         // text/plain; version=0.0.4
  openmetrics,  // application/openmetrics-text; version=1.0.0
};

struct metrics_options {
  unsigned depth = 1;  // parts of a scope name kept in its `scope` label (>= 1)
  metrics_format format = metrics_format::text;
  // Set for files read by node_exporter's textfile collector: every sample
  // then has pid="<n>" as its first label, so the files of several processes
  // in one directory never give one series twice (on /metrics, Prometheus
  // tells targets apart by their instance label).
  std::optional<std::uint64_t> pid_label = std::nullopt;
  // Set for the at-exit file (ARENASTAT_AT_EXIT_FILE): every sample has
  // program="<name>" as a first label (after pid when both are set), so the
  // files of programs with different names in one directory never give one
  // series twice.
  std::optional<std::string> program_label = std::nullopt;
};

// Figures about the table itself.
struct table_figures {
  std::uint64_t scope_entries = 0;
  std::uint64_t account_entries = 0;
  std::uint64_t folded_rows = 0;     // overflow rows (entries beyond the table's cap)
  std::uint64_t lost_folds = 0;      // scope runs that could not be stored (out of memory)
  std::uint64_t table_max = 0;       // the scope-entry cap, 0 for none (ARENASTAT_TABLE_MAX)
  std::uint64_t folded_entries = 0;  // scope entries folded into overflow rows since start
};

// Counts taken from `entries`, lost folds and overflow read from the table.
table_figures read_table_figures(const std::vector<entry>& entries);

// Largest accepted ARENASTAT_METRICS_DEPTH.
inline constexpr unsigned max_metrics_depth = 64;

// A depth written as a whole number in 1..max_metrics_depth (decimal digits
// only, leading zeros allowed: "05" is 5), else nullopt. The one reading of
// ARENASTAT_METRICS_DEPTH.
std::optional<unsigned> parse_metrics_depth(std::string_view text) noexcept;

// ARENASTAT_METRICS_DEPTH when parse_metrics_depth accepts it, else 1
// (a bad value is reported once at start-up, by the control hooks).
unsigned metrics_depth_from_env() noexcept;

// The `scope` label of a scope name: its first `depth` non-empty parts split on
// '/', joined by '/' ("compile//a/b", depth 2 -> "compile/a"; "" -> "").
std::string scope_group(std::string_view name, unsigned depth);

// A label value as the exposition formats want it: valid UTF-8, with
// '\' -> "\\", '"' -> "\"", LF -> "\n" (exactly the formats' escapes, so not
// the report's escape_text: text for people; the other escapers and why they
// differ: stats/core/src/text_escape.hpp). Injective, so distinct names never
// share a series: a name that is well-formed UTF-8 without U+FFFD is copied
// as it is; any other name has each invalid byte written as U+FFFD and its two
// lowercase hex digits ("bad\xff" -> "bad\uFFFDff") and each literal U+FFFD
// as U+FFFD U+FFFD. Copied values hold no U+FFFD and marked ones do, and a
// marked value decodes one way.
std::string escape_label_value(std::string_view value);

// The exposition of `entries` (pure: used by every entry point and the tests).
std::string render_metrics(const std::vector<entry>& entries, const process_info& proc,
                           const table_figures& table, const metrics_options& options);

// Snapshot + render, with the process figures and the table's own.
std::string metrics(const metrics_options& options);

// "text/plain; version=0.0.4; charset=utf-8" or
// "application/openmetrics-text; version=1.0.0; charset=utf-8".
std::string_view metrics_content_type(metrics_format format) noexcept;

// The format to answer an HTTP Accept header with (RFC 9110 12.5.1): each
// format's q-value is that of the most specific media range matching it
// (its type with more of its parameters, version and charset=utf-8, before
// fewer, then "type/*", then "*/*"; a range naming another version or charset
// does not match it, other parameters count for nothing, and a malformed
// element, such as a quoted q-value, is left out; quoted strings may hold ','
// and ';'). OpenMetrics when a range
// names its type ("application/openmetrics-text" or "application/*") and its
// q-value is above 0 and at least that of text/plain; the text format
// otherwise (no header, "*/*" alone, anything else).
metrics_format metrics_format_for_accept(std::string_view accept);

// Writes `text` to `path` atomically, as node_exporter's textfile collector
// needs: a new temporary file in the same directory
// (.<name>.tmp.<pid>.<16 random hex digits>, created with O_EXCL, so a
// temporary left by a killed run never blocks a later one), then rename(2)
// over `path`. The directory is reached as docs/cli.md's trust rule 9 says:
// a symbolic link on its path owned by another user than root or this
// process's effective uid is refused (std::system_error with ELOOP, whose
// what() names the link). Throws std::system_error naming the path on failure
// (the temporary is removed). After a write, temporaries of the same `path` left by
// writers killed mid-write are removed: named as above, regular files of this
// effective uid, last changed more than 10 minutes ago.
void write_file_atomically(const std::string& path, std::string_view text);

// An ARENASTAT_DUMP_FORMAT value: "text" (or empty) -> false, "prometheus"
// -> true, anything else nullopt. The one reading of the variable.
std::optional<bool> parse_dump_format(std::string_view value) noexcept;

// ARENASTAT_DUMP_FORMAT=prometheus: dumps on the signal are `.prom` files
// (a bad value means text; the control hooks warn about it at start-up).
bool prometheus_dump_from_env() noexcept;

// Writes metrics() (text format, ARENASTAT_METRICS_DEPTH, every sample with
// pid="<getpid()>") atomically to `path`; with an empty path to
// arenastat.<pid>.prom in $ARENASTAT_DUMP_DIR (default: the working
// directory), replaced on every dump. Returns the absolute path.
std::string write_metrics_file(std::string_view path = {});

}  // namespace arenastat
