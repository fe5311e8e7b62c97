// The report printed when the process exits: from code (print_at_exit) or from
// the environment (ARENASTAT_AT_EXIT, ARENASTAT_AT_EXIT_FILE).
//
// The exit handler is registered with std::atexit before any static object of
// the program is constructed (a constructor of priority 101: before every
// dynamic initialisation of default priority, the program's own globals
// included), whether or not a report is wanted, so that it runs after the
// destructors of every static object: scopes ending and tracked memory given
// back during static destruction are in the report and the leak check. Its
// state is never destroyed and the report goes out with write(2), so nothing
// it uses can have been torn down.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

#include "arenastat/prometheus.hpp"
#include "arenastat/report.hpp"
#include "arenastat/table.hpp"
#include "at_exit_env.hpp"
#include "env.hpp"
#include "leaks_internal.hpp"
#include "leaks_section.hpp"
#include "quoted.hpp"
#include "report_internal.hpp"
#include "sys.hpp"
#include "table_internal.hpp"
#include "write_open.hpp"

namespace arenastat {

namespace {

struct at_exit_state {
  std::mutex mu;
  bool armed = false;       // a report is wanted
  pid_t pid = 0;            // process that asked (a fork()ed child stays silent)
  report_options options;
  bool to_file = false;
  std::string file;         // ARENASTAT_AT_EXIT_FILE when armed
};

// Eternal: allocated once, never freed, usable during static destruction.
at_exit_state& state() {
  static at_exit_state* s = new at_exit_state;
  return *s;
}

using detail::write_all;

void write_stderr(const char* s) noexcept { write_all(2, s); }

// Whether `path` names something other than a regular file (a device such as
// /dev/stderr, a pipe, a symbolic link): written in place, as the text report
// is, not replaced by rename(2) as a .prom file is.
bool names_special_file(const std::string& path) noexcept {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

// Writes the report of `copy` to fd a chunk at a time. Returns 0, or the errno
// of the first write that failed (the rest is then not rendered).
int write_report(int fd, const std::shared_ptr<const table_copy>& copy, const process_info& proc, const report_options& options,
                 const std::vector<leak>& leaks) {
  report_stream s = detail::stream_report(copy, proc, options, leaks);
  std::string_view chunk;
  while (s.next(chunk))
    if (const int err = write_all(fd, chunk); err != 0) return err;
  return 0;
}

// Messages of parse_report_options start with "arenastat: "; drop it when the
// message is embedded in a line that already starts so.
std::string_view without_prefix(std::string_view msg) {
  constexpr std::string_view prefix = "arenastat: ";
  if (msg.substr(0, prefix.size()) == prefix) msg.remove_prefix(prefix.size());
  return msg;
}

// The leaks found at exit: one line each on stderr unless the report already
// carried them there; then, with ARENASTAT_LEAKS=abort, the end of the process.
void report_leaks(const std::vector<leak>& leaks, bool already_on_stderr) noexcept {
  if (leaks.empty()) return;
  if (!already_on_stderr) {
    try {
      write_all(2, detail::leak_lines_at_exit(leaks));
    } catch (...) {
      write_stderr("arenastat: leak: the leak report failed\n");
    }
  }
  if (leak_checking() == leak_mode::abort) detail::abort_for_leaks(leaks.size());
}

void print_report_at_exit() noexcept {
  at_exit_state& st = state();
  report_options options;
  std::string file;
  bool to_file = false;
  if (detail::table_locked_by_this_thread()) {
    // exit() from a signal handler that interrupted this thread while it
    // updated the table: the table cannot be read without waiting for itself.
    write_stderr("arenastat: the at-exit report and leak check are skipped: exit() was called while this "
                 "thread was updating the statistics table (from a signal handler?)\n");
    return;
  }
  // ARENASTAT_LEAKS (leaks.hpp): empty when off; later checks stay silent.
  const std::vector<leak> leaks = detail::leaks_at_exit();
  {
    std::lock_guard lock(st.mu);
    if (!st.armed || st.pid != ::getpid()) {
      report_leaks(leaks, false);
      return;
    }
    st.armed = false;  // once, whatever happens next
    options = st.options;
    to_file = st.to_file;
    file = st.file;
  }
  bool leaks_on_stderr = false;
  try {
    const auto copy = std::make_shared<const table_copy>(detail::copy_for(options));
    const process_info proc = read_process_info();
    if (to_file && options.format == report_format::prometheus && !names_special_file(file)) {
      // A .prom file for the textfile collector: never half written, and
      // labelled with the program (the files of several programs share a
      // directory there).
      const std::string text = detail::render_metrics_from_env(*copy, proc, detail::executable_name());
      try {
        write_file_atomically(file, text);
      } catch (const std::system_error& e) {
        // ELOOP: a link refused on the way (trust rule 9), which what() names
        // (made by write_file_atomically with its paths quoted: bounded, escaped).
        const int err = e.code().value();
        const std::string why = err == ELOOP ? std::string(e.what()) : std::string(std::strerror(err));
        write_all(2, "arenastat: cannot write the at-exit report to ARENASTAT_AT_EXIT_FILE " + detail::quoted(file) +
                         ": " + why + "; printing it to stderr\n");
        write_all(2, text);
      }
    } else {
      // Prometheus output gets no leaks section: the leak lines then go to stderr.
      const std::vector<leak> section = options.format == report_format::prometheus ? std::vector<leak>{} : leaks;
      int fd = 2;
      if (to_file) {
        // Never waits at exit for a FIFO's reader: with none, the open fails
        // (ENXIO); with one, the report is written to it as usual.
        // Never through a symbolic link another user owns (docs/cli.md, trust
        // rule 9: a program run as root must not replace what a link planted
        // in a shared directory points at).
        const files::write_open opened = files::open_to_write(file, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0666);
        fd = opened.fd;
        int err = fd < 0 ? opened.error : files::settle_nonblocking_open(fd, /*refuse_pipes=*/false);
        if (opened.refused_link_owner) {
          write_all(2, "arenastat: refusing to write ARENASTAT_AT_EXIT_FILE " + detail::quoted(file) + ": " +
                           files::refused_link_reason(opened) + "; printing the report to stderr\n");
          fd = 2;
        } else if (err != 0) {
          if (fd >= 0) ::close(fd);
          write_all(2, "arenastat: cannot open ARENASTAT_AT_EXIT_FILE " + detail::quoted(file) + ": " +
                           std::strerror(err) +
                           (err == ENXIO && files::names_fifo(file)
                                ? " (a FIFO with no reader: the report does not wait for one)"
                                : "") +
                           "; printing the report to stderr\n");
          fd = 2;
        }
      }
      int err = write_report(fd, copy, proc, options, section);
      if (fd != 2) {
        // A full disk may show only at close (NFS, quotas): both are checked.
        if (::close(fd) != 0 && err == 0) err = errno;
        if (err != 0) {
          write_all(2, "arenastat: cannot write the at-exit report to ARENASTAT_AT_EXIT_FILE " +
                           detail::quoted(file) + ": " + std::strerror(err) + "; printing it to stderr\n");
          write_report(2, copy, proc, options, section);  // rendered again from the same copy
          fd = 2;  // the report, with its leaks section, is on stderr after all
        }
      }
      leaks_on_stderr = fd == 2 && options.format != report_format::prometheus;
    }
  } catch (const std::exception& e) {
    write_stderr("arenastat: the at-exit report failed: ");
    write_stderr(e.what());
    write_stderr("\n");
  } catch (...) {
    write_stderr("arenastat: the at-exit report failed\n");
  }
  report_leaks(leaks, leaks_on_stderr);
}

// Registers the exit handler once. Throws std::runtime_error if atexit refuses.
void register_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::atexit(print_report_at_exit) != 0)
      throw std::runtime_error("arenastat: std::atexit refused the at-exit report");
  });
}

