// The report option grammar (report.hpp: parse_report_options), used by the
// API, the at-exit report, the control commands and the CLI. The options,
// their messages and help come from the table in options.cpp.
#include <stdexcept>
#include <string_view>

#include "arenastat/report.hpp"
#include "arenastat/size.hpp"
#include "options.hpp"

namespace arenastat {

report_options parse_report_options(std::string_view options) {
  const opt::grammar& g = opt::report_grammar();
  report_options o;
  for (const opt::value& v : opt::parse(g, options).values) {
    switch (opt::which<opt::report_spec>(g, v)) {
      case opt::report_spec::min_size:
        try {
          o.min_size = parse_size(v.text);
        } catch (const std::invalid_argument& e) {
          opt::fail(g, v.word, e.what());
        }
        break;
      case opt::report_spec::human: o.human = true; break;
      case opt::report_spec::sort: o.sort = static_cast<sort_key>(v.choice); break;  // in sort_key's order
      case opt::report_spec::top: o.top = static_cast<std::size_t>(v.number); break;
      case opt::report_spec::json: o.format = report_format::json; break;
      case opt::report_spec::tree: o.format = report_format::tree; break;
      case opt::report_spec::prometheus: o.format = report_format::prometheus; break;  // prometheus.cpp
      case opt::report_spec::html: o.format = report_format::html; break;
    }
  }
  return o;
}

}  // namespace arenastat
