// Summary dumps (dump.hpp): rendering, writing, and the dump-on-signal thread.
#include "arenastat/dump.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <tuple>

#include "control_internal.hpp"

namespace arenastat {
namespace detail {

std::string program_name() {
  char buf[64] = {};
  const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "?";
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return "?";
  std::string name(buf, static_cast<std::size_t>(n));
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name.empty() ? "?" : name;
}

std::string utc_time_string(std::time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

void join_or_detach(std::thread& t, const std::atomic<bool>& finished,
                    std::chrono::milliseconds limit) noexcept {
  if (!t.joinable()) return;
  if (t.get_id() == std::this_thread::get_id()) {
    t.detach();
    return;
  }
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!finished.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (finished.load(std::memory_order_acquire)) {
    t.join();
  } else {
    warn("arenastat: a service thread did not stop in time; leaving it detached\n");
    t.detach();
  }
}

void warn(std::string_view text) noexcept {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

std::string error_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace detail

namespace {

std::int64_t size_of(const entry& e) noexcept {
  return e.kind == entry_kind::account ? e.live_bytes : static_cast<std::int64_t>(e.peak_bytes);
}

std::int64_t count_of(const entry& e) noexcept {
  return e.kind == entry_kind::account ? static_cast<std::int64_t>(e.allocations - e.frees)
                                       : static_cast<std::int64_t>(e.count);
}

// `path` made absolute against the working directory ("." is the directory itself).
std::string absolute(std::string path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "dump: cannot read the working directory");
  }
  if (path.empty() || path == ".") return cwd;
  if (path.starts_with("./")) path.erase(0, 2);
  return std::string(cwd) + "/" + path;
}

// Writes `text` to a new file (exclusive) or to a replaced one.
bool write_file(const std::string& path, const std::string& text, bool exclusive) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    if (exclusive && errno == EEXIST) return false;
    throw std::system_error(errno, std::generic_category(), "dump: cannot create " + path);
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "dump: cannot write " + path);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw std::system_error(errno, std::generic_category(), "dump: cannot write " + path);
  return true;
}

}  // namespace

dump_sort parse_dump_sort(std::string_view text) {
  if (text == "size") return dump_sort::size;
  if (text == "count") return dump_sort::count;
  throw std::invalid_argument("dump sort '" + std::string(text) + "': expected size or count");
}

dump_sort dump_sort_from_env() noexcept {
  const char* v = std::getenv("ARENASTAT_DUMP_SORT");
  return v != nullptr && std::string_view(v) == "count" ? dump_sort::count : dump_sort::size;
}

std::string render_dump(const std::vector<entry>& entries, dump_sort sort, const dump_header& header) {
  std::vector<const entry*> rows;
  rows.reserve(entries.size());
  std::int64_t total_size = 0, total_count = 0;
  for (const entry& e : entries) {
    rows.push_back(&e);
    total_size += size_of(e);
    total_count += count_of(e);
  }
  std::sort(rows.begin(), rows.end(), [sort](const entry* a, const entry* b) {
    const std::int64_t ka = sort == dump_sort::size ? size_of(*a) : count_of(*a);
    const std::int64_t kb = sort == dump_sort::size ? size_of(*b) : count_of(*b);
    if (ka != kb) return ka > kb;
    return std::tie(a->name, a->kind) < std::tie(b->name, b->kind);
  });

  std::string out = "TOTAL size=" + std::to_string(total_size) + " count=" + std::to_string(total_count) +
                    " entries=" + std::to_string(entries.size()) + " pid=" + std::to_string(header.pid) +
                    " program=" + header.program + " time=" + detail::utc_time_string(header.time) +
                    " sort=" + (sort == dump_sort::size ? "size" : "count") + "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%20s %16s %20s  %-7s  %s\n", "size", "count", "peak", "kind", "name");
  out += line;
  for (const entry* e : rows) {
    std::snprintf(line, sizeof line, "%20" PRId64 " %16" PRId64 " %20" PRIu64 "  %-7s  ", size_of(*e),
                  count_of(*e), e->peak_bytes, e->kind == entry_kind::scope ? "scope" : "account");
    out += line;
    out += e->name;
    out += '\n';
  }
  return out;
}

