// The CLI's trust rules (trust.hpp).
#include "trust.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

#include "quoted.hpp"
#include "socket_naming.hpp"

namespace arenastat::cli {

std::string error_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::string octal_mode(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string shown_dir(const std::string& dir) { return detail::quoted(dir) + naming::socket_dir_origin(); }

std::string shown_path(const std::string& path) { return detail::quoted(path); }

namespace {

// The failure for an error opening the socket directory (shown as `shown`)
// other than its absence and what is refused as a link or a non-directory.
failure open_dir_failure(int err, const std::string& shown, const expected_owner& owner) {
  if (err == EACCES && ::geteuid() == 0) {
    return {exit_unreachable, "permission denied opening the socket directory " + shown + ", even as root"};
  }
  if (err == EACCES) {
    return {exit_unreachable,
            "permission denied opening the socket directory " + shown + ": run arenastat as " + owner.described + " or as root"};
  }
  if (err == ENOSYS) {
    return {exit_unreachable, "cannot open the socket directory " + shown +
                                  ": openat2 is not available (Linux 5.6 or later is needed to reach a process in "
                                  "another mount namespace)"};
  }
  return {exit_unreachable, "cannot open the socket directory " + shown + ": " + error_text(err)};
}

}  // namespace

std::optional<trusted_dir> trusted_dir::open(const std::string& path, const expected_owner& owner) {
  const std::string what = "refusing socket directory " + shown_dir(path) + ": ";
  if (const std::string problem = naming::socket_dir_problem(path); !problem.empty()) {
    throw failure{exit_refused, what + problem};
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    struct stat st {};
    if (err == ELOOP || (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))) {
      throw failure{exit_refused, what + "it is a symbolic link"};
    }
    if (err == ENOTDIR) throw failure{exit_refused, what + "it is not a directory"};
    throw open_dir_failure(err, shown_dir(path), owner);
  }
  return checked(fd, path, std::nullopt, owner);
}

std::optional<trusted_dir> trusted_dir::open_in_root(int root_fd, const std::string& root_shown,
                                                     const std::string& inside, const std::string& origin,
                                                     const expected_owner& owner) {
  const std::string path = root_shown + inside;
  const std::string what = "refusing socket directory " + shown_path(path) + origin + ": ";
  if (const std::string problem = naming::socket_dir_problem(inside); !problem.empty()) {
    throw failure{exit_refused, what + problem};
  }
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const std::string relative = inside.substr(inside.find_first_not_of('/') == std::string::npos
                                                 ? inside.size()
                                                 : inside.find_first_not_of('/'));
  // EAGAIN: a rename or mount inside raced the confined walk; the kernel asks for a retry.
  int fd = -1;
  for (int attempt = 0; attempt < 16; ++attempt) {
    fd = static_cast<int>(::syscall(SYS_openat2, root_fd, relative.empty() ? "." : relative.c_str(), &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    if (err == ELOOP || err == ENOTDIR) {
      // The last part itself, opened as a path without following it (confined too).
      open_how itself{};
      itself.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
      itself.resolve = how.resolve;
      const int p = static_cast<int>(::syscall(SYS_openat2, root_fd, relative.c_str(), &itself, sizeof itself));
      struct stat st {};
      const bool link = p >= 0 && ::fstat(p, &st) == 0 && S_ISLNK(st.st_mode);
      if (p >= 0) ::close(p);
      if (link) throw failure{exit_refused, what + "it is a symbolic link"};
      if (err == ELOOP) {
        throw failure{exit_refused, what + "the way to it passes a link that is not followed (into /proc, or a "
                                           "loop of links)"};
      }
      throw failure{exit_refused, what + "it is not a directory"};
    }
    throw open_dir_failure(err, shown_path(path) + origin, owner);
  }
  return checked(fd, path, origin, owner);
}

trusted_dir trusted_dir::checked(int fd, std::string path, std::optional<std::string> origin,
                                 const expected_owner& owner) {
  trusted_dir dir(fd, std::move(path));
  dir.origin_ = std::move(origin);
  const std::string what = "refusing socket directory " + dir.shown() + ": ";
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw failure{exit_unreachable, "cannot inspect " + dir.shown() + ": " + error_text(errno)};
  if (st.st_uid != owner.uid) {
    throw failure{exit_refused, what + "it is owned by uid " + std::to_string(st.st_uid) + ", not by " +
                                    owner.described + "; another user may have created it first: remove it, or "
                                    "use another ARENASTAT_SOCKET_DIR"};
  }
  if ((st.st_mode & 077) != 0) {
    throw failure{exit_refused, what + "mode " + octal_mode(st.st_mode) + " is open to group or others (expected 0700)"};
  }
  return dir;
}

trusted_dir::trusted_dir(trusted_dir&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), origin_(std::move(other.origin_)) {
  other.fd_ = -1;
}

trusted_dir& trusted_dir::operator=(trusted_dir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    origin_ = std::move(other.origin_);
    other.fd_ = -1;
  }
  return *this;
}

trusted_dir::~trusted_dir() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Rule 3 on the socket's status (`path`: as messages name it).
void check_socket_status(const struct stat& st, const std::string& path, const expected_owner& owner) {
  const std::string what = "refusing " + path + ": ";
  if (S_ISLNK(st.st_mode)) throw failure{exit_refused, what + "it is a symbolic link, not a socket"};
  if (!S_ISSOCK(st.st_mode)) throw failure{exit_refused, what + "it is not a socket"};
  if (st.st_uid != owner.uid) {
    throw failure{exit_refused,
                  what + "it is owned by uid " + std::to_string(st.st_uid) + ", not by " + owner.described};
  }
  if ((st.st_mode & 077) != 0) {
    throw failure{exit_refused,
                  what + "mode " + octal_mode(st.st_mode) + " is open to group or others (expected 0600); it is not secure"};
  }
}

}  // namespace

bool check_socket(const trusted_dir& dir, const std::string& name, const expected_owner& owner) {
  struct stat st {};
  if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return false;
    throw failure{exit_unreachable, "cannot inspect " + dir.shown_file(name) + ": " + error_text(errno)};
  }
  check_socket_status(st, dir.shown_file(name), owner);
  return true;
}