// The registration alone, first of all (see the top of this file). What the
// environment asks for is read later, by the start-up hook (autostart.cpp),
// once the library's own statics exist. A static library's object is linked
// when the program uses the library or names the start-up anchor.
[[gnu::constructor(101)]] void register_first() noexcept {
  try {
    register_handler();
  } catch (...) {  // reported by the start-up hook, which registers again
  }
}

// `use_file`: false when the options are not the ones asked for (a bad
// ARENASTAT_AT_EXIT): the file was meant for the report asked for (a .prom
// file for --prometheus), so the default report goes to stderr instead.
void arm(const report_options& options, bool use_file = true) {
  const char* file = use_file ? detail::env_value("ARENASTAT_AT_EXIT_FILE") : nullptr;
  at_exit_state& st = state();
  std::lock_guard lock(st.mu);
  st.armed = true;
  st.pid = ::getpid();
  st.options = options;
  st.to_file = file && *file;
  st.file = st.to_file ? file : "";
  // A relative path is taken from the working directory of now (start-up for
  // the environment), not of the exit: the program may chdir meanwhile.
  if (st.to_file) {
    try {
      st.file = detail::absolute_path(st.file, "ARENASTAT_AT_EXIT_FILE");
    } catch (const std::exception&) {  // no working directory: tried as given at exit
    }
  }
}

}  // namespace

void print_at_exit(std::string_view options) {
  const report_options parsed = parse_report_options(options);
  register_handler();
  arm(parsed);
}

namespace detail {

void start_at_exit_from_env() noexcept {
  (void)leak_checking();  // reads ARENASTAT_LEAKS now (a bad value warns at start-up)
  try {
    register_handler();
    const char* value = detail::env_value("ARENASTAT_AT_EXIT");
    if (!value || !*value || std::strcmp(value, "0") == 0) return;
    report_options options;  // "1": the defaults
    bool asked_for = true;
    if (std::strcmp(value, "1") != 0) {
      try {
        options = parse_report_options(value);
      } catch (const std::invalid_argument& e) {
        const char* file = detail::env_value("ARENASTAT_AT_EXIT_FILE");
        write_all(2, "arenastat: ignoring ARENASTAT_AT_EXIT=" + detail::quoted(value) + " (" +
                         detail::bounded(without_prefix(e.what())) + "); the default report will be printed at exit" +
                         (file && *file ? " to stderr (ARENASTAT_AT_EXIT_FILE " + detail::quoted(file) +
                                              " is left as it is: it was meant for the report asked for)"
                                        : std::string()) +
                         "\n");
        options = report_options{};
        asked_for = false;
      }
    }
    arm(options, asked_for);
  } catch (const std::exception& e) {
    write_stderr("arenastat: cannot set up the at-exit report: ");
    write_stderr(e.what());
    write_stderr("\n");
  } catch (...) {
    write_stderr("arenastat: cannot set up the at-exit report\n");
  }
}

}  // namespace detail

}  // namespace arenastat
