// arenastat: query a running process over its control socket (docs/cli.md).
//
//   arenastat                          list the processes that can be queried
//   arenastat <pid> <command> [args]   send one request, print the answer
//
// Exit status (cli_failure.hpp): 0 done, 1 the target answered with an error,
// 2 usage error, 3 the target cannot be reached, 4 refused by a trust rule,
// 5 busy, 6 the answer could not be written. Deliberately not linked with the
// library, so ARENASTAT_* variables in the caller's environment (other than
// ARENASTAT_SOCKET_DIR) do not affect it. Trust rules: trust.hpp.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "cli_failure.hpp"
#include "control_request.hpp"
#include "quoted.hpp"
#include "socket_naming.hpp"
#include "terminal_text.hpp"
#include "trust.hpp"

namespace arenastat::cli {

opt::parsed parse_options(const opt::grammar& g, const std::vector<std::string>& args, opt::operands rest) {
  const std::vector<std::string_view> words(args.begin(), args.end());
  try {
    return opt::parse(g, words, rest);
  } catch (const opt::error& e) {
    throw failure{exit_usage, e.what()};
  }
}

void write_stdout(std::string_view text) {
  const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  if (std::fflush(stdout) != 0 || !written || std::ferror(stdout)) {
    throw failure{exit_output, "cannot write the answer to standard output: " + error_text(errno)};
  }
}

void print_answer(std::string_view body) {
  if (!::isatty(STDOUT_FILENO)) return write_stdout(body);
  // A piece at a time, not one copy of up to four times the answer (a 255 MiB
  // answer cost 1.3 GB on a terminal).
  escape_for_terminal_in_pieces(body, true, [](const std::string& piece) { write_stdout(piece); });
}

}  // namespace arenastat::cli