namespace {

using clock_type = std::chrono::steady_clock;

int milliseconds_until(clock_type::time_point t) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(t - clock_type::now()).count();
  return static_cast<int>(std::max<long long>(left, 0));
}

// The failure for connect()'s error `err` (not EAGAIN or EINPROGRESS).
failure connect_failure(int err, const std::string& shown, long pid) {
  const std::string who = "process " + std::to_string(pid);
  if (err == ECONNREFUSED) {
    return {exit_unreachable, "nobody listens at " + shown + ": " + who +
                                  " has stopped its control server (or the socket is stale); restart it "
                                  "with ARENASTAT_CONTROL=1"};
  }
  if (err == EACCES || err == EPERM) {
    return {exit_unreachable,
            "permission denied connecting to " + shown + ": run arenastat as the user of " + who + " or as root"};
  }
  return {exit_unreachable, "cannot connect to " + shown + ": " + error_text(err)};
}

// A connect() in progress on `fd`: waits for it until `deadline`; returns
// its result (0 or an errno value), or ETIMEDOUT.
int finish_connect(int fd, clock_type::time_point deadline) {
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    const int r = ::poll(&p, 1, milliseconds_until(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
  }
}

}  // namespace

int connect_in(const trusted_dir& dir, const std::string& name, const expected_owner& owner, long pid,
               clock_type::time_point deadline, int timeout_ms) {
  const std::string shown = dir.shown_file(name);
  // The socket's inode, opened without following a link and checked again:
  // the connection goes to it, not to whatever the name leads to by then (a
  // name swapped for a link to another socket after check_socket).
  const fd_guard node{naming::open_node(dir.fd(), name.c_str())};
  if (node.fd < 0) {
    if (errno == ENOENT) throw failure{exit_unreachable, "the socket " + shown + " is gone (its server stopped?); retry"};
    throw failure{exit_unreachable, "cannot open " + shown + ": " + error_text(errno)};
  }
  struct stat st {};
  if (::fstat(node.fd, &st) != 0) throw failure{exit_unreachable, "cannot inspect " + shown + ": " + error_text(errno)};
  check_socket_status(st, shown, owner);
  sockaddr_un a{};
  if (!naming::socket_address_of(node.fd, a)) throw failure{exit_unreachable, "socket name " + name + " is too long"};
  // Non-blocking: a blocking connect() to a full queue waits with no bound.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw failure{exit_unreachable, "socket(): " + error_text(errno)};
  const auto busy_after = std::min(deadline, clock_type::now() + busy_queue_grace);
  for (;;) {
    int err = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
    if (err == EINTR) continue;
    if (err == EINPROGRESS) err = finish_connect(fd, deadline);
    if (err == 0) return fd;
    if (err == EAGAIN && clock_type::now() < busy_after) {  // a full queue: the server may catch up
      std::this_thread::sleep_for(std::min<clock_type::duration>(std::chrono::milliseconds(10),
                                                                 busy_after - clock_type::now()));
      continue;
    }
    ::close(fd);
    if (err == EAGAIN) {
      throw failure{exit_busy, "process " + std::to_string(pid) + " is busy: its connection queue is full; retry later"};
    }
    if (err == ETIMEDOUT) throw no_answer_within(pid, timeout_ms);
    throw connect_failure(err, shown, pid);
  }
}

void check_peer(int fd, const std::string& socket, long pid, const expected_owner& owner) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    throw failure{exit_refused, "refusing the server at " + socket + ": cannot read its credentials (" +
                                    error_text(errno) + ")"};
  }
  if (static_cast<long>(cred.pid) != pid) {
    throw failure{exit_refused, "refusing the server at " + socket + ": it is process " + std::to_string(cred.pid) +
                                    ", not process " + std::to_string(pid)};
  }
  if (cred.uid != owner.uid) {
    throw failure{exit_refused, "refusing the server at " + socket + ": it runs as uid " + std::to_string(cred.uid) +
                                    ", not as " + owner.described};
  }
}

}  // namespace arenastat::cli
