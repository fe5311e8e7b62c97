// Small system helpers shared by the reports and the control layer (sys.hpp).
#include "sys.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>

namespace arenastat::detail {

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

std::string executable_name() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf) return program_name();
  std::string path(buf, static_cast<std::size_t>(n));
  constexpr std::string_view deleted = " (deleted)";  // the file was replaced or removed since exec
  if (path.ends_with(deleted)) path.resize(path.size() - deleted.size());
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.empty() ? program_name() : name;
}

std::string utc_time_string(std::time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
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

namespace {

// Writes all of `text`; when a non-blocking `fd` is full, waits for room as
// long as wait_ms() says (0: not at all). write_all and write_all_until.
template <class WaitMs>
int write_loop(int fd, std::string_view text, WaitMs wait_ms) noexcept {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      int ready;
      do ready = ::poll(&p, 1, wait_ms());
      while (ready < 0 && errno == EINTR);
      if (ready > 0) continue;
      return ready == 0 ? EAGAIN : errno;
    }
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

int write_all(int fd, std::string_view text) noexcept {
  // A non-blocking descriptor (a stderr shared with a program that set
  // O_NONBLOCK): wait until it takes more, at most write_stall_ms each time.
  return write_loop(fd, text, [] { return write_stall_ms; });
}

int write_all_bounded(int fd, std::string_view text, std::chrono::milliseconds stall,
                      std::chrono::steady_clock::time_point deadline) noexcept {
  return write_loop(fd, text, [stall, deadline] {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(std::min(left, stall).count(), 0, 3'600'000));
  });
}

std::string absolute_path(std::string path, std::string_view who) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    throw std::system_error(errno, std::generic_category(), std::string(who) + ": cannot read the working directory");
  }
  if (path.empty() || path == ".") return cwd;
  if (path.starts_with("./")) path.erase(0, 2);
  return std::string(cwd) + "/" + path;
}

std::size_t read_small_file(const char* path, char* buf, std::size_t cap) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t len = 0;
  while (len < cap) {
    const ssize_t n = ::read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return len;
}

std::uint64_t kb_field(std::string_view text, std::string_view key) noexcept {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
    std::uint64_t kb = 0;
    for (std::size_t i = key.size() + 1; i < line.size(); ++i) {
      const char c = line[i];
      if (c >= '0' && c <= '9') kb = kb * 10 + static_cast<std::uint64_t>(c - '0');
      else if (c != ' ' && c != '\t') break;
    }
    return kb * 1024;
  }
  return 0;
}

}  // namespace arenastat::detail
