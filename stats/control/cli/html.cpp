// `arenastat <pid> html [-o FILE] [report options]`: asks the target for
// `stats --html [options]` and writes the page to FILE (or stdout).
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "control_request.hpp"

namespace arenastat::cli {

namespace {

constexpr std::array html_table{
    opt::spec{.name = "-o", .type = opt::kind::text, .value = "FILE",
              .help = "write the page to FILE and print its path (default: stdout)", .alias = "--output",
              .forms = opt::next_word},
};

}  // namespace

const opt::grammar& html_grammar() noexcept {
  static const opt::grammar g{.who = "html: ", .specs = html_table};
  return g;
}

int run_html(const std::vector<std::string>& args, const ask_fn& ask) {
  std::string file, line = "stats --html";
  // Other words are report options: the target checks them.
  const opt::parsed p = parse_options(html_grammar(), args, opt::operands::pass);
  for (const opt::value& v : p.values) file = v.text;  // -o, the only option
  for (const std::string_view w : p.operands) {
    // A format option (the report table's format group) would clash with the
    // --html this command adds: say so in the user's words, not the request's.
    const std::string_view name = w.substr(0, w.find('='));
    for (const opt::spec& s : opt::report_specs())
      if (s.group != 0 && s.name == name && name != "--html")
        throw failure{exit_usage, "html: '" + std::string(name) +
                                      "' chooses another output format; html writes the page (its report options: -s, "
                                      "--sort, --top, -H)"};
    line += ' ';
    line += w;
  }
  const wire::parse_result parsed = wire::parse_request(line);
  if (!parsed.value) throw failure{exit_usage, parsed.error};
  const std::string page = ask(line);
  if (file.empty()) {
    std::fwrite(page.data(), 1, page.size(), stdout);
    return exit_ok;
  }
  std::FILE* f = std::fopen(file.c_str(), "wb");
  if (f == nullptr) throw failure{exit_usage, "html: cannot write " + file + ": " + std::strerror(errno)};
  const bool ok = std::fwrite(page.data(), 1, page.size(), f) == page.size();
  if (std::fclose(f) != 0 || !ok) throw failure{exit_usage, "html: writing " + file + " failed"};
  std::printf("%s\n", file.c_str());
  return exit_ok;
}

}  // namespace arenastat::cli
