// The HTML report: one self-contained page (no network) with an icicle of the
// name tree, for a report (report option --html) and for a diff (diff --html).
// docs/report.md, "HTML".
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/diff.hpp"
#include "arenastat/report.hpp"
#include "arenastat/table.hpp"

namespace arenastat {

// The page for a report: -s and --top choose the entries as for text and JSON
// (--top after the --sort order); -H does not apply (the page shows both forms).
std::string render_html(const std::vector<entry>& entries, const process_info& proc,
                        const report_options& options);

// The page for a diff: changed, new and vanished entries sized by their change,
// growing ones in one colour and shrinking ones in another.
std::string render_diff_html(const std::vector<diff_entry>& diff, const report_options& options,
                             const diff_source& source = {});

// JSON text made safe inside <script type="application/json">: '<', '>', '&',
// U+2028 and U+2029 become \u escapes (only ever inside strings, so the JSON is
// unchanged as data).
std::string json_for_script(std::string_view json);

}  // namespace arenastat
