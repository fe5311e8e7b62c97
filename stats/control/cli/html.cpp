// `arenastat <pid> html [-o FILE] [report options]`: asks the target for
// `stats --html [options]` and writes the page to FILE (or stdout).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "control_request.hpp"

namespace arenastat::cli {

int run_html(const std::vector<std::string>& args, const ask_fn& ask) {
  std::string file, line = "stats --html";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      if (i + 1 == args.size()) throw failure{exit_usage, "html: " + a + " needs a FILE"};
      file = args[++i];
    } else if (a.rfind("-o=", 0) == 0 || a.rfind("--output=", 0) == 0) {
      file = a.substr(a.find('=') + 1);
      if (file.empty()) throw failure{exit_usage, "html: " + a + " needs a FILE"};
    } else {
      line += " " + a;  // report options: the target checks them
    }
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
