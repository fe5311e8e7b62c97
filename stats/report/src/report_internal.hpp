// Shared pieces of the report room used by the control commands. Not installed.
#pragma once
#include "arenastat/report.hpp"
#include <optional>
#include <memory>
#include <vector>

#include "arenastat/leaks.hpp"
#include "arenastat/prometheus.hpp"
#include "json_writer.hpp"

namespace arenastat::detail {

// The process figures as one JSON object: {pid?, rss_bytes, hwm_bytes,
// rss_anon_bytes, jemalloc?: {allocated_bytes, active_bytes, resident_bytes,
// mapped_bytes}} (the report's "process" member and `process --json`).
void write_process_json(json_writer& w, const process_info& p, bool with_pid);

// The Prometheus exposition of the copy's entries, read one at a time
// (prometheus.cpp), and the table figures it shows.
table_figures table_figures_of(const table_copy& copy);

// "1 entry", "3 entries": a count and its noun, singular for one (every
// count printed for people).
std::string plural(std::size_t n, const char* one, const char* many);
std::string render_metrics(const table_copy& copy, const process_info& proc, const table_figures& table,
                           const metrics_options& options);
// The exposition of a whole copy at ARENASTAT_METRICS_DEPTH (stats
// --prometheus, the at-exit file), every sample labelled `program` when given.
std::string render_metrics_from_env(const table_copy& copy, const process_info& proc,
                                    std::optional<std::string> program_label = std::nullopt);

// The copy a report of `options` needs: the scope entries -s and --top let
// through, chosen on the locked table (every entry for --prometheus and --html).
table_copy copy_for(const report_options& options);

// The report of `copy` as a stream, with the at-exit leaks section when
// `leaks` is not empty (text: "Leaks (N):" lines; JSON: a "leaks" member).
report_stream stream_report(std::shared_ptr<const table_copy> copy, const process_info& proc,
                            const report_options& options, std::vector<leak> leaks);

}  // namespace arenastat::detail
