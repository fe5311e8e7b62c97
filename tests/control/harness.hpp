// Process and socket helpers for the control tests: temporary directories,
// the control_target program, the real `arenastat` CLI, raw socket clients.
#pragma once
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace control_test {

using namespace std::chrono_literals;

inline const std::string cli_path = ARENASTAT_TEST_CLI;
inline const std::string target_path = ARENASTAT_TEST_TARGET;
inline const std::string fake_server_path = ARENASTAT_TEST_FAKE_SERVER;

// A fresh 0700 directory under /tmp, removed with its contents.
class temp_dir {
 public:
  temp_dir() {
    char name[] = "/tmp/arenastat-test-XXXXXX";
    if (::mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = name;
  }
  ~temp_dir() {
    ::nftw(
        path_.c_str(), [](const char* p, const struct stat*, int, FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

using env_map = std::map<std::string, std::string>;

// environ with `overrides` applied; an empty value removes the variable.
inline std::vector<std::string> make_env(const env_map& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (overrides.count(key) == 0 && key.rfind("ARENASTAT_", 0) != 0) out.push_back(kv);
  }
  for (const auto& [k, v] : overrides) {
    if (!v.empty()) out.push_back(k + "=" + v);
  }
  return out;
}

struct spawned {
  pid_t pid = -1;
  int in = -1;   // child's stdin (write end)
  int out = -1;  // child's stdout (read end)
  int err = -1;  // child's stderr (read end)
};

// posix_spawn of `program` with `args` and exactly the environment `env`,
// its descriptors set up by `fa` (destroyed here). Returns posix_spawn's code.
inline int spawn_with(pid_t& pid, posix_spawn_file_actions_t& fa, const std::string& program,
                      const std::vector<std::string>& args, const env_map& env) {
  std::vector<std::string> argv_s{program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = make_env(env);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = ::posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&fa);
  return rc;
}

inline spawned spawn(const std::string& program, const std::vector<std::string>& args, const env_map& env,
                     const std::string& cwd = {}) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  if (!cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid = -1;
  const int rc = spawn_with(pid, fa, program, args, env);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn " + program + ": " + std::strerror(rc));
  return {pid, in[1], out[0], err[0]};
}

// Reads one line from `fd` within `limit` ("" on time-out or EOF).
inline std::string read_line(int fd, std::chrono::milliseconds limit = 10s) {
  std::string line;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char c;
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return line;
    if (c == '\n') return line;
    line.push_back(c);
  }
  return line;
}

// Everything `fd` delivers until EOF or `limit`.
inline std::string read_all(int fd, std::chrono::milliseconds limit = 10s) {
  std::string all;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    all.append(buf, static_cast<std::size_t>(n));
  }
  return all;
}

// Waits for `pid` up to `limit`; returns its exit status, or -1 if it did not exit.
inline int wait_exit(pid_t pid, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(5ms);
  }
}

// The control_target program run with `env` until it exits by itself (its
// stdin closed once it is ready): its exit status (-1: not within `limit`)
// and what it wrote on stderr (the at-exit report and its messages).
struct exited {
  int status = -1;
  std::string err;
};
inline exited run_target_to_exit(const env_map& env, std::chrono::milliseconds limit = 5s) {
  const spawned p = spawn(target_path, {}, env);
  REQUIRE(read_line(p.out).rfind("ready ", 0) == 0);
  ::close(p.in);
  exited e;
  e.status = wait_exit(p.pid, limit);
  e.err = read_all(p.err, 1s);
  ::close(p.out);
  ::close(p.err);
  return e;
}

// The control_target program with its own socket directory.
class target {
 public:
  // `program`: the path run (a link to control_target gives it another name).
  explicit target(const std::string& socket_dir, env_map extra = {}, const std::string& cwd = {},
                  const std::string& program = target_path) {
    extra.emplace("ARENASTAT_CONTROL", "1");
    extra.emplace("ARENASTAT_SOCKET_DIR", socket_dir);
    p_ = spawn(program, {}, extra, cwd);
    wait_ready();
  }
  // control_target run by another program (`unshare ...`): `p` as spawned;
  // its pid (pid()) is the spawned program's.
  explicit target(spawned p) : p_(p) { wait_ready(); }
  ~target() {
    if (p_.pid > 0) {
      ::kill(p_.pid, SIGKILL);
      ::waitpid(p_.pid, nullptr, 0);
    }
    ::close(p_.in);
    ::close(p_.out);
    ::close(p_.err);
  }
  target(const target&) = delete;
  target& operator=(const target&) = delete;

  pid_t pid() const { return p_.pid; }
  // The line the program started with: "ready <its pid as it sees it>".
  const std::string& ready() const { return ready_; }
  std::string pid_text() const { return std::to_string(p_.pid); }

  // Sends one command line; returns the program's answer line.
  std::string command(const std::string& line) {
    const std::string l = line + "\n";
    if (::write(p_.in, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return "write failed";
    return read_line(p_.out);
  }
  void send_only(const std::string& line) {
    const std::string l = line + "\n";
    [[maybe_unused]] const ssize_t n = ::write(p_.in, l.data(), l.size());
  }
  // Closes stdin (the program returns from main) and reaps it.
  int finish(std::chrono::milliseconds limit = 10s) {
    ::close(p_.in);
    p_.in = -1;
    return reap(limit);
  }
  int reap(std::chrono::milliseconds limit = 10s) {
    const int status = wait_exit(p_.pid, limit);
    if (status >= 0) p_.pid = -1;
    return status;
  }
  // What the program wrote to stderr and was not yet taken by stderr_line(),
  // plus what arrives within 500 ms.
  std::string stderr_text() {
    std::string text = std::move(err_pending_);
    err_pending_.clear();
    return text + read_all(p_.err, 500ms);
  }
  // One line of the program's stderr (without its LF) within `limit`;
  // nullopt on time-out or EOF. A line not complete by then is kept for the
  // next call (or stderr_text()).
  std::optional<std::string> stderr_line(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (const std::size_t at = err_pending_.find('\n'); at != std::string::npos) {
        std::string line = err_pending_.substr(0, at);
        err_pending_.erase(0, at + 1);
        return line;
      }
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0) return std::nullopt;
      pollfd p{p_.err, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 50))) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(p_.err, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      err_pending_.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  void wait_ready() {
    ready_ = read_line(p_.out);
    if (ready_.rfind("ready ", 0) != 0) {
      throw std::runtime_error("control_target did not start: '" + ready_ + "', stderr: " + read_all(p_.err, 1s));
    }
  }

  spawned p_;
  std::string ready_;
  std::string err_pending_;  // stderr read by stderr_line() past the line it returned
};

struct cli_result {
  int status = -1;
  std::string out, err;
};

// Runs the real `arenastat` binary (in `cwd` when given).
inline cli_result run_cli(const std::vector<std::string>& args, const env_map& env, const std::string& cwd = {}) {
  spawned p = spawn(cli_path, args, env, cwd);
  ::close(p.in);
  cli_result r;
  // Read both pipes to EOF (small outputs) then reap.
  std::vector<pollfd> fds{{p.out, POLLIN, 0}, {p.err, POLLIN, 0}};
  const auto until = std::chrono::steady_clock::now() + 20s;
  int open = 2;
  while (open > 0 && std::chrono::steady_clock::now() < until) {
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(p.out);
  ::close(p.err);
  r.status = wait_exit(p.pid, 10s);
  return r;
}

// A raw client of a control socket.
inline int connect_to(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool send_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Sends `request` as-is and returns the whole response (until the server closes).
inline std::string raw_query(const std::string& socket, const std::string& request,
                             std::chrono::milliseconds limit = 10s) {
  const int fd = connect_to(socket);
  if (fd < 0) return "<connect failed>";
  send_all(fd, request);
  std::string answer = read_all(fd, limit);
  ::close(fd);
  return answer;
}

inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

inline mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A Unix socket file at `path` (mode 0600), bound by this process and closed:
// what a process that died leaves behind.
inline bool make_socket_file(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 && ::chmod(path.c_str(), 0600) == 0;
  ::close(fd);
  return ok;
}

// programs/fake_server with `args` (its socket path first, "%p" for its pid), until destroyed.
class fake_server {
 public:
  explicit fake_server(const std::vector<std::string>& args) {
    p_ = spawn(fake_server_path, args, {});
    const std::string ready = read_line(p_.out);
    if (ready.rfind("ready ", 0) != 0) {
      throw std::runtime_error("fake_server did not start: " + read_all(p_.err, 1s));
    }
    pid_ = ready.substr(6);
  }
  ~fake_server() {
    ::close(p_.in);  // it unlinks its socket and exits
    if (wait_exit(p_.pid, 5s) < 0) {
      ::kill(p_.pid, SIGKILL);
      ::waitpid(p_.pid, nullptr, 0);
    }
    ::close(p_.out);
    ::close(p_.err);
  }
  const std::string& pid() const { return pid_; }

 private:
  spawned p_;
  std::string pid_;
};

// A pid that is certainly not running: a child that has exited and been reaped.
inline pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace control_test
