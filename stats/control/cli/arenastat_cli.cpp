// arenastat: query a running process over its control socket (docs/cli.md).
//
//   arenastat                          list the processes that can be queried
//   arenastat <pid> <command> [args]   send one request, print the answer
//
// Exit status: 0 done, 1 the target answered with an error, 2 usage error,
// 3 the target cannot be reached. Deliberately not linked with the library,
// so ARENASTAT_* variables in the caller's environment do not affect it.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "control_request.hpp"

namespace {

constexpr int exit_ok = 0;
constexpr int exit_target_error = 1;
constexpr int exit_usage = 2;
constexpr int exit_unreachable = 3;

// Carries an exit status and the message printed for it.
struct failure {
  int status;
  std::string message;
};

std::string error_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::string socket_dir() {
  const char* env = std::getenv("ARENASTAT_SOCKET_DIR");
  if (env != nullptr && *env != '\0') {
    std::string dir = env;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  return "/tmp/arenastat-" + std::to_string(::geteuid());
}

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: arenastat [--timeout=MS] [<pid> <command> [arguments]]\n"
               "  arenastat                 list the processes you can query (pid, program)\n"
               "  arenastat <pid> help      list the commands of that process\n"
               "commands:\n");
  for (const arenastat::wire::command_info& c : arenastat::wire::commands()) {
    std::fprintf(to, "  %-9s %s\n", std::string(c.name).c_str(), std::string(c.arguments).c_str());
  }
  std::fprintf(to,
               "The socket is <dir>/<pid>.sock, <dir> = $ARENASTAT_SOCKET_DIR or /tmp/arenastat-<uid>.\n"
               "Exit status: 0 done, 1 the process answered with an error, 2 usage error,\n"
               "3 the process cannot be reached.\n");
}

std::string program_of(long pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/comm";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "?";
  char buf[64] = {};
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  std::string name = got ? buf : "?";
  if (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

bool process_gone(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// "<digits>.sock" -> pid, else nullopt.
std::optional<long> socket_pid(std::string_view name) {
  if (!name.ends_with(".sock")) return std::nullopt;
  name.remove_suffix(5);
  if (name.empty() || name.size() > 9) return std::nullopt;
  long pid = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  return pid > 0 ? std::optional<long>(pid) : std::nullopt;
}

int list_processes() {
  const std::string dir = socket_dir();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    std::fprintf(stderr, "arenastat: no queryable processes (%s: %s); start a program with ARENASTAT_CONTROL=1\n",
                 dir.c_str(), error_text(errno).c_str());
    return exit_ok;
  }
  std::vector<long> pids;
  while (const dirent* e = ::readdir(d)) {
    const std::optional<long> pid = socket_pid(e->d_name);
    if (!pid) continue;
    if (process_gone(*pid)) {
      const std::string path = dir + "/" + e->d_name;
      if (::unlink(path.c_str()) == 0) {
        std::fprintf(stderr, "arenastat: removed %s (process %ld no longer exists)\n", path.c_str(), *pid);
      }
      continue;
    }
    pids.push_back(*pid);
  }
  ::closedir(d);
  if (pids.empty()) {
    std::fprintf(stderr, "arenastat: no queryable processes in %s; start a program with ARENASTAT_CONTROL=1\n",
                 dir.c_str());
    return exit_ok;
  }
  std::sort(pids.begin(), pids.end());
  std::printf("%-8s %s\n", "PID", "PROGRAM");
  for (long pid : pids) std::printf("%-8ld %s\n", pid, program_of(pid).c_str());
  return exit_ok;
}

// The jcmd rule: only a socket we own (root may use any) with no group/other bits.
void check_socket(long pid, const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      throw failure{exit_unreachable,
                    "process " + std::to_string(pid) + " has no control socket at " + path +
                        ": start it with ARENASTAT_CONTROL=1 (or call arenastat::control::start()), with the "
                        "same ARENASTAT_SOCKET_DIR as this shell"};
    }
    throw failure{exit_unreachable, "cannot inspect " + path + ": " + error_text(errno)};
  }
  if (!S_ISSOCK(st.st_mode)) throw failure{exit_unreachable, path + " is not a socket; refusing to use it"};
  if (::geteuid() != 0 && st.st_uid != ::geteuid()) {
    throw failure{exit_unreachable, "refusing " + path + ": it is owned by uid " + std::to_string(st.st_uid) +
                                        ", not by you (uid " + std::to_string(::geteuid()) +
                                        "); run arenastat as that user"};
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw failure{exit_unreachable, "refusing " + path + ": mode " + mode +
                                        " is open to group or others (expected 0600); it is not secure"};
  }
}

using clock_type = std::chrono::steady_clock;

int remaining_ms(clock_type::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return static_cast<int>(std::max<long long>(left, 0));
}

