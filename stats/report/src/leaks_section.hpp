// The `leaks` section of the at-exit report and the at-exit leak lines
// (leaks.cpp). Not installed.
#pragma once
#include <string>
#include <vector>

#include "arenastat/leaks.hpp"
#include "arenastat/report.hpp"

namespace arenastat::detail {

// Appends the leaks to a rendered report: text and tree get a section
//   "\nLeaks (N):\n  <describe_leak>\n..."; JSON gets a "leaks" array in its object.
std::string with_leaks_section(std::string report, const std::vector<leak>& leaks, report_format format);

// One stderr line per leak: "arenastat: leak at exit: <describe_leak>\n".
std::string leak_lines_at_exit(const std::vector<leak>& leaks);

}  // namespace arenastat::detail
