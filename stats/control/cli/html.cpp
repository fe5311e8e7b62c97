// `arenastat <pid> html [-o FILE] [report options]`: asks the target for
// `stats --html [options]` and writes the page to FILE (or stdout).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "control_request.hpp"
#include "quoted.hpp"
#include "write_open.hpp"

namespace arenastat::cli {

namespace {

// The file system of pipe(2)'s pipes (PIPEFS_MAGIC): not a FIFO someone named.
constexpr long pipefs_magic = 0x50495045;

constexpr std::array html_table{
    opt::spec{.name = "-o", .type = opt::kind::text, .value = "FILE",
              .help = "write the page to FILE and print its path (default: stdout)", .alias = "--output",
              .forms = opt::next_word},
};

// Opens FILE for the page: created (0644) or truncated, never through a
// symbolic link another user owns (trust rule 9): root writing into a
// directory others can write to would replace whatever a planted link points
// at. A link of root's or of the caller's (/dev/stdout) is followed. The CLI
// never waits to open a FIFO (one with no reader fails at once), and writes
// to no named FIFO of another user's, whose reader could stop reading and
// hold it forever. A pipe it was given (/dev/stdout in a pipeline, made by
// whoever ran it, e.g. the user who ran sudo) is written as stdout is.
int open_page_file(const std::string& file) {
  const files::write_open opened = files::open_to_write(file, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0644);
  if (opened.refused_link_owner) {
    throw failure{exit_refused, "html: refusing to write " + detail::quoted(file) + ": " +
                                    files::refused_link_reason(opened) + "; choose another FILE"};
  }
  if (opened.fd < 0) {
    // ENXIO also comes from a socket or a terminal: the hint only for a FIFO.
    const bool fifo = opened.error == ENXIO && files::names_fifo(file);
    throw failure{exit_output, "html: cannot write " + detail::quoted(file) + ": " + error_text(opened.error) +
                                   (fifo ? " (a FIFO with no reader: html -o does not wait for one)" : "")};
  }
  struct stat st {};
  struct statfs fs {};
  if (::fstat(opened.fd, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_uid != ::geteuid() &&
      ::fstatfs(opened.fd, &fs) == 0 && fs.f_type != pipefs_magic) {
    ::close(opened.fd);
    throw failure{exit_refused, "html: refusing to write " + detail::quoted(file) + ": it is a FIFO of uid " +
                                    std::to_string(st.st_uid) + ", whose reader could hold the CLI; choose another FILE"};
  }
  if (const int err = files::settle_nonblocking_open(opened.fd, /*refuse_pipes=*/false); err != 0) {
    ::close(opened.fd);
    throw failure{exit_output, "html: cannot write " + detail::quoted(file) + ": " + error_text(err)};
  }
  return opened.fd;
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
  if (err != 0) throw failure{exit_output, "html: cannot write " + detail::quoted(file) + ": " + error_text(err)};
}

}  // namespace

const opt::grammar& html_grammar() noexcept {
  static const opt::grammar g{.who = "html: ", .specs = html_table};
  return g;
}

// What html accepts: -o and the report options that are no output format.
const opt::grammar& html_and_report_grammar() {
  static const std::vector<opt::spec> specs = [] {
    std::vector<opt::spec> v(html_table.begin(), html_table.end());
    for (const opt::spec& s : opt::report_specs())
      if (s.group == 0) v.push_back(s);
    return v;
  }();
  static const opt::grammar g{.who = "html: ", .specs = specs};
  return g;
}

int run_html(const std::vector<std::string>& args, const ask_fn& ask) {
  std::string file, line = "stats --html";
  // Checked here, before connecting (a size's value is checked by the target).
  const opt::grammar& g = html_and_report_grammar();
  const opt::parsed p = parse_options(g, args, opt::operands::pass);
  for (const std::string_view w : p.operands) {
    if (w == "--html") continue;  // what html asks for anyway
    // A format option (the report table's format group) would clash with the
    // --html this command adds: say so in the user's words, not the request's.
    const std::string_view name = w.substr(0, w.find('='));
    for (const opt::spec& s : opt::report_specs())
      if (s.group != 0 && s.name == name && name != "--html")
        throw failure{exit_usage, "html: '" + std::string(name) +
                                      "' chooses another output format; html writes the page (its report options: -s, "
                                      "--sort, --top, -H)"};
    parse_options(g, {std::string(w)});  // anything else is unknown: says so, with what html takes
  }
  for (const opt::value& v : p.values) {
    if (v.option == &g.specs[0]) {
      file = v.text;  // -o
    } else {
      line += ' ';
      line += v.word;
    }
  }
  const wire::parse_result parsed = wire::parse_request(line);
  if (!parsed.value) throw failure{exit_usage, parsed.error};
  const std::string page = ask(line, {});
  if (file.empty()) {
    print_answer(page);  // the target's bytes: escaped on a terminal (trust rule 8)
  } else {
    write_page_file(file, page);
    print_answer(file + "\n");  // the path as given; escaped on a terminal (trust rule 8), as dump's
  }
  return exit_ok;
}

}  // namespace arenastat::cli
