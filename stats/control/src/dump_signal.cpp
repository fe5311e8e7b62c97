// Dump on a signal (control.hpp): a handler that wakes a thread which writes
// the dump (dump.hpp), and the service-thread helper shared with the server.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "arenastat/control.hpp"
#include "arenastat/dump.hpp"
#include "arenastat/prometheus.hpp"
#include "control_internal.hpp"
#include "text_escape.hpp"

namespace arenastat {
namespace detail {

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

}  // namespace detail

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

// A path or message for a warning line: control bytes and bytes outside
// UTF-8 escaped (a path from ARENASTAT_DUMP_DIR may hold ESC or LF), an
// escape already written (detail::quoted's \xNN) and backslashes kept.
std::string one_line(std::string_view text) { return detail::escape_text(text, {.backslash = false}); }

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
      detail::warn("arenastat: dump written to " +
                   one_line(prometheus_dump_from_env() ? write_metrics_file() : write_dump()) + "\n");
    } catch (const std::exception& e) {
      detail::warn("arenastat: dump on signal failed: " + one_line(e.what()) + "\n");
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