// Sends `line` and returns everything the target answered before closing.
std::string exchange(long pid, const std::string& path, const std::string& line, int timeout_ms) {
  const std::string who = "process " + std::to_string(pid);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw failure{exit_unreachable, "socket(): " + error_text(errno)};
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } guard{fd};
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) {
    throw failure{exit_unreachable, "socket path " + path + " is too long; set a shorter ARENASTAT_SOCKET_DIR"};
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const int err = errno;
    if (err == ECONNREFUSED) {
      throw failure{exit_unreachable, "nobody listens at " + path + ": " + who +
                                          " has stopped its control server (or the socket is stale); restart it "
                                          "with ARENASTAT_CONTROL=1"};
    }
    if (err == EACCES || err == EPERM) {
      throw failure{exit_unreachable, "permission denied connecting to " + path + ": run arenastat as the user of " + who};
    }
    if (err == EAGAIN) throw failure{exit_unreachable, who + " is overloaded (connection queue full); try again"};
    throw failure{exit_unreachable, "cannot connect to " + path + ": " + error_text(err)};
  }
  const std::string request = line + "\n";
  std::size_t sent = 0;
  while (sent < request.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) == 0) break;
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
      throw failure{exit_unreachable, who + " closed the connection while we sent the request (" +
                                          error_text(errno) + "): it serves only its own user and root"};
    }
  }
  std::string answer;
  for (;;) {
    const int left = remaining_ms(deadline);
    pollfd p{fd, POLLIN, 0};
    const int r = left == 0 ? 0 : ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      throw failure{exit_unreachable, who + " did not answer within " + std::to_string(timeout_ms) +
                                          " ms (is it stopped or overloaded?); retry or raise --timeout=MS"};
    }
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      answer.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR && errno != EAGAIN) {
      if (answer.empty()) {
        throw failure{exit_unreachable, who + " reset the connection (" + error_text(errno) + ")"};
      }
      break;
    }
  }
  if (answer.empty()) {
    throw failure{exit_unreachable, who + " closed the connection without answering: it serves only its own user "
                                          "(and root); run arenastat as that user"};
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
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      print_usage(stdout);
      std::exit(exit_ok);
    }
    if (a.starts_with("--timeout=")) {
      const std::string value(a.substr(10));
      char* end = nullptr;
      errno = 0;
      const long ms = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0 || ms <= 0 || ms > 3'600'000) {
        throw failure{exit_usage, "--timeout=" + value + ": expected milliseconds between 1 and 3600000"};
      }
      inv.timeout_ms = static_cast<int>(ms);
      continue;
    }
    break;
  }
  for (; i < argc; ++i) inv.words.emplace_back(argv[i]);
  return inv;
}

long parse_pid(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw failure{exit_usage, "'" + text + "' is not a process id (expected a positive number; run 'arenastat' to list them)"};
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
    if (args.size() == 1) args[0] = absolute_path(args[0]);  // relative to this shell, not the target
  }
  std::string line(name);
  for (const std::string& a : args) line += " " + a;
  const arenastat::wire::parse_result parsed = arenastat::wire::parse_request(line);
  if (!parsed.value) throw failure{exit_usage, parsed.error};
  return line;
}

int query(const invocation& inv) {
  if (inv.words.size() < 2) {
    throw failure{exit_usage, "missing command after the pid; run 'arenastat " +
                                  (inv.words.empty() ? std::string("<pid>") : inv.words[0]) + " help'"};
  }
  const long pid = parse_pid(inv.words[0]);
  const std::string line = request_line(inv.words);
  if (process_gone(pid)) {
    throw failure{exit_unreachable, "no process with pid " + std::to_string(pid) +
                                        " (it has exited?); run 'arenastat' to list the processes you can query"};
  }
  const std::string path = socket_dir() + "/" + std::to_string(pid) + ".sock";
  check_socket(pid, path);
  const std::string answer = exchange(pid, path, line, inv.timeout_ms);
  const std::size_t eol = answer.find('\n');
  const std::string status = answer.substr(0, eol);
  const std::string body = eol == std::string::npos ? std::string() : answer.substr(eol + 1);
  if (status == "ok") {
    std::fwrite(body.data(), 1, body.size(), stdout);
    return exit_ok;
  }
  if (status.starts_with("error")) {
    std::string message = status.size() > 6 ? status.substr(6) : std::string("(no message)");
    if (message.starts_with("arenastat: ")) message.erase(0, 11);  // the pid prefix says who spoke
    std::fprintf(stderr, "arenastat: %ld: %s\n", pid, message.c_str());
    return exit_target_error;
  }
  throw failure{exit_unreachable, "process " + std::to_string(pid) + " answered something that is not an arenastat "
                                  "status line: '" + arenastat::wire::single_line(status.substr(0, 80)) + "'"};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const invocation inv = parse_arguments(argc, argv);
    if (inv.words.empty()) return list_processes();
    return query(inv);
  } catch (const failure& f) {
    std::fprintf(stderr, "arenastat: %s\n", f.message.c_str());
    if (f.status == exit_usage) std::fprintf(stderr, "(arenastat --help prints the usage)\n");
    return f.status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "arenastat: %s\n", e.what());
    return exit_unreachable;
  }
}