namespace {

using namespace arenastat::cli;
namespace naming = arenastat::naming;

// Largest answer the CLI reads; a longer one is refused (exit 4).
constexpr std::size_t max_answer_bytes = std::size_t{256} << 20;
// How long the CLI waits for the socket of a process started with
// ARENASTAT_CONTROL=1 to appear (at most --timeout).
constexpr int startup_wait_ms = 2000;

// The CLI's own options, before the pid.
enum class main_spec { timeout, help };
constexpr std::array main_table{
    arenastat::opt::spec{.name = "--timeout", .type = arenastat::opt::kind::count, .value = "MS",
                         .help = "bound the whole exchange (default 10000 ms)", .min = 1, .max = 3'600'000},
    arenastat::opt::spec{.name = "--help", .help = "print this usage", .alias = "-h"},
};
const arenastat::opt::grammar main_grammar{.who = "", .specs = main_table};

// The commands the CLI makes itself from the target's answers (html.cpp, top.cpp).
struct cli_command {
  std::string_view name;
  const arenastat::opt::grammar& grammar;
  std::string_view operands;  // after the options' synopsis
  std::string_view description;
};
std::array<cli_command, 2> cli_commands() {
  return {{{"html", html_grammar(), "[report options]", "the --html report, made by the CLI, to FILE or stdout"},
           {"top", top_grammar(), "", "a live view, made by the CLI from stats --json"}}};
}
std::string synopsis(const cli_command& c) {
  std::string out = arenastat::opt::synopsis(c.grammar.specs);
  if (!c.operands.empty()) {
    if (!out.empty()) out += ' ';
    out += c.operands;
  }
  return out;
}

void print_usage() {
  namespace opt = arenastat::opt;
  std::string out =
      "usage: arenastat [" + opt::usage(main_table[0]) + "] [<pid> <command> [arguments]]\n"
      "  arenastat                 list the processes you can query (pid, program)\n"
      "  arenastat <pid> help      list the commands of that process\n"
      "options:\n" + opt::help_text(main_table) + "commands:\n";
  char line[64];
  const auto command = [&](std::string_view name, const std::string& synopsis, std::string_view what) {
    std::snprintf(line, sizeof line, synopsis.empty() && what.empty() ? "  %s" : "  %-9s ", std::string(name).c_str());
    out += line;
    out += synopsis;
    if (!what.empty()) {
      out += "   ";
      out += what;
    }
    out += '\n';
  };
  for (const arenastat::wire::command_info& c : arenastat::wire::commands()) {
    command(c.name, arguments(c), c.description);
    out += opt::help_text(c.options, "              ");
  }
  for (const cli_command& c : cli_commands()) {
    command(c.name, synopsis(c), c.description);
    out += opt::help_text(c.grammar.specs, "              ");
  }
  out +=
      "The socket is <dir>/<pid>.sock, <dir> = $ARENASTAT_SOCKET_DIR or /tmp/arenastat-<uid>, <uid> the\n"
      "owner of the process; the directory and socket must belong to that uid and be closed to others.\n"
      "A process in its own pid or mount namespace (a container) is reached through /proc/<pid>/root,\n"
      "its socket named after its pid there, in the directory of its own environment.\n"
      "Exit status: 0 done, 1 the process answered with an error, 2 usage error,\n"
      "3 the process cannot be reached, 4 refused (a trust rule failed), 5 busy,\n"
      "6 the answer could not be written; top's view ended by a signal ends by that signal.\n";
  write_stdout(out);
}

// Writes a message built from bytes that may come from elsewhere.
void note(const std::string& message) {
  const std::string line = "arenastat: " + escape_for_terminal(message, false) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

int list_processes() {
  const uid_t me = ::geteuid();
  const std::string dir_path = naming::socket_dir(me);
  const std::optional<trusted_dir> dir = trusted_dir::open(dir_path, {me, "you (uid " + std::to_string(me) + ")"});
  if (!dir) {
    note("no queryable processes (" + shown_dir(dir_path) + ": " + error_text(ENOENT) +
         "); start a program with ARENASTAT_CONTROL=1");
    return exit_ok;
  }
  const int listing = ::openat(dir->fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = listing < 0 ? nullptr : ::fdopendir(listing);
  if (d == nullptr) throw failure{exit_unreachable, "cannot list " + dir->shown() + ": " + error_text(errno)};
  std::vector<long> pids;
  while (const dirent* e = ::readdir(d)) {
    const std::optional<long> pid = naming::pid_of_socket_name(e->d_name);
    if (!pid) continue;
    const std::string path = dir->shown_file(e->d_name);
    struct stat st {};
    if (::fstatat(dir->fd(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISSOCK(st.st_mode)) {
      note("ignoring " + path + ": it is not a socket");
      continue;
    }
    if (naming::process_gone(*pid)) {
      if (!naming::nobody_listens(dir->fd(), e->d_name)) {
        // A process of another pid namespace (its pid is another process, or
        // none, here) serves it: neither listed nor removed.
        note("not removing " + path + ": process " + std::to_string(*pid) +
             " does not exist here, but something listens on it (a process in another pid namespace?)");
      } else if (st.st_uid != me) {
        note("not removing " + path + " (process " + std::to_string(*pid) + " no longer exists): it is owned by uid " +
             std::to_string(st.st_uid));
      } else if (::unlinkat(dir->fd(), e->d_name, 0) == 0) {
        note("removed " + path + " (process " + std::to_string(*pid) + " no longer exists)");
      }
      continue;
    }
    pids.push_back(*pid);
  }
  ::closedir(d);
  if (pids.empty()) {
    note("no queryable processes in " + dir->shown() + "; start a program with ARENASTAT_CONTROL=1");
    return exit_ok;
  }
  std::sort(pids.begin(), pids.end());
  std::string out;
  char pid_column[32];
  std::snprintf(pid_column, sizeof pid_column, "%-8s ", "PID");
  out += std::string(pid_column) + "PROGRAM\n";
  for (long pid : pids) {
    std::snprintf(pid_column, sizeof pid_column, "%-8ld ", pid);
    out += std::string(pid_column) + escape_for_terminal(naming::program_of(pid), false) + "\n";
  }
  write_stdout(out);
  return exit_ok;
}

using clock_type = std::chrono::steady_clock;

int remaining_ms(clock_type::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return static_cast<int>(std::max<long long>(left, 0));
}

// The value of `name` in the environment `pid` was started with, when
// readable. Read in pieces, each entry kept only until its end: an
// environment of any size (Linux bounds it by a quarter of the stack limit)
// is searched whole, up to 256 MiB.
std::optional<std::string> start_environment(long pid, std::string_view name) {
  const std::string path = naming::live_proc_dir(pid) + "/environ";
  const fd_guard in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return std::nullopt;
  const std::string key = std::string(name) + "=";
  std::string entry;  // the entry read so far
  char buf[65536];
  std::size_t total = 0;
  for (ssize_t n; total < (std::size_t{256} << 20) && (n = ::read(in.fd, buf, sizeof buf)) > 0;) {
    total += static_cast<std::size_t>(n);
    for (std::string_view rest(buf, static_cast<std::size_t>(n)); !rest.empty();) {
      const std::size_t nul = rest.find('\0');
      entry.append(rest.substr(0, nul));
      if (nul == std::string_view::npos) break;
      if (entry.starts_with(key)) return entry.substr(key.size());
      entry.clear();
      rest.remove_prefix(nul + 1);
    }
  }
  if (entry.starts_with(key)) return entry.substr(key.size());  // a last entry without its NUL
  return std::nullopt;
}

// The socket directory `pid` chose in its start environment: its
// ARENASTAT_SOCKET_DIR without trailing slashes, nullopt without one. One its
// server refuses (relative, with '.' parts) is a failure (exit 3) naming it.
std::optional<std::string> their_socket_dir(long pid, const std::string& who) {
  const std::optional<std::string> set = start_environment(pid, "ARENASTAT_SOCKET_DIR");
  if (!set || set->empty()) return std::nullopt;
  std::string theirs = naming::without_trailing_slashes(*set);
  if (const std::string problem = naming::socket_dir_problem(theirs); !problem.empty()) {
    throw failure{exit_unreachable, who + " has no control socket: it was started with ARENASTAT_SOCKET_DIR=" +
                                        arenastat::detail::quoted(theirs) + ", which its server refuses (" + problem +
                                        "); restart it with an absolute directory, or without the variable"};
  }
  return theirs;
}

// Its server refuses a socket path longer than a Unix socket holds: a failure (exit 3).
void check_path_fits(const std::string& who, const std::string& dir, long pid_in_name, const std::string& shown) {
  if (naming::socket_path(dir, pid_in_name).size() > naming::max_socket_path()) {
    throw failure{exit_unreachable, who + " has no control socket: its path " + shown + " would be longer than " +
                                        std::to_string(naming::max_socket_path()) +
                                        " bytes (a Unix socket's limit), which its server refuses; restart it with a "
                                        "shorter ARENASTAT_SOCKET_DIR"};
  }
}

// The failure for a process that exited while the CLI looked for its socket.
failure exited(long pid) {
  return {exit_unreachable, "no process with pid " + std::to_string(pid) + " (it has exited)"};
}

// Tries `find` (a checked directory holding the socket, or nullopt) until it
// succeeds, `pid` is gone (a failure) or `wait_ms` have passed (nullopt).
std::optional<trusted_dir> wait_until_found(long pid, int wait_ms,
                                            const std::function<std::optional<trusted_dir>()>& find) {
  const auto until = clock_type::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    if (std::optional<trusted_dir> dir = find()) return dir;
    if (naming::process_gone(pid)) {
      throw exited(pid);
    }
    if (clock_type::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The failure for a socket still missing after waiting `wait_ms` for a
// process started to serve.
failure not_up(const std::string& who, const std::string& path, int wait_ms) {
  return {exit_unreachable, who + " has no control socket at " + path + " yet: it was started with "
                                "ARENASTAT_CONTROL=1 but its server is not up after " + std::to_string(wait_ms) +
                                " ms (still starting, or it failed to start: see its stderr); retry"};
}

bool started_to_serve(long pid) { return start_environment(pid, "ARENASTAT_CONTROL") == std::optional<std::string>("1"); }

// The socket of `pid` is missing: waits for it when the process was started
// to serve (its socket may not be up yet), else says how to start it.
// Returns the checked directory once the socket exists.
trusted_dir wait_for_socket(long pid, const std::string& dir_path, const expected_owner& owner, int timeout_ms) {
  const std::string path = shown_path(naming::socket_path(dir_path, pid));
  const std::string who = "process " + std::to_string(pid);
  if (::access((naming::live_proc_dir(pid) + "/environ").c_str(), R_OK) != 0 && !naming::process_gone(pid)) {
    // Its start environment would say why (not started to serve, another
    // directory, another mount namespace): only its owner or root may read it.
    throw failure{exit_unreachable, who + " has no control socket at " + path + ", and its environment, which would "
                                        "say why, cannot be read: run arenastat as " + owner.described + " or as root"};
  }
  if (!started_to_serve(pid)) {
    throw failure{exit_unreachable, who + " has no control socket at " + path +
                                        ": start it with ARENASTAT_CONTROL=1 (or call arenastat::control::start()), "
                                        "with the same ARENASTAT_SOCKET_DIR as this shell"};
  }
  if (const std::optional<std::string> theirs = their_socket_dir(pid, who)) {
    if (*theirs != dir_path) {
      throw failure{exit_unreachable, who + " has no control socket at " + path + ": it was started with "
                                          "ARENASTAT_SOCKET_DIR=" + arenastat::detail::quoted(*theirs) + "; set the same in this shell"};
    }
  } else if (const std::string standard = naming::default_socket_dir(owner.uid); standard != dir_path) {
    throw failure{exit_unreachable, who + " has no control socket at " + path + ": it was started without "
                                        "ARENASTAT_SOCKET_DIR, so its socket is in " + shown_path(standard) +
                                        "; unset ARENASTAT_SOCKET_DIR in this shell"};
  }
  check_path_fits(who, dir_path, pid, path);
  const int wait_ms = std::min(timeout_ms, startup_wait_ms);
  std::optional<trusted_dir> dir = wait_until_found(pid, wait_ms, [&]() -> std::optional<trusted_dir> {
    std::optional<trusted_dir> d = trusted_dir::open(dir_path, owner);
    if (d && check_socket(*d, naming::socket_name(pid), owner)) return d;
    return std::nullopt;
  });
  if (!dir) throw not_up(who, path, wait_ms);
  return std::move(*dir);
}

// The socket of `pid`, a process in a pid namespace below this one's (its
// pid there is `inner`: a container, `unshare --pid`) or only in a mount
// namespace of its own (inner: nullopt; systemd's PrivateTmp): named after
// its pid there, in the directory its own environment chose (its
// ARENASTAT_SOCKET_DIR, else /tmp/arenastat-<its uid there>), in its own
// mount namespace, reached through /proc/<pid>/root with every link confined
// to that root (trusted_dir::open_in_root). Waits for it as wait_for_socket
// does. Returns the checked directory; `name` gets the socket's name.
trusted_dir socket_in_its_root(long pid, std::optional<long> inner, const expected_owner& owner, int timeout_ms,
                               std::string& name) {
  const long named = inner.value_or(pid);
  const std::string who = "process " + std::to_string(pid) +
                          (inner ? " (pid " + std::to_string(*inner) + " in its own pid namespace)"
                                 : std::string(" (in its own mount namespace)"));
  const std::string root_shown = naming::live_proc_dir(pid) + "/root";
  const fd_guard root{::open(root_shown.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (root.fd < 0) {
    const int err = errno;
    if (naming::process_gone(pid)) throw exited(pid);
    if (err == EACCES || err == EPERM) {
      throw failure{exit_unreachable, "permission denied opening " + root_shown + ", where the socket of " + who +
                                          " is seen from here: run arenastat as root, or inside its container"};
    }
    throw failure{exit_unreachable, "cannot open " + root_shown + " (the root of " + who + "): " + error_text(err)};
  }
  std::string inside, origin;
  if (std::optional<std::string> theirs = their_socket_dir(pid, who)) {
    inside = std::move(*theirs);
    origin = " (its ARENASTAT_SOCKET_DIR)";
  } else {
    const std::optional<uid_t> uid = naming::uid_inside(pid, owner.uid);
    if (!uid) {
      throw failure{exit_unreachable, "cannot tell the uid of " + who + " in its user namespace (/proc/" +
                                          std::to_string(pid) + "/uid_map is unreadable or has no line for uid " +
                                          std::to_string(owner.uid) + ")"};
    }
    inside = naming::default_socket_dir(*uid);
  }
  name = naming::socket_name(named);
  const std::string path = shown_path(root_shown + naming::socket_path(inside, named)) + origin;
  check_path_fits(who, inside, named, path);
  const bool serves = started_to_serve(pid);
  const int wait_ms = serves ? std::min(timeout_ms, startup_wait_ms) : 0;
  std::optional<trusted_dir> dir = wait_until_found(pid, wait_ms, [&]() -> std::optional<trusted_dir> {
    std::optional<trusted_dir> d = trusted_dir::open_in_root(root.fd, root_shown, inside, origin, owner);
    if (d && check_socket(*d, name, owner)) return d;
    return std::nullopt;
  });
  if (dir) return std::move(*dir);
  if (!serves) {
    throw failure{exit_unreachable, who + " has no control socket at " + path +
                                        ": start it with ARENASTAT_CONTROL=1 (or call arenastat::control::start())"};
  }
  throw not_up(who, path, wait_ms);
}

// A process in another user namespace sees this CLI's uid through its
// uid_map; its server serves only its own uid and root as it sees them. When
// this CLI's uid is neither there (root on the host is nobody in a rootless
// container), it would be refused: say who may ask instead (exit 3).
void check_user_mapping(long pid, const expected_owner& owner, const std::string& who) {
  if (naming::same_namespace(pid, "user") != false) return;
  const std::optional<std::string> map = naming::uid_map_of(pid);
  if (!map) return;
  const uid_t me = ::geteuid();
  const std::optional<uid_t> mine = naming::uid_in_map(*map, me), theirs = naming::uid_in_map(*map, owner.uid);
  if (mine && (*mine == 0 || mine == theirs)) return;
  const std::string why = who + " is in a user namespace where you (uid " + std::to_string(me) + ") are " +
                          (mine ? "uid " + std::to_string(*mine) : std::string("no uid at all")) +
                          ", neither its root nor its owner, so its server would refuse you: ";
  // Its owner may ask from here only when it also owns the namespace (a
  // rootless container's root): reading /proc/<pid>/root and environ across
  // a user namespace takes its owner's capabilities there.
  if (naming::user_namespace_owner(pid) == owner.uid) throw failure{exit_unreachable, why + "run arenastat as " + owner.described};
  throw failure{exit_unreachable, why + "run arenastat inside its container (podman exec, docker exec, lxc exec), "
                                        "as its root or its owner there"};
}

// Throws `interrupted` when `watch` asks to stop.
void stop_if_asked(const interruption& watch) {
  if (watch.stop && watch.stop()) throw interrupted{};
}

// Waits until `fd` is ready for `events` (true) or `deadline` passes (false),
// asking `watch` whenever one of its descriptors is readable or a signal
// interrupts the wait, and calling its `idle` after each `idle_every` of it.
bool wait_ready(int fd, short events, clock_type::time_point deadline, const interruption& watch) {
  std::vector<pollfd> fds{{fd, events, 0}};
  for (const int w : watch.fds) fds.push_back({w, POLLIN, 0});
  const bool ticks = watch.idle && watch.idle_every.count() > 0;
  auto next_idle = clock_type::now() + watch.idle_every;
  for (;;) {
    const int left = remaining_ms(deadline);
    if (left == 0) return false;
    const int wait = ticks ? std::min(left, remaining_ms(next_idle)) : left;
    for (pollfd& p : fds) p.revents = 0;
    const int r = ::poll(fds.data(), fds.size(), wait);
    if (r < 0 && errno != EINTR) return true;  // let the caller's send or recv say what is wrong
    if (r < 0 || std::any_of(fds.begin() + 1, fds.end(), [](const pollfd& p) { return p.revents != 0; })) {
      stop_if_asked(watch);
    }
    if (r > 0 && fds[0].revents != 0) return true;
    if (ticks && clock_type::now() >= next_idle) {
      watch.idle();
      next_idle = clock_type::now() + watch.idle_every;
    }
  }
}

// Sends `line` on the connected `fd`; returns everything the target answered
// before closing, at most max_answer_bytes. `watch` may interrupt it.
std::string exchange(int fd, long pid, const std::string& line, int timeout_ms, clock_type::time_point deadline,
                     const interruption& watch) {
  const std::string who = "process " + std::to_string(pid);
  // One byte more after the line: the server leaves it unread, so if it
  // drops this client before the answer is complete (docs/cli.md: a client
  // that takes nothing for 2 s, or is not done within 10 s), the read below
  // fails with ECONNRESET instead of ending as a whole answer would.
  const std::string request = line + "\n\n";
  std::size_t sent = 0;
  while (sent < request.size()) {
    if (!wait_ready(fd, POLLOUT, deadline, watch)) break;
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
      break;  // closed early: the server may have said why (busy); read it
    }
  }
  std::string answer;
  for (;;) {
    if (!wait_ready(fd, POLLIN, deadline, watch)) throw no_answer_within(pid, timeout_ms);
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (answer.size() + static_cast<std::size_t>(n) > max_answer_bytes) {
        throw failure{exit_refused, who + " sent an answer longer than " + std::to_string(max_answer_bytes >> 20) +
                                        " MiB; refusing the rest (narrow the query, e.g. --top=N or -s=SIZE)"};
      }
      answer.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR && errno != EAGAIN) {
      if (answer.empty()) {
        throw failure{exit_unreachable, who + " reset the connection (" + error_text(errno) + ")"};
      }
      throw failure{exit_unreachable,
                    who + " dropped the connection after " + std::to_string(answer.size()) +
                        " bytes, before its answer was complete (" + error_text(errno) +
                        "; a server drops a client that takes nothing of its answer for 2 s or is not done "
                        "within 10 s, the slowest reader when its unsent answers pass their bound or when "
                        "another user needs a connection slot, and every client when it stops); nothing was "
                        "printed; retry"};
    }
  }
  if (answer.empty()) {
    throw failure{exit_unreachable, who + " closed the connection without answering (its control server may be "
                                          "stopping); retry"};
  }
  return answer;
}

std::string absolute_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) throw failure{exit_usage, "cannot read the working directory"};
  return std::string(cwd) + "/" + path;
}

struct invocation {
  int timeout_ms = 10000;
  std::vector<std::string> words;  // pid command args...
};

invocation parse_arguments(int argc, char** argv) {
  invocation inv;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const arenastat::opt::parsed p = parse_options(main_grammar, args, arenastat::opt::operands::stop);
  for (const arenastat::opt::value& v : p.values) {
    switch (arenastat::opt::which<main_spec>(main_grammar, v)) {
      case main_spec::timeout: inv.timeout_ms = static_cast<int>(v.number); break;
      case main_spec::help:
        print_usage();
        std::exit(exit_ok);
    }
  }
  inv.words.assign(p.operands.begin(), p.operands.end());
  return inv;
}

long parse_pid(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    throw failure{exit_usage, "'" + text + "' is not a process id (expected a positive number; run 'arenastat' to list them)"};
  }
  if (text.size() > 9) {  // Linux's largest pid_max is 4194304
    throw failure{exit_usage, "'" + text + "' is not a process id (too large: pids are at most 4194304 on Linux; run "
                              "'arenastat' to list them)"};
  }
  const long pid = std::strtol(text.c_str(), nullptr, 10);
  if (pid <= 0) throw failure{exit_usage, "'" + text + "' is not a process id (expected a positive number)"};
  return pid;
}

// Builds the request line; validates what the client can know locally.
std::string request_line(const std::vector<std::string>& words) {
  const std::string& name = words[1];
  const arenastat::wire::command_info* cmd = arenastat::wire::find_command(name);
  if (cmd == nullptr) {
    throw failure{exit_usage, "unknown command '" + name + "'; run 'arenastat <pid> help' or 'arenastat --help'"};
  }
  std::vector<std::string> args(words.begin() + 2, words.end());
  if (!cmd->takes_arguments && !args.empty()) {
    throw failure{exit_usage, "command '" + name + "' takes no arguments"};
  }
  if (cmd->cmd == arenastat::wire::command::dump) {
    if (args.size() > 1) throw failure{exit_usage, "dump takes at most one PATH"};
    // The request is one line of words: an empty path would be no path (the
    // default file) and blanks at either end would be trimmed away.
    if (args.size() == 1 && (args[0].empty() || std::isspace(static_cast<unsigned char>(args[0].front())) ||
                             std::isspace(static_cast<unsigned char>(args[0].back()))))
      throw failure{exit_usage, "dump: PATH " + escape_for_terminal("'" + args[0] + "'", false) +
                                    " is empty or starts or ends with a blank; give another or none (the default file)"};
    if (args.size() == 1) args[0] = absolute_path(args[0]);  // relative to this shell, not the target
  }
  std::string line(name);
  for (const std::string& a : args) line += " " + a;
  const arenastat::wire::parse_result parsed = arenastat::wire::parse_request(line);
  if (!parsed.value) throw failure{exit_usage, parsed.error};
  if (!cmd->options.empty()) {
    // The command's options, checked here with the target's table (a size's
    // value, which the library converts, is checked by the target).
    // The words as the target splits them.
    const std::string who = std::string(name) + ": ";
    std::vector<std::string> words;
    for (const std::string_view w : arenastat::opt::split_words(parsed.value->arguments)) words.emplace_back(w);
    parse_options(arenastat::opt::grammar{.who = who, .specs = cmd->options}, words);
  }
  return line;
}

std::string ask_target(long pid, const std::string& line, int timeout_ms, const interruption& watch);

}  // namespace

std::string arenastat::cli::cli_commands_help() {
  std::string out;
  for (const cli_command& c : cli_commands())
    out += arenastat::wire::help_entry(c.name, synopsis(c), c.description, c.grammar.specs);
  return out;
}

namespace {

// `inv.words` is not empty (main lists the processes when it is).
int query(const invocation& inv) {
  const long pid = parse_pid(inv.words[0]);  // a bad pid is named before a missing command
  if (inv.words.size() < 2) {
    throw failure{exit_usage, "missing command after the pid; run 'arenastat " + inv.words[0] + " help'"};
  }
  const std::vector<std::string> rest(inv.words.begin() + 2, inv.words.end());
  const ask_fn ask = [&](const std::string& line, const interruption& watch) {
    return ask_target(pid, line, inv.timeout_ms, watch);
  };
  if (inv.words[1] == "html") return run_html(rest, ask);  // views made by the CLI (html.cpp, top.cpp)
  if (inv.words[1] == "top") return run_top(pid, rest, ask);
  std::string answer = ask(request_line(inv.words), {});
  if (inv.words[1] == "help") answer += cli_commands_help();  // the target knows only its own commands
  print_answer(answer);
  return exit_ok;
}

// One request, under the trust rules (docs/cli.md): the body of an "ok"
// answer; throws failure otherwise.
std::string ask_target(long pid, const std::string& line, int timeout_ms, const interruption& watch) {
  const std::string who = "process " + std::to_string(pid);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  const std::optional<uid_t> uid = naming::process_uid(pid);
  if (!uid || naming::process_gone(pid)) {
    if (!naming::process_gone(pid)) {
      throw failure{exit_unreachable, "cannot find the owner of " + who + " (/proc/" + std::to_string(pid) + ": " +
                                          error_text(errno) + ")"};
    }
    throw failure{exit_unreachable, "no process with pid " + std::to_string(pid) +
                                        " (it has exited?); run 'arenastat' to list the processes you can query"};
  }
  if (const std::optional<long> group = naming::thread_group_of(pid); group && *group != pid) {
    throw failure{exit_unreachable, "pid " + std::to_string(pid) + " is a thread of process " + std::to_string(*group) +
                                        ", not a process: ask process " + std::to_string(*group)};
  }
  const expected_owner owner{*uid, "uid " + std::to_string(*uid) + " (the owner of " + who + ")"};
  check_user_mapping(pid, owner, who);
  std::string name;
  std::optional<trusted_dir> dir;
  const std::optional<long> inner = naming::innermost_pid(pid);
  const bool own_mounts = !inner && naming::same_namespace(pid, "mnt") == false;
  if (own_mounts) {  // its socket may still be in this namespace (a shared /tmp, options::socket_dir)
    name = naming::socket_name(pid);
    dir = trusted_dir::open(naming::socket_dir(*uid), owner);
    if (dir && !check_socket(*dir, name, owner)) dir.reset();
  }
  if (!dir && (inner || own_mounts)) {
    dir = socket_in_its_root(pid, inner, owner, timeout_ms, name);
  } else if (!dir) {
    const std::string dir_path = naming::socket_dir(*uid);
    name = naming::socket_name(pid);
    dir = trusted_dir::open(dir_path, owner);
    if (!dir || !check_socket(*dir, name, owner)) dir = wait_for_socket(pid, dir_path, owner, timeout_ms);
  }

  const int fd = connect_in(*dir, name, owner, pid, deadline, timeout_ms);
  const fd_guard guard{fd};
  check_peer(fd, dir->shown_file(name), pid, owner);
  std::string answer = exchange(fd, pid, line, timeout_ms, deadline, watch);

  const std::size_t eol = answer.find('\n');
  // A status line is short; what is kept of a long one is for messages only.
  const std::string status = answer.substr(0, std::min(eol, arenastat::wire::max_request_bytes + 16));
  if (eol == std::string::npos) {  // rule 7: a status line ends with its LF
    throw failure{exit_refused, who + " answered '" + status.substr(0, 80) +
                                    "' without the newline that ends a status line; refusing it"};
  }
  if (status == "ok") {
    answer.erase(0, eol + 1);  // in place: no second copy of a large answer
    return answer;
  }
  if (status.starts_with("error server busy: ")) {
    throw failure{exit_busy, who + " is busy: " + status.substr(19)};
  }
  if (status.starts_with("error")) {
    std::string message = status.size() > 6 ? status.substr(6) : std::string("(no message)");
    if (message.starts_with("arenastat: ")) message.erase(0, 11);  // the pid prefix says who spoke
    throw failure{exit_target_error, std::to_string(pid) + ": " + message.substr(0, arenastat::wire::max_request_bytes)};
  }
  throw failure{exit_refused, who + " answered something that is not an arenastat status line: '" +
                                  status.substr(0, 80) + "'"};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const invocation inv = parse_arguments(argc, argv);
    if (inv.words.empty()) return list_processes();
    return query(inv);
  } catch (const failure& f) {
    note(f.message);
    if (f.status == exit_usage) std::fprintf(stderr, "(arenastat --help prints the usage)\n");
    return f.status;
  } catch (const std::exception& e) {
    note(e.what());
    return exit_unreachable;
  }
}
