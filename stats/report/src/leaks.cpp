// Rendering leaks at exit: the report's `leaks` section (text and JSON) and
// the stderr lines printed when no report goes to stderr.
#include <nlohmann/json.hpp>

#include "leaks_section.hpp"

namespace arenastat::detail {

std::string with_leaks_section(std::string report, const std::vector<leak>& leaks, report_format format) {
  if (leaks.empty() || format == report_format::prometheus) return report;
  if (format != report_format::json) {
    report += "\nLeaks (" + std::to_string(leaks.size()) + "):\n";
    for (const leak& l : leaks) report += "  " + describe_leak(l) + "\n";
    return report;
  }
  using ojson = nlohmann::ordered_json;
  ojson array = ojson::array();
  for (const leak& l : leaks) {
    ojson j;
    if (l.kind == leak::source::account) {
      j["kind"] = "account";
      j["name"] = l.name;
      j["live_bytes"] = l.live_bytes;
      j["blocks"] = l.blocks;
      j["peak_bytes"] = l.peak_bytes;
      j["live_by_tag"] = ojson::object();
      for (const tag_bytes& t : l.live_by_tag) j["live_by_tag"][t.tag] = t.bytes;
    } else {
      j["kind"] = "arena_chunks";
      j["tag"] = l.tag;
      j["scope"] = l.name.empty() ? ojson(nullptr) : ojson(l.name);
      j["live_bytes"] = l.live_bytes;
      j["chunks"] = l.blocks;
    }
    array.push_back(std::move(j));
  }
  // The report is one object on one line, "{...}\n": the array goes in last.
  const auto close = report.rfind('}');
  if (close == std::string::npos) return report;
  report.insert(close, ",\"leaks\":" + array.dump(-1, ' ', false, ojson::error_handler_t::replace));
  return report;
}

std::string leak_lines_at_exit(const std::vector<leak>& leaks) {
  std::string out;
  for (const leak& l : leaks) out += "arenastat: leak at exit: " + describe_leak(l) + "\n";
  return out;
}

}  // namespace arenastat::detail
