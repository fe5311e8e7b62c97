// The `leaks` section of the at-exit report and the at-exit leak lines
// (leaks.cpp). Not installed.
#pragma once
#include <string>
#include <vector>

#include "arenastat/leaks.hpp"
#include "arenastat/report.hpp"
#include "json_writer.hpp"

namespace arenastat::detail {

// The report's leaks section: text and tree get
//   "\nLeaks (N):\n  <describe_leak>\n..." (nothing when there are none);
// JSON gets a "leaks" member holding this array.
void append_leaks_text(std::string& out, const std::vector<leak>& leaks);
void leaks_json(json_writer& w, const std::vector<leak>& leaks);
// The HTML page's: the text section's lines, HTML-escaped, in
// <pre id="arenastat-leaks"> before the page's </body>.
void append_leaks_html(std::string& page, const std::vector<leak>& leaks);

// One stderr line per leak: "arenastat: leak at exit: <describe_leak>\n".
std::string leak_lines_at_exit(const std::vector<leak>& leaks);

}  // namespace arenastat::detail
