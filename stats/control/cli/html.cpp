// `arenastat <pid> html [-o FILE] [report options]`: asks the target for
// `stats --html [options]` and writes the page to FILE (or stdout).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
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

// Opens FILE for the page: created (0644) or truncated, never through a
// symbolic link (trust rule 9): root writing into a directory others can
// write to would replace whatever a planted link points at.
int open_page_file(const std::string& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) return fd;
  const int err = errno;
  struct stat st {};
  if (err == ELOOP && ::lstat(file.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    throw failure{exit_refused, "html: refusing to write " + file +
                                    ": it is a symbolic link (arenastat never writes through one); remove it or "
                                    "choose another FILE"};
  }
  throw failure{exit_output, "html: cannot write " + file + ": " + error_text(err)};
}

// Writes the whole page to FILE; a failed write or close is exit_output.
void write_page_file(const std::string& file, const std::string& page) {
  const int fd = open_page_file(file);
  std::size_t done = 0;
  int err = 0;
  while (done < page.size() && err == 0) {
    const ssize_t n = ::write(fd, page.data() + done, page.size() - done);
    if (n > 0) done += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EINTR) err = errno;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) throw failure{exit_output, "html: cannot write " + file + ": " + error_text(err)};
}

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
  const std::string page = ask(line, {});
  if (file.empty()) {
    print_answer(page);  // the target's bytes: escaped on a terminal (trust rule 8)
  } else {
    write_page_file(file, page);
    write_stdout(file + "\n");
  }
  return exit_ok;
}

}  // namespace arenastat::cli