std::string dump_file_name(int pid, std::time_t time) {
  std::tm tm{};
  ::gmtime_r(&time, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  return "arenastat." + std::to_string(pid) + "." + stamp + ".txt";
}

std::string write_dump(std::string_view path, std::optional<dump_sort> sort) {
  const std::time_t now = std::time(nullptr);
  const int pid = static_cast<int>(::getpid());
  const std::string text =
      render_dump(snapshot(), sort.value_or(dump_sort_from_env()), {pid, detail::program_name(), now});
  if (!path.empty()) {
    const std::string target = absolute(std::string(path));
    write_file(target, text, /*exclusive=*/false);
    return target;
  }
  const char* dir_env = std::getenv("ARENASTAT_DUMP_DIR");
  const std::string dir = dir_env != nullptr && *dir_env != '\0' ? std::string(dir_env) : std::string(".");
  const std::string base = absolute(dir) + "/" + dump_file_name(pid, now);
  const std::string stem = base.substr(0, base.size() - 4);  // without ".txt"
  for (int n = 0; n < 1000; ++n) {
    const std::string candidate = n == 0 ? base : stem + "." + std::to_string(n) + ".txt";
    if (write_file(candidate, text, /*exclusive=*/true)) return candidate;
  }
  throw std::system_error(EEXIST, std::generic_category(), "dump: 1000 dumps named " + base + " exist");
}

// ---- dump on a signal ----------------------------------------------------

namespace {

// Eternal: the handler and the thread may run during static destruction.
struct dump_signal_state {
  std::mutex mutex;               // guards everything but the atomics
  int pipe_read = -1, pipe_write = -1;
  int signal_number = 0;
  struct sigaction previous {};
  std::thread thread;
  std::atomic<bool> finished{false};
  bool at_exit_registered = false;
};
dump_signal_state& dump_state() {
  static dump_signal_state* s = new dump_signal_state;
  return *s;
}

// Read by the async-signal handler: plain atomics, no locks.
std::atomic<int> handler_pipe{-1};
std::atomic<pid_t> handler_pid{0};

constexpr char wake_dump = 'd';
constexpr char wake_quit = 'q';

extern "C" void on_dump_signal(int) {
  const int saved = errno;
  // A forked child shares the pipe: its signals must not dump the parent.
  if (::getpid() == handler_pid.load(std::memory_order_relaxed)) {
    const int fd = handler_pipe.load(std::memory_order_relaxed);
    if (fd >= 0) {
      const char byte = wake_dump;
      [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);  // full pipe: a dump is pending anyway
    }
  }
  errno = saved;
}

void dump_thread_main(int fd, std::atomic<bool>* finished) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      detail::warn("arenastat: dump thread: poll failed: " + detail::error_text(errno) + "\n");
      break;
    }
    char bytes[64];
    const ssize_t n = ::read(fd, bytes, sizeof bytes);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    const std::string_view got(bytes, static_cast<std::size_t>(n));
    if (got.find(wake_quit) != std::string_view::npos) break;
    try {
      detail::warn("arenastat: dump written to " + write_dump() + "\n");
    } catch (const std::exception& e) {
      detail::warn(std::string("arenastat: dump on signal failed: ") + e.what() + "\n");
    }
  }
  finished->store(true, std::memory_order_release);
}

}  // namespace

void install_dump_signal(int signal_number) {
  if (signal_number != SIGUSR1 && signal_number != SIGUSR2) {
    throw std::invalid_argument("dump signal " + std::to_string(signal_number) +
                                ": only SIGUSR1 and SIGUSR2 may trigger dumps");
  }
  dump_signal_state& s = dump_state();
  std::lock_guard lock(s.mutex);
  if (s.signal_number == signal_number) return;
  if (s.pipe_read < 0) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::system_error(errno, std::generic_category(), "dump signal: cannot create the wake pipe");
    }
    s.pipe_read = fds[0];
    s.pipe_write = fds[1];
  }
  if (!s.thread.joinable()) {
    s.finished.store(false);
    s.thread = std::thread(dump_thread_main, s.pipe_read, &s.finished);
  }
  if (s.signal_number != 0) ::sigaction(s.signal_number, &s.previous, nullptr);
  handler_pipe.store(s.pipe_write);
  handler_pid.store(::getpid());
  struct sigaction action {};
  action.sa_handler = on_dump_signal;
  ::sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(signal_number, &action, &s.previous) != 0) {
    throw std::system_error(errno, std::generic_category(), "dump signal: cannot install the handler");
  }
  s.signal_number = signal_number;
  if (!s.at_exit_registered) {
    s.at_exit_registered = true;
    std::atexit([] { remove_dump_signal(); });
  }
}

void remove_dump_signal() noexcept {
  dump_signal_state& s = dump_state();
  std::lock_guard lock(s.mutex);
  if (s.signal_number != 0) {
    ::sigaction(s.signal_number, &s.previous, nullptr);
    s.signal_number = 0;
  }
  // After fork() the thread belongs to the parent: leave the shared pipe alone.
  if (s.thread.joinable() && ::getpid() == handler_pid.load()) {
    const char byte = wake_quit;
    [[maybe_unused]] const ssize_t n = ::write(s.pipe_write, &byte, 1);
    detail::join_or_detach(s.thread, s.finished, std::chrono::milliseconds(2000));
    // Drain what is left so a later install starts clean.
    char bytes[64];
    while (::read(s.pipe_read, bytes, sizeof bytes) > 0) {
    }
  }
}

}  // namespace arenastat
