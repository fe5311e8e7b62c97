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

// The page for a report: its data is the --json report of the same entries and
// options (-s, --sort, --top as there; -H does not apply: the page shows both
// forms), overflow rows included.
std::string render_html(const std::vector<entry>& entries, const process_info& proc,
                        const report_options& options, const table_status& table = {});

// The page for a diff (its data is the diff's --json): changed, new and vanished
// entries sized by their change, growing ones in one colour, shrinking ones in another.
std::string render_diff_html(const std::vector<diff_entry>& diff, const report_options& options,
                             const diff_source& source = {});

// JSON text made safe inside <script type="application/json">: '<', '>', '&',
// U+2028 and U+2029 become \u escapes (only ever inside strings, so the JSON is
// unchanged as data).
std::string json_for_script(std::string_view json);

}  // namespace arenastat
